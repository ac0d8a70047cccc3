"""Worker processes: started in a session and process group of their own, their output files
tailed line by line, and stopped with everything they started.

A worker appends one JSON line per record to its output file (protocol.py); the parent reads
only complete lines, so a line being written waits for the next read and a kill loses only the
line in progress, and ``WorkerProcess.records`` decodes them for every executor alike. When a
worker ends, times out or is interrupted, its whole process group is stopped (SIGTERM, then
SIGKILL after ``GRACE_S``), so inductor's compile workers and processes the target started do
not outlive it; ``bind_to_parent`` is the worker's own side of that.
"""

from __future__ import annotations

import collections
import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Union

from ..records.report import Environment, run_from_dict
from ..records.run import Run
from . import protocol

if TYPE_CHECKING:
    from . import warm

#: A worker: a fresh interpreter, or one forked from the warm server (warm.Forked)
Handle = Union["subprocess.Popen[bytes]", "warm.Forked"]
#: How long a worker's process group gets between SIGTERM and SIGKILL.
GRACE_S = 2.0
#: How often the parent looks for newly finished runs (and at the clock, for --timeout).
POLL_S = 0.01


@dataclass(frozen=True)
class Ready:
    import_s: float | None  #: the worker's start: interpreter, torch and the tool imported


@dataclass(frozen=True)
class Prepared:
    """A preparation asked ahead of the jobs is done, at ``at`` (time.monotonic())."""

    at: float


@dataclass(frozen=True)
class Unprepared:
    """The preparation asked ahead failed: the worker runs none of its jobs and exits."""


@dataclass(frozen=True)
class Finished:
    """A finished run (``isolation="process"``), the token of its job, where its time went."""

    job: int | None
    run: Run
    prepare_s: float
    run_s: float


class WorkerProcess:
    """One worker process, and how much of its output the parent has consumed. ``debug``: its
    stderr is relayed to ours at every read and stop (--debug)."""

    def __init__(self, label: str, proc: Handle, out: Path, err: Path, debug: bool = False) -> None:
        self.label, self.proc, self.out, self.err, self.debug = label, proc, out, err, debug
        self.out_offset = self.err_offset = 0
        #: complete records read but not handed over yet: a Ctrl-C between two hand-overs must
        #: not lose the records read with the first
        self.pending: collections.deque[dict] = collections.deque()
        self.stopped = False

    def read(self) -> None:
        """Queue the complete records appended since the last read; a line being written waits."""
        if not self.out.exists():
            return
        with open(self.out, "rb") as handle:
            handle.seek(self.out_offset)
            data = handle.read()
        end = data.rfind(b"\n") + 1
        self.out_offset += end
        self.pending.extend(
            json.loads(line) for line in data[:end].decode("utf-8").splitlines() if line.strip()
        )

    def records(
        self, stop: Callable[[], None]
    ) -> Iterator[Ready | Environment | Finished | Prepared | Unprepared]:
        """The records written since the last call, decoded, one at a time: one the caller has
        not taken yet stays pending for the next call. A fatal record is the worker's last act:
        it gets ``GRACE_S`` to exit on its own (with --debug its traceback is on stderr by
        then), ``stop`` then stops whatever it left behind (and whatever else the caller must
        stop with it), and the record's error is raised."""
        if self.debug:
            self.relay()
        self.read()
        while self.pending:
            record = self.pending.popleft()
            if "fatal" in record:
                with contextlib.suppress(subprocess.TimeoutExpired):
                    self.proc.wait(GRACE_S)
                stop()
                raise protocol.fatal_error(record)
            if "ready" in record:
                yield Ready(record["ready"].get("import_s"))
            elif "prepared" in record:
                yield Prepared(record["prepared"]["at"])
            elif "unprepared" in record:
                yield Unprepared()
            elif "environment" in record:
                yield Environment(**record["environment"])
            elif "run" in record:
                cost = record.get("cost") or {}
                yield Finished(
                    record.get("job"),
                    replace(run_from_dict(record["run"]), isolation="process"),
                    cost.get("prepare_s", 0.0),
                    cost.get("run_s", 0.0),
                )

    def send(self, record: dict) -> None:
        """One job line on the worker's standard input (its private job stream)."""
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.write((json.dumps(record) + "\n").encode("utf-8"))
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError):  # it died: its exit is seen at the next poll
            pass

    def end_input(self) -> None:
        """No more jobs: the worker exits once it has run the ones it has."""
        with contextlib.suppress(OSError):
            if self.proc.stdin is not None:
                self.proc.stdin.close()

    def stop(self) -> None:
        """Stop its process group (once), and relay what it had left on stderr (--debug)."""
        if not self.stopped:
            self.end_input()
            kill_group(self.proc)
            self.stopped = True
        if self.debug:
            self.relay()

    def stderr_tail(self) -> str:
        """The last non-empty line the worker wrote to stderr."""
        text = self.err.read_text(errors="replace") if self.err.exists() else ""
        return next((ln.strip() for ln in reversed(text.splitlines()) if ln.strip()), "")

    def relay(self) -> None:
        """With --debug, the worker's stderr (torch's logs, tracebacks) goes to ours, live, each
        line prefixed with what the worker was running."""
        if not self.err.exists():
            return
        with open(self.err, "rb") as handle:
            handle.seek(self.err_offset)
            data = handle.read()
        end = len(data) if self.stopped else data.rfind(b"\n") + 1
        self.err_offset += end
        for line in data[:end].decode("utf-8", errors="replace").splitlines():
            sys.stderr.write(f"[worker {self.label}] {line}\n")
        sys.stderr.flush()


