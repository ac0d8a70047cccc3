"""`watch`: run any Python program with the Recorder active from its first import.

The program runs as a child process with its own argv, stdin, stdout, stderr and exit code; a
sitecustomize on PYTHONPATH loads the recorder side (watch_child.py), which chains to any
sitecustomize the environment already had. Ctrl-C goes to the program; this side waits for it
and always reads back what was recorded.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..analysis.functions import by_function, matches
from ..analysis.ranks import divergences, rank_of
from ..errors import UsageError
from ..recording.watch_child import ENV_OUT, STREAM_PREFIX
from ..records.compile_ids import compile_key
from ..records.decode import build
from ..records.environment import current
from ..records.report import Environment, Tool
from ..records.run import CompileEvent
from ..records.watch import FunctionSummary, ProcessSummary, WatchReport
from ..version import __version__

SITECUSTOMIZE = """\
# Written by recompile-probe watch: start its recorder, then run the sitecustomize this
# environment had before (if any), found on the path without this folder.
import importlib.machinery as _m, importlib.util as _u, sys as _s
_s.path.insert(0, {package_parent!r})
try:
    import recompile_probe.recording.watch_child as _w
    _w.install()
except Exception as _e:  # never break the program; say so in the report (or on stderr)
    import json as _j, os as _o
    _msg = "the recorder did not start in pid %d (%s): %s: %s" % (
        _o.getpid(), _s.executable, type(_e).__name__, _e)
    try:
        with open(_o.path.join(_o.environ[{env_out!r}], "{prefix}%d.jsonl" % _o.getpid()),
                  "a") as _f:
            _f.write(_j.dumps({{"warning": _msg}}) + "\\n")
    except Exception:
        print("recompile-probe: " + _msg, file=_s.stderr)
finally:
    _s.path.remove({package_parent!r})
_spec = _m.PathFinder.find_spec("sitecustomize", [p for p in _s.path if p != {here!r}])
if _spec is not None and _spec.loader is not None:
    _user = _u.module_from_spec(_spec)
    _spec.loader.exec_module(_user)
"""


def resolve(command: list[str]) -> list[str]:
    """Bare `python`, `python3`, `pythonX.Y` (this version) and `pytest` run with this interpreter
    (the one that has torch); a path runs as named, whatever its name."""
    if not command:
        raise UsageError("nothing to watch", "e.g. recompile-probe watch -- python train.py")
    head = command[0]
    if head in ("python", "python3", f"python{sys.version_info[0]}.{sys.version_info[1]}"):
        return [sys.executable, *command[1:]]
    if head == "pytest":
        return [sys.executable, "-m", "pytest", *command[1:]]
    return command


@dataclass(frozen=True)
class Outcome:
    """What a watched run left: its exit, and every process's stream (lines in order)."""

    code: int
    interrupted: bool
    pid: int  #: the process watch started
    streams: dict[int, list[dict]] = field(default_factory=dict)

    def warnings(self) -> list[str]:
        """The program's own first, then its descendants', each of those naming its pid."""
        out = []
        for pid in sorted(self.streams, key=lambda p: (p != self.pid, p)):
            for line in self.streams[pid]:
                if "warning" in line:
                    text = str(line["warning"])
                    out.append(
                        text if pid == self.pid or str(pid) in text else f"pid {pid}: {text}"
                    )
        return out


def prepare(folder: Path, env: dict[str, str]) -> Path:
    """Make every Python process started with ``env`` record (the sitecustomize in
    ``folder``/boot); returns the folder their streams go to (read_streams reads it)."""
    boot = folder / "boot"
    boot.mkdir()
    out = folder / "streams"
    out.mkdir()
    package_parent = str(Path(__file__).resolve().parent.parent.parent)
    (boot / "sitecustomize.py").write_text(
        SITECUSTOMIZE.format(
            package_parent=package_parent, here=str(boot), env_out=ENV_OUT, prefix=STREAM_PREFIX
        )
    )
    env["PYTHONPATH"] = os.pathsep.join(
        [str(boot)] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else [])
    )
    env[ENV_OUT] = str(out)
    return out


class Watched:
    """What children_watched saw, once its block is over."""

    report: WatchReport | None = None


@contextlib.contextmanager
def children_watched(label: str) -> Iterator[Watched]:
    """Every Python process started inside the block (ranks from torch.multiprocessing.spawn
    or a torchrun subprocess, spawned workers) records as under watch; ``.report`` holds their
    sections (and the rank comparison) afterwards. This process's own compiles are not in it,
    nor forked children's (they inherit no recorder from a process that has none)."""
    names = ("PYTHONPATH", ENV_OUT)
    saved = {k: os.environ.get(k) for k in names}
    watched = Watched()
    with tempfile.TemporaryDirectory(prefix="recompile-probe-watch-") as tmp:
        env = dict(os.environ)
        out = prepare(Path(tmp), env)
        os.environ.update({k: env[k] for k in names})
        try:
            yield watched
        finally:
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v
            watched.report = report([label], Outcome(0, False, os.getpid(), read_streams(out)))


