"""Where probe runs execute: inline (one process, one torch import), one process per strategy, or
a pool of N reused worker processes (``--jobs N``), one (scenario, strategy, sequence) at a time.

Every executor yields the same ``Run`` records; tests check that their counts agree. In process
mode a worker writes each finished run as one JSON line and the parent hands each line on as soon
as it is complete, so a crash, a timeout or a Ctrl-C loses only the runs that had not finished.
After a timeout or a crash those become status ``error``; after Ctrl-C they are left out, as
inline mode leaves them out.

Each worker leads its own session and process group, and whatever is left of that group when the
worker ends (inductor's compile workers, processes the user's target started) is terminated, so
a timed-out or interrupted strategy leaves nothing running.
"""

from __future__ import annotations

import base64
import collections
import contextlib
import itertools
import json
import os
import pickle
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator

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
        for name in self.scenario.points:
            yield self.run_one(strategy, name)

    def run_one(self, strategy: str, sequence: str, scenario: Scenario | None = None) -> Run:
        """One (strategy, sequence); ``scenario``: one prepared the same way (the same target,
        inputs, sequences and backend) whose strategies may differ, e.g. a candidate's."""
        from . import probe

        scenario = scenario or self.scenario
        return probe.probe(scenario, self.target, sequence, scenario.points[sequence],
                           scenario.strategy(strategy), self.references[sequence],
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


def fatal_error(fatal: dict) -> ProbeError:
    """The worker's fatal error as the class it was raised with, its message kept verbatim."""
    cls = _FATAL.get(fatal["type"], ProbeError)
    error = cls.__new__(cls)  # ScenarioError's own __init__ would prefix the path a second time
    ProbeError.__init__(error, fatal["message"], fatal.get("remedy"))
    if isinstance(error, ScenarioError):
        error.path = error.line = error.key = None
    return error


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
        proc, out, err = _popen_worker(folder, {
            "path": self.scenario.path, "overrides": self.overrides, "strategy": strategy,
            "trace_dir": self.trace_dir, "debug": self.debug}, subprocess.DEVNULL)
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
                raise fatal_error(record["fatal"])
            if "environment" in record:
                self._environment = Environment(**record["environment"])
                continue
            run = run_from_dict(record["run"])
            worker.done.add(run.sequence_name)
            yield replace(run, isolation="process")

    def _relay(self, worker: _Worker) -> None:
        if self.debug:
            relay(worker)

    @staticmethod
    def _stop(worker: _Worker) -> None:
        if not worker.stopped:
            kill_group(worker.proc)
            worker.stopped = True


def relay(worker: _Worker) -> None:
    """With --debug, the worker's stderr (torch's logs, tracebacks) goes to ours, live, each line
    prefixed with the strategy it was running."""
    if not worker.err.exists():
        return
    with open(worker.err, "rb") as handle:
        handle.seek(worker.err_offset)
        data = handle.read()
    end = len(data) if worker.stopped else data.rfind(b"\n") + 1
    worker.err_offset += end
    for line in data[:end].decode("utf-8", errors="replace").splitlines():
        sys.stderr.write(f"[worker {worker.strategy}] {line}\n")
    sys.stderr.flush()


def _popen_worker(folder: Path, config: dict, stdin: int | None) -> tuple[subprocess.Popen, Path,
                                                                          Path]:
    """Start ``python -m recompile_probe.worker`` on a job file; (process, runs file, stderr)."""
    job, out, err = folder / "job.json", folder / "runs.jsonl", folder / "stderr.txt"
    job.write_text(json.dumps({**config, "parent": os.getpid()}))
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    with open(err, "wb") as err_file:
        # Its own session: the terminal's Ctrl-C reaches only us (we decide what the worker
        # loses), and killpg reaches everything the worker started.
        proc = subprocess.Popen(
            [sys.executable, "-m", "recompile_probe.worker", str(job), str(out)],
            stdin=stdin, stdout=err_file, stderr=err_file, env=env, start_new_session=True)
    return proc, out, err


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


# --- a pool of reused workers (--jobs N) ----------------------------------------------------------

@dataclass(frozen=True)
class Job:
    """One run to make: a strategy of a scenario over one of its sequences."""

    scenario: Scenario
    strategy: str  #: a name the scenario knows (built in or custom)
    sequence: str  #: a key of ``scenario.sequences``


@dataclass(frozen=True)
class JobCost:
    """Where one job's time went, as its worker measured it (benchmarks; never in a report)."""

    index: int  #: the job's position in the list handed to ``Pool.run``
    worker: int  #: the worker's pid
    #: the worker's own start (interpreter, torch and the tool imported), for its first job only
    import_s: float | None
    prepare_s: float  #: target loaded, warm-up compile, eager references; 0.0 when kept
    run_s: float  #: the probe: the sequence, the cache entries, the steady state
    wall_s: float  #: from handing the job over to reading its run, as the parent saw it


class _PoolWorker(_Worker):
    """A reused worker: the job it runs now, and the scenarios it holds prepared."""

    def __init__(self, proc: subprocess.Popen, out: Path, err: Path) -> None:
        super().__init__("pool", proc, out, err)
        self.job: int | None = None  #: token of the job running now
        self.deadline: float | None = None
        self.sent_at = 0.0
        self.prepared: list[bytes] = []  #: preparation keys, least recently used first
        self.import_s: float | None = None  #: until its first job reports, then None

    def send(self, record: dict) -> None:
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.write((json.dumps(record) + "\n").encode("utf-8"))
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError):  # it died: its exit is seen at the next poll
            pass