def start(
    folder: Path,
    label: str,
    *,
    debug: bool = False,
    module: str = "recompile_probe.execution.worker",
    env: dict[str, str] | None = None,
    job_extra: dict | None = None,
) -> WorkerProcess:
    """Start ``python -m recompile_probe.execution.worker`` (or ``module``, which speaks the same
    protocol) in ``folder`` (its job file, output records and stderr live there), ready for job
    lines on its standard input; ``env`` is added to ours, ``job_extra`` to its job file. It is
    forked from this command's warm server where that gives what a fresh interpreter would
    (warm.py), else it is one; its job file says which (``start``), and why not forked."""
    from . import warm

    job, out, err = folder / "job.json", folder / "runs.jsonl", folder / "stderr.txt"
    env = {**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})}
    why = warm.why_not(env)
    server = warm.server() if why is None else None
    if why is None and server is None:
        why = warm.why_not(env)
    args = [str(job), str(out)]

    def job_file(parent: int, how: str) -> None:
        job.write_text(
            json.dumps({"debug": debug, "parent": parent, "start": how, **(job_extra or {})})
        )

    if server is not None:
        job_file(server.proc.pid, warm.FORKED_WORDS)  # a forked worker's parent is the server
        try:
            return WorkerProcess(label, server.start(module, args, env, err), out, err, debug)
        except OSError as exc:
            why = f"the warm server could not fork it ({exc})"
            warm.give_up(why)
    job_file(os.getpid(), f"fresh interpreter: {why}")
    with open(err, "wb") as err_file:
        # Its own session: the terminal's Ctrl-C reaches only us (we decide what the worker
        # loses), and killpg reaches everything the worker started.
        proc = subprocess.Popen(
            [sys.executable, "-m", module, *args],
            stdin=subprocess.PIPE,
            stdout=err_file,
            stderr=err_file,
            env=env,
            start_new_session=True,
        )
    return WorkerProcess(label, proc, out, err, debug)


def bind_to_parent(parent: int | None) -> None:
    """In a worker, first: a SIGTERM (the parent stopping it, or the parent's death, which Linux
    signals: it leads its own session, so no terminal signal reaches it) ends what it started
    too (inductor's compile workers, the target's own children)."""
    if hasattr(os, "killpg") and os.getpgrp() == os.getpid():  # never signal a caller's group

        def forward(signum: int, frame: object) -> None:
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            os.killpg(os.getpgrp(), signal.SIGTERM)  # ourselves included, by the default action

        signal.signal(signal.SIGTERM, forward)
    if not sys.platform.startswith("linux") or parent is None:
        return
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        return
    if os.getppid() != parent:  # it died before prctl took effect
        os._exit(1)


def kill_group(proc: Handle, grace: float = GRACE_S) -> None:
    """SIGTERM the process group ``proc`` leads, SIGKILL whatever is left after ``grace``
    seconds, and reap ``proc``. Its members may have outlived it (orphans keep the group)."""
    if not hasattr(os, "killpg"):  # no process groups (Windows): the worker alone
        if proc.poll() is None:
            proc.kill()
        proc.wait()
        return
    pgid = proc.pid
    try:
        os.killpg(pgid, signal.SIGTERM)
    except (ProcessLookupError, PermissionError):  # nothing left in it
        proc.wait()
        return
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        if proc.poll() is not None and not group_alive(pgid):
            break
        time.sleep(POLL_S)
    else:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pgid, signal.SIGKILL)
    proc.wait()


def group_alive(pgid: int) -> bool:
    """Whether a process of the group is still running (zombies awaiting a reaper are not)."""
    proc_fs = Path("/proc")
    if not proc_fs.is_dir():
        try:
            os.killpg(pgid, 0)
        except (ProcessLookupError, PermissionError):
            return False
        return True
    for entry in proc_fs.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:  # exited meanwhile, or not ours to read
            continue
        # "pid (comm) state ppid pgrp ...": comm may hold spaces and parentheses
        fields = stat[stat.rfind(")") + 2 :].split()
        if len(fields) > 2 and int(fields[2]) == pgid and fields[0] not in ("Z", "X"):
            return True
    return False