def run(command: list[str], trace_dir: str | None = None) -> Outcome:
    argv = resolve(command)
    with tempfile.TemporaryDirectory(prefix="recompile-probe-watch-") as tmp:
        env = dict(os.environ)
        out = prepare(Path(tmp), env)
        if trace_dir is not None:
            env["TORCH_TRACE"] = trace_dir
        interrupted = False
        previous = signal.signal(signal.SIGINT, signal.SIG_IGN)  # the program gets Ctrl-C
        try:
            try:
                # The child must not inherit the ignored SIGINT: Python would keep ignoring it.
                proc = subprocess.Popen(argv, env=env, preexec_fn=_default_sigint)
            except (FileNotFoundError, PermissionError) as exc:
                raise UsageError(f"cannot run {argv[0]!r}: {exc.strerror or exc}") from None
            code = proc.wait()
        finally:
            signal.signal(signal.SIGINT, previous)
        if code < 0:  # killed by a signal: report it the way a shell would
            interrupted = -code == signal.SIGINT
            code = 128 - code
        elif code == 130:
            interrupted = True
        return Outcome(code, interrupted, proc.pid, read_streams(out))


def read_streams(folder: Path) -> dict[int, list[dict]]:
    streams: dict[int, list[dict]] = {}
    for path in folder.glob(f"{STREAM_PREFIX}*.jsonl"):
        try:
            pid = int(path.stem[len(STREAM_PREFIX) :])
        except ValueError:
            continue
        lines = []
        for raw in path.read_text(encoding="utf-8", errors="replace").splitlines():
            try:
                lines.append(json.loads(raw))
            except json.JSONDecodeError:
                continue  # a line cut short by a kill
        streams[pid] = lines
    return streams


def _default_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def report(command: list[str], outcome: Outcome, pattern: str | None = None) -> WatchReport:
    processes = [
        _process(pid, lines, pid == outcome.pid, pattern) for pid, lines in outcome.streams.items()
    ]
    if not any(p.main for p in processes):
        # The program itself never imported torch (e.g. a launcher): its section is empty.
        processes.append(
            ProcessSummary(outcome.pid, None, True, None, tuple(command), None, False, False)
        )
    processes.sort(key=lambda p: (not p.main, p.pid))
    main = processes[0]
    ranks = _ranks(processes)
    knobs = [
        k
        for p in ranks.values()
        for k in _final(outcome.streams.get(p.pid, ())).get("collective_knobs") or ()
    ]
    return WatchReport(
        Tool("recompile-probe", __version__),
        _environment(outcome),
        " ".join(command),
        main.functions,
        main.events,
        outcome.code,
        outcome.interrupted,
        processes=tuple(processes),
        rank_divergence=(
            divergences(
                {r: p.functions for r, p in ranks.items()},
                {r: p.events for r, p in ranks.items()},
            )
            if len(ranks) > 1
            else None
        ),
        ranks_compared=tuple(sorted(ranks)) if len(ranks) > 1 else (),
        collective_knobs=tuple(dict.fromkeys(knobs)) if len(ranks) > 1 else None,
    )


def _ranks(processes: list[ProcessSummary]) -> dict[int, ProcessSummary]:
    """Each rank's process. A process a rank started inherits its RANK (an inductor compile
    worker, a subprocess): the rank is the outermost process of that role, the one whose parent
    is not of it."""
    by_pid = {p.pid: p for p in processes}
    out: dict[int, ProcessSummary] = {}
    for p in processes:
        rank = rank_of(p.role)
        parent = by_pid.get(p.ppid) if p.ppid is not None else None
        if rank is None or (parent is not None and rank_of(parent.role) == rank):
            continue
        if rank not in out or (p.events and not out[rank].events):
            out[rank] = p
    return out


def _final(lines: Any) -> dict:
    return next((line["final"] for line in reversed(list(lines)) if "final" in line), None) or {}


def _environment(outcome: Outcome) -> Environment:
    """The watched interpreter's python and torch, as its process saw them (it may be another
    interpreter than this tool's); where it never imported torch, this environment's."""
    header: dict[str, Any] = next(
        (line["process"] for line in outcome.streams.get(outcome.pid, ()) if "process" in line), {}
    )
    return current(torch=header.get("torch"), python=header.get("python"))


def _process(pid: int, lines: list[dict], main: bool, pattern: str | None) -> ProcessSummary:
    headers = [line["process"] for line in lines if "process" in line]
    header = headers[-1] if headers else {}  # after an exec, the same pid's newest program
    events = [_event(line["event"]) for line in lines if "event" in line]
    final = next((line["final"] for line in reversed(lines) if "final" in line), None)
    qualnames, entries = {}, {}
    for frame in (final or {}).get("frames", ()):
        key = (frame["function"], frame["filename"], frame["line"])
        qualnames[key] = frame.get("qualname")
        if frame.get("cache_entries") is not None:
            entries[key] = frame["cache_entries"]
    extras = {
        compile_key(line["event"].get("compile_id"), line["event"].get("resets") or 0): line[
            "extra"
        ]
        for line in lines
        if "event" in line and isinstance(line.get("extra"), dict)
    }
    functions = by_function(
        events, cache_entries=entries if final else None, qualnames=qualnames, extras=extras
    )
    if pattern:
        functions = [f for f in functions if matches(f, pattern)]
    return ProcessSummary(
        pid=pid,
        ppid=header.get("ppid"),
        main=main,
        role=(final or {}).get("role") or header.get("role"),
        argv=tuple(header.get("argv") or ()),
        forked_from=header.get("forked_from"),
        recorder=bool(events) or bool((final or {}).get("recorder", final is not None)),
        exit_recorded=final is not None,
        functions=tuple(functions),
        events=tuple(events),
        warnings=tuple(str(line["warning"]) for line in lines if "warning" in line),
    )


def all_functions(report: WatchReport) -> list[FunctionSummary]:
    """Every process's functions (for budgets over the whole program)."""
    return [f for p in report.processes for f in p.functions] or list(report.functions)


def _event(data: dict) -> CompileEvent:
    return build(CompileEvent, data, "event")