class Pool:
    """N worker processes, each importing torch once and then running jobs one after another.

    A worker is reused after a run that ended ``ok`` or ``unsupported``: each probe starts from
    Dynamo's reset and the tool's own restores (see worker.py). It is replaced by a fresh one
    after a run it did not finish (timeout, crash), after a run with status ``error`` (an
    exception went through Dynamo and the target: nothing vouches for what it left behind) and
    after a fatal error (the scenario could not be prepared). ``timeout`` limits each job,
    counted from handing it over (a fresh worker's start and the scenario's preparation
    included).
    """

    def __init__(self, size: int, *, timeout: float | None = None, debug: bool = False) -> None:
        if size < 1:
            raise UsageError(f"--jobs: expected at least 1 worker, got {size}")
        self.size, self.timeout, self.debug = size, timeout, debug
        self.workers: list[_PoolWorker] = []
        self.environment: Environment | None = None
        self.costs: list[JobCost] = []
        self.started = 0  #: workers started over the pool's life
        self._tmp = tempfile.mkdtemp(prefix="recompile-probe-pool-")
        self._tokens = itertools.count()
        self._batch: Batch | None = None

    def run(self, jobs: list[Job], *, trace_dir: str | None = None,
            on_start: Callable[[str, str], None] | None = None,
            on_run: Callable[[Run], None] | None = None) -> "Batch":
        """The jobs' runs, iterated in the order of ``jobs``; ``on_run`` sees each as it
        finishes, ``on_start`` (strategy, sequence) each as it is handed to a worker."""
        if self._batch is not None and not self._batch.closed:
            raise RuntimeError("one batch at a time per pool")
        self._batch = Batch(self, list(jobs), trace_dir, on_start, on_run)
        return self._batch

    def close(self) -> None:
        if self._batch is not None:
            self._batch.close()
        for worker in self.workers:  # end of input: idle workers exit side by side
            with contextlib.suppress(OSError):
                if worker.proc.stdin is not None:
                    worker.proc.stdin.close()
        for worker in self.workers:
            self._stop(worker)
        self.workers = []
        shutil.rmtree(self._tmp, ignore_errors=True)

    def __enter__(self) -> "Pool":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _start(self) -> _PoolWorker:
        folder = Path(tempfile.mkdtemp(prefix="worker-", dir=self._tmp))
        proc, out, err = _popen_worker(folder, {"serve": True, "debug": self.debug},
                                       subprocess.PIPE)
        worker = _PoolWorker(proc, out, err)
        self.workers.append(worker)
        self.started += 1
        return worker

    def _stop(self, worker: _PoolWorker) -> None:
        if not worker.stopped:
            with contextlib.suppress(OSError):
                if worker.proc.stdin is not None:
                    worker.proc.stdin.close()
            kill_group(worker.proc)
            worker.stopped = True
        if self.debug:
            relay(worker)

    def _retire(self, worker: _PoolWorker) -> None:
        self._stop(worker)
        if worker in self.workers:
            self.workers.remove(worker)


