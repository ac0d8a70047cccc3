"""Where probe runs execute: inline (one process, one torch import) or one process per strategy.

Both executors yield the same ``Run`` records; tests check that their counts agree. In process
mode a worker writes each finished run as one JSON line and the parent hands each line on as soon
as it is complete, so a crash, a timeout or a Ctrl-C loses only the runs that had not finished.
After a timeout or a crash those become status ``error``; after Ctrl-C they are left out, as
inline mode leaves them out.

Each worker leads its own session and process group, and whatever is left of that group when the
worker ends (inductor's compile workers, processes the user's target started) is terminated, so
a timed-out or interrupted strategy leaves nothing running.
"""

from __future__ import annotations

import collections
import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Iterator

from .errors import EagerFailure, ProbeError, ScenarioError, TargetError, UsageError
from .model import Environment, Run, RunError, figureless_run, replace, run_from_dict
from .scenario import Scenario


class InlineExecutor:
    def __init__(self, scenario: Scenario, trace_dir: str | None = None,
                 debug: bool = False) -> None:
        self.scenario, self.trace_dir, self.debug = scenario, trace_dir, debug
        self.target = None
        self.references: dict = {}
        self._quiet_before: bool | None = None

    def prepare(self) -> None:
        from . import probe
        from .targets import loader

        if self.debug:
            self._quiet_before, probe.QUIET_TORCH_LOGS = probe.QUIET_TORCH_LOGS, False
        self.target = loader.load(self.scenario)
        probe.warm_up(self.scenario.backend, self.scenario.backend_mode,
                      dict(self.scenario.backend_options or {}) or None)
        for name, points in self.scenario.points.items():
            self.references[name] = probe.eager_reference(self.target, points,
                                                          self.scenario.repeats)

    def run_strategy(self, strategy: str) -> Iterator[Run]:
        from . import probe

        for name, points in self.scenario.points.items():
            yield probe.probe(self.scenario, self.target, name, points,
                              self.scenario.strategy(strategy), self.references[name],
                              self.trace_dir)

    def environment(self) -> Environment | None:
        return None

    def interrupted(self) -> list[Run]:
        """Finished runs not yet handed over when Ctrl-C came: inline, each is handed at once."""
        return []

    def close(self) -> None:
        if self._quiet_before is not None:
            from . import probe

            probe.QUIET_TORCH_LOGS, self._quiet_before = self._quiet_before, None


_FATAL = {"EagerFailure": EagerFailure, "TargetError": TargetError,
          "ScenarioError": ScenarioError, "UsageError": UsageError}

#: How long a worker's process group gets between SIGTERM and SIGKILL.
GRACE_S = 2.0
#: How often the parent looks for newly finished runs (and at the clock, for --timeout).
POLL_S = 0.05


class _Worker:
    """One strategy's worker process, and how much of its output the parent has consumed."""

    def __init__(self, strategy: str, proc: subprocess.Popen, out: Path, err: Path) -> None:
        self.strategy, self.proc, self.out, self.err = strategy, proc, out, err
        self.out_offset = self.err_offset = 0
        #: complete lines read but not handed over yet: a Ctrl-C between two hand-overs must not
        #: lose the lines read with the first
        self.pending: collections.deque[str] = collections.deque()
        self.done: set[str] = set()  # sequence names whose run was handed over
        self.stopped = False

    def read(self) -> None:
        """Queue the complete lines appended since the last read; a line being written waits."""
        if not self.out.exists():
            return
        with open(self.out, "rb") as handle:
            handle.seek(self.out_offset)
            data = handle.read()
        end = data.rfind(b"\n") + 1
        self.out_offset += end
        self.pending.extend(data[:end].decode("utf-8").splitlines())

    def stderr_tail(self) -> str:
        """The last non-empty line the worker wrote to stderr."""
        text = self.err.read_text(errors="replace") if self.err.exists() else ""
        return next((ln.strip() for ln in reversed(text.splitlines()) if ln.strip()), "")


