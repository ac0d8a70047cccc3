"""Worker processes: started in a session and process group of their own, their output files
tailed line by line, and stopped with everything they started.

A worker appends one JSON line per record to its output file (protocol.py); the parent reads
only complete lines, so a line being written waits for the next read and a kill loses only the
line in progress. When a worker ends, times out or is interrupted, its whole process group is
stopped (SIGTERM, then SIGKILL after ``GRACE_S``), so inductor's compile workers and processes
the target started do not outlive it.
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
from pathlib import Path

#: How long a worker's process group gets between SIGTERM and SIGKILL.
GRACE_S = 2.0
#: How often the parent looks for newly finished runs (and at the clock, for --timeout).
POLL_S = 0.05


class WorkerProcess:
    """One worker process, and how much of its output the parent has consumed."""

    def __init__(self, label: str, proc: subprocess.Popen, out: Path, err: Path) -> None:
        self.label, self.proc, self.out, self.err = label, proc, out, err
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
        if not self.stopped:
            self.end_input()
            kill_group(self.proc)
            self.stopped = True

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
    lines on its standard input; ``env`` is added to ours, ``job_extra`` to its job file."""
    job, out, err = folder / "job.json", folder / "runs.jsonl", folder / "stderr.txt"
    job.write_text(json.dumps({"debug": debug, "parent": os.getpid(), **(job_extra or {})}))
    env = {**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})}
    with open(err, "wb") as err_file:
        # Its own session: the terminal's Ctrl-C reaches only us (we decide what the worker
        # loses), and killpg reaches everything the worker started.
        proc = subprocess.Popen(
            [sys.executable, "-m", module, str(job), str(out)],
            stdin=subprocess.PIPE,
            stdout=err_file,
            stderr=err_file,
            env=env,
            start_new_session=True,
        )
    return WorkerProcess(label, proc, out, err)


def kill_group(proc: subprocess.Popen, grace: float = GRACE_S) -> None:
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