class Batch:
    """One ``Pool.run``: hands jobs to idle workers, reads their runs, yields them in order."""

    def __init__(self, pool: Pool, jobs: list[Job], trace_dir: str | None,
                 on_start: Callable[[str, str], None] | None,
                 on_run: Callable[[Run], None] | None) -> None:
        from .worker import preparation_key

        self.pool, self.jobs, self.trace_dir = pool, jobs, trace_dir
        self.on_start, self.on_run = on_start, on_run
        self.pending: collections.deque[int] = collections.deque(range(len(jobs)))
        self.results: dict[int, Run] = {}  #: finished, not yielded yet
        self._finished: dict[int, Run] = {}
        self.handed: set[int] = set()  #: indexes on_run has seen
        self.next = 0  #: the first index not yielded yet
        self.closed = False
        self._token_index: dict[int, int] = {}
        pickled: dict[int, tuple[str, bytes]] = {}
        self._payload: list[str] = []
        self._key: list[bytes] = []
        for job in jobs:
            if job.sequence not in job.scenario.points:
                raise UsageError(f"{job.scenario.name}: no sequence named {job.sequence!r}")
            if id(job.scenario) not in pickled:
                pickled[id(job.scenario)] = (
                    base64.b64encode(pickle.dumps(job.scenario)).decode("ascii"),
                    preparation_key(job.scenario))
            payload, key = pickled[id(job.scenario)]
            self._payload.append(payload)
            self._key.append(key)

    def __iter__(self) -> Iterator[Run]:
        while self.next < len(self.jobs):
            progressed = self._step()
            while self.next in self.results:
                run = self.results.pop(self.next)
                self.next += 1
                yield run
                progressed = True
            if not progressed and self.next < len(self.jobs):
                time.sleep(POLL_S)
        self.closed = True

    def interrupted(self) -> list[Run]:
        """After Ctrl-C: stop the workers running this batch's jobs and return, in order, every
        run that finished and was not yielded; on_run sees those it had not seen. Unfinished
        runs are left out, as inline mode leaves them out."""
        busy = [w for w in self.pool.workers if w.job in self._token_index]
        self.pending.clear()
        for worker in busy:
            self.pool._stop(worker)
            with contextlib.suppress(ProbeError):  # the interrupt wins over a late fatal error
                self._take(worker, notify=False)
            self.pool._retire(worker)
        runs = [self.results.pop(i) for i in sorted(self.results)]
        for index in sorted(set(self._finished) - self.handed):
            self.handed.add(index)
            if self.on_run is not None:
                with contextlib.suppress(KeyboardInterrupt):
                    self.on_run(self._finished[index])
        self.next = len(self.jobs)
        self.closed = True
        return runs

    def close(self) -> None:
        """Stop whatever still runs one of this batch's jobs; idle workers stay for the next."""
        for worker in [w for w in self.pool.workers if w.job in self._token_index]:
            self.pool._retire(worker)
        self.pending.clear()
        self.closed = True

    # --- the loop ---------------------------------------------------------------------------

    def _step(self) -> bool:
        """Read every worker, settle timeouts and exits, hand out jobs; whether anything moved."""
        before = len(self._finished)
        now = time.monotonic()
        for worker in list(self.pool.workers):
            code = worker.proc.poll()  # before reading: once it has exited, one read gets all
            self._take(worker)
            if code is not None:
                self.pool._stop(worker)
                self._take(worker)
                if worker.job is not None:
                    last = worker.stderr_tail()
                    self._fail(worker, RunError(
                        "WorkerCrashed", f"worker exited with {code}" + (f": {last}" if last
                                                                           else ""), None))
                self.pool._retire(worker)
            elif worker.deadline is not None and now >= worker.deadline:
                self.pool._stop(worker)
                self._take(worker)  # written between the last read and the stop
                if worker.job is not None:
                    self._fail(worker, RunError(
                        "Timeout", f"the run did not finish within {self.pool.timeout:g} s "
                        "(--timeout)", None))
                self.pool._retire(worker)
        self._dispatch()
        return len(self._finished) > before

    def _dispatch(self) -> None:
        pool = self.pool
        while self.pending:
            idle = [w for w in pool.workers if w.job is None]
            if not idle:
                if len(pool.workers) >= pool.size:
                    return
                idle = [pool._start()]
            for worker in idle:
                if not self.pending:
                    return
                # A job of a scenario this worker holds prepared, else the next one in order.
                index = next((i for i in self.pending if self._key[i] in worker.prepared),
                             self.pending[0])
                self.pending.remove(index)
                self._send(worker, index)

    def _send(self, worker: _PoolWorker, index: int) -> None:
        job, token = self.jobs[index], next(self.pool._tokens)
        self._token_index[token] = index
        key = self._key[index]
        if key in worker.prepared:
            worker.prepared.remove(key)
        worker.prepared.append(key)
        from .worker import KEEP_PREPARED

        del worker.prepared[:-KEEP_PREPARED]
        worker.job, worker.strategy = token, job.strategy
        worker.sent_at = time.monotonic()
        worker.deadline = None if self.pool.timeout is None else \
            worker.sent_at + self.pool.timeout
        if self.on_start is not None:
            self.on_start(job.strategy, job.sequence)
        worker.send({"id": token, "scenario": self._payload[index], "strategy": job.strategy,
                     "sequence": job.sequence, "trace_dir": self.trace_dir})

    def _take(self, worker: _PoolWorker, notify: bool = True) -> None:
        if self.pool.debug:
            relay(worker)
        worker.read()
        while worker.pending:
            record = json.loads(worker.pending.popleft())
            if "ready" in record:
                worker.import_s = record["ready"].get("import_s")
                continue
            if "environment" in record:
                if self.pool.environment is None:
                    self.pool.environment = Environment(**record["environment"])
                continue
            index = self._token_index.get(record.get("job"))  # type: ignore[arg-type]
            if "fatal" in record:
                # The worker's last act: let it exit on its own (with --debug its traceback is
                # on stderr by then), then relay that and stop whatever it left behind.
                with contextlib.suppress(subprocess.TimeoutExpired):
                    worker.proc.wait(GRACE_S)
                worker.job = None
                self.pool._retire(worker)
                raise fatal_error(record["fatal"])
            if index is None:  # a job of an earlier batch, stopped since
                continue
            run = replace(run_from_dict(record["run"]), isolation="process")
            cost = record.get("cost") or {}
            self.pool.costs.append(JobCost(
                index, worker.proc.pid, worker.import_s, cost.get("prepare_s", 0.0),
                cost.get("run_s", 0.0), round(time.monotonic() - worker.sent_at, 4)))
            worker.import_s = None
            worker.job = worker.deadline = None
            if run.status == "error":  # replaced: see Pool
                self.pool._retire(worker)
            self._finish(index, run, notify)

    def _fail(self, worker: _PoolWorker, error: RunError) -> None:
        index = self._token_index[worker.job]  # type: ignore[index]
        worker.job = worker.deadline = None
        job = self.jobs[index]
        self._finish(index, _failed_run(job.scenario, job.strategy, job.sequence,
                                        job.scenario.sequences[job.sequence], error), True)

    def _finish(self, index: int, run: Run, notify: bool) -> None:
        self.results[index] = run
        self._finished[index] = run
        if notify:
            self.handed.add(index)  # before the call: Ctrl-C inside it must not hand it twice
            if self.on_run is not None:
                self.on_run(run)
