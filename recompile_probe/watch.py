"""`watch`: run any Python program with the Recorder active from its first import.

The program runs as a child process with its own argv, stdin, stdout, stderr and exit code; a
sitecustomize on PYTHONPATH loads the recorder side (watch_child.py), which chains to any
sitecustomize the environment already had. Ctrl-C goes to the program; this side waits for it
and always reads back what was recorded.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

from . import analysis
from .errors import UsageError
from .model import CompileEvent, FunctionSummary, WatchReport
from .session import environment
from .watch_child import ENV_OUT

SITECUSTOMIZE = '''\
# Written by recompile-probe watch: start its recorder, then run the sitecustomize this
# environment had before (if any), found on the path without this folder.
import importlib.machinery as _m, importlib.util as _u, sys as _s
_s.path.insert(0, {package_parent!r})
try:
    import recompile_probe.watch_child as _w
    _w.install()
except Exception as _e:  # never break the program
    print("recompile-probe: recorder not started:", _e, file=_s.stderr)
finally:
    _s.path.remove({package_parent!r})
_spec = _m.PathFinder.find_spec("sitecustomize", [p for p in _s.path if p != {here!r}])
if _spec is not None and _spec.loader is not None:
    _user = _u.module_from_spec(_spec)
    _spec.loader.exec_module(_user)
'''


def resolve(command: list[str]) -> list[str]:
    """`python ...` and `pytest ...` run with this interpreter (the one that has torch)."""
    if not command:
        raise UsageError("nothing to watch", "e.g. recompile-probe watch -- python train.py")
    head = Path(command[0]).name
    if head in ("python", "python3", f"python{sys.version_info[0]}.{sys.version_info[1]}"):
        return [sys.executable, *command[1:]]
    if head == "pytest":
        return [sys.executable, "-m", "pytest", *command[1:]]
    return command


def run(command: list[str], trace_dir: str | None = None) -> tuple[int, bool, list[dict]]:
    """(exit code, interrupted, recorded lines)."""
    argv = resolve(command)
    with tempfile.TemporaryDirectory(prefix="recompile-probe-watch-") as tmp:
        boot = Path(tmp, "boot")
        boot.mkdir()
        package_parent = str(Path(__file__).resolve().parent.parent)
        (boot / "sitecustomize.py").write_text(SITECUSTOMIZE.format(
            package_parent=package_parent, here=str(boot)))
        out = Path(tmp, "events.jsonl")
        out.touch()
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(
            [str(boot)] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
        env[ENV_OUT] = str(out)
        if trace_dir is not None:
            env["TORCH_TRACE"] = trace_dir
        interrupted = False
        previous = signal.signal(signal.SIGINT, signal.SIG_IGN)  # the program gets Ctrl-C
        try:
            try:
                # The child must not inherit the ignored SIGINT: Python would keep ignoring it.
                proc = subprocess.Popen(argv, env=env, preexec_fn=_default_sigint)
            except FileNotFoundError:
                raise UsageError(f"cannot run {argv[0]!r}: no such program") from None
            code = proc.wait()
        finally:
            signal.signal(signal.SIGINT, previous)
        if code < 0:  # killed by a signal: report it the way a shell would
            interrupted = -code == signal.SIGINT
            code = 128 - code
        elif code == 130:
            interrupted = True
        lines = []
        for raw in out.read_text(encoding="utf-8").splitlines():
            try:
                lines.append(json.loads(raw))
            except json.JSONDecodeError:
                continue  # a line cut short by a kill
    return code, interrupted, lines


def _default_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def report(command: list[str], code: int, interrupted: bool, lines: list[dict],
           pattern: str | None = None) -> WatchReport:
    from . import __version__
    from .model import Tool

    events = [_event(line["event"]) for line in lines if "event" in line]
    final = next((line["final"] for line in lines if "final" in line), None)
    qualnames, entries = {}, {}
    for frame in (final or {}).get("frames", ()):
        key = (frame["function"], frame["filename"], frame["line"])
        qualnames[key] = frame.get("qualname")
        if frame.get("cache_entries") is not None:
            entries[key] = frame["cache_entries"]
    functions = analysis.by_function(events, cache_entries=entries if final else None,
                                     qualnames=qualnames)
    if pattern:
        functions = [f for f in functions if matches(f, pattern)]
    return WatchReport(Tool("recompile-probe", __version__), environment(),
                       " ".join(command), tuple(functions), tuple(events), code, interrupted)


def matches(f: FunctionSummary, pattern: str) -> bool:
    """A glob or a substring of the function's name, its file:line, or its file name."""
    from fnmatch import fnmatchcase

    names = [f.function, f"{f.filename}:{f.line}", Path(f.filename or "").name]
    return any(fnmatchcase(n, pattern) or pattern in n for n in names)


def _event(data: dict) -> CompileEvent:
    fields = {k: v for k, v in data.items() if k in CompileEvent.__dataclass_fields__}
    return CompileEvent(**fields)