class ProcessExecutor:
    def __init__(self, scenario: Scenario, overrides: dict, timeout: float | None,
                 trace_dir: str | None = None, debug: bool = False) -> None:
        if scenario.path is None:
            raise UsageError("--isolate process needs the scenario as a file")
        self.scenario, self.overrides, self.timeout = scenario, overrides, timeout
        self.trace_dir, self.debug = trace_dir, debug
        self._environment: Environment | None = None
        self._tmp: str | None = None
        self._worker: _Worker | None = None  # the one running now, until its output is read

    def prepare(self) -> None:
        self._tmp = tempfile.mkdtemp(prefix="recompile-probe-")

    def environment(self) -> Environment | None:
        return self._environment

    def run_strategy(self, strategy: str) -> Iterator[Run]:
        worker = self._start(strategy)
        deadline = None if self.timeout is None else time.monotonic() + self.timeout
        failure: RunError | None = None
        while True:
            code = worker.proc.poll()  # before reading: once it has exited, one read gets all
            yield from self._take(worker)
            if code is not None:
                break
            if deadline is not None and time.monotonic() >= deadline:
                failure = RunError("Timeout", f"the strategy did not finish within "
                                   f"{self.timeout:g} s (--timeout)", None)
                break
            time.sleep(POLL_S)
        self._stop(worker)
        yield from self._take(worker)  # written between the last read and the stop
        self._worker = None
        if failure is None and worker.proc.returncode != 0:
            last = worker.stderr_tail()
            failure = RunError("WorkerCrashed", f"worker exited with {worker.proc.returncode}"
                               + (f": {last}" if last else ""), None)
        for name, sequence in self.scenario.sequences.items():
            if name not in worker.done:
                yield _failed_run(self.scenario, strategy, name, sequence,
                                  failure or RunError("WorkerCrashed", "no result", None))

    def interrupted(self) -> list[Run]:
        """After Ctrl-C: stop the running worker and return the runs it finished that were not
        handed over yet. The unfinished ones are left out, as inline mode leaves them out."""
        worker, self._worker = self._worker, None
        if worker is None:
            return []
        self._stop(worker)
        runs = []
        with contextlib.suppress(ProbeError):  # the interrupt wins over a late fatal error
            runs.extend(self._take(worker))
        return runs

    def close(self) -> None:
        worker, self._worker = self._worker, None
        if worker is not None:
            self._stop(worker)
        if self._tmp is not None:
            shutil.rmtree(self._tmp, ignore_errors=True)
            self._tmp = None

    def _start(self, strategy: str) -> _Worker:
        if self._tmp is None:
            self.prepare()
        folder = Path(tempfile.mkdtemp(prefix="strategy-", dir=self._tmp))
        job, out, err = folder / "job.json", folder / "runs.jsonl", folder / "stderr.txt"
        job.write_text(json.dumps({"path": self.scenario.path, "overrides": self.overrides,
                                   "strategy": strategy, "trace_dir": self.trace_dir,
                                   "debug": self.debug, "parent": os.getpid()}))
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        with open(err, "wb") as err_file:
            # Its own session: the terminal's Ctrl-C reaches only us (we decide what the worker
            # loses), and killpg reaches everything the worker started.
            proc = subprocess.Popen(
                [sys.executable, "-m", "recompile_probe.worker", str(job), str(out)],
                stdin=subprocess.DEVNULL, stdout=err_file, stderr=err_file, env=env,
                start_new_session=True)
        self._worker = _Worker(strategy, proc, out, err)
        return self._worker

    def _take(self, worker: _Worker) -> Iterator[Run]:
        self._relay(worker)
        worker.read()
        while worker.pending:
            record = json.loads(worker.pending.popleft())
            if "fatal" in record:
                # The worker's last act: let it exit on its own (with --debug its traceback is
                # on stderr by then), then relay that and stop whatever it left behind.
                with contextlib.suppress(subprocess.TimeoutExpired):
                    worker.proc.wait(GRACE_S)
                self._stop(worker)
                self._relay(worker)
                fatal = record["fatal"]
                raise _FATAL.get(fatal["type"], ProbeError)(fatal["message"], fatal.get("remedy"))
            if "environment" in record:
                self._environment = Environment(**record["environment"])
                continue
            run = run_from_dict(record["run"])
            worker.done.add(run.sequence_name)
            yield replace(run, isolation="process")

    def _relay(self, worker: _Worker) -> None:
        """With --debug, the worker's stderr (torch's logs, tracebacks) goes to ours, live."""
        if not self.debug or not worker.err.exists():
            return
        with open(worker.err, "rb") as handle:
            handle.seek(worker.err_offset)
            data = handle.read()
        end = len(data) if worker.stopped else data.rfind(b"\n") + 1
        worker.err_offset += end
        for line in data[:end].decode("utf-8", errors="replace").splitlines():
            sys.stderr.write(f"[worker {worker.strategy}] {line}\n")
        sys.stderr.flush()

    @staticmethod
    def _stop(worker: _Worker) -> None:
        if not worker.stopped:
            kill_group(worker.proc)
            worker.stopped = True


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
        fields = stat[stat.rfind(")") + 2:].split()
        if len(fields) > 2 and int(fields[2]) == pgid and fields[0] not in ("Z", "X"):
            return True
    return False


def _failed_run(scenario: Scenario, strategy: str, name: str, sequence: tuple[int, ...],
                error: RunError) -> Run:
    run = figureless_run(scenario.target, name, sequence, strategy, scenario.backend, "error",
                         error, description=scenario.strategy(strategy).description,
                         isolation="process")
    points = scenario.points.get(name, ())
    return replace(run, points=tuple(p.as_dict() for p in points))
