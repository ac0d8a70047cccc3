"""``--jobs N``: a pool of reused worker processes, one (scenario, strategy, sequence) job at a
time each (protocol.py). A worker imports torch once and prepares each scenario once; every run
starts from the same reset inline mode uses between strategies.
"""

from __future__ import annotations

import collections
import contextlib
import itertools
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..errors import ProbeError, UsageError
from ..records.report import Environment
from ..records.run import Run, RunError
from . import processes, protocol
from .executor import Job, OnRun, OnStart, unfinished
from .processes import POLL_S, Finished, Ready, WorkerProcess


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


class _PoolWorker(WorkerProcess):
    """A reused worker: the job it runs now, and the scenarios it holds prepared."""

    def __init__(self, worker: WorkerProcess) -> None:
        super().__init__("pool", worker.proc, worker.out, worker.err, worker.debug)
        self.job: int | None = None  #: token of the job running now
        self.deadline: float | None = None
        self.sent_at = 0.0
        self.prepared: list[bytes] = []  #: preparation keys, least recently used first
        self.import_s: float | None = None  #: until its first job reports, then None


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

    def run(
        self,
        jobs: list[Job],
        *,
        trace_dir: str | None = None,
        on_start: Callable[[str, str], None] | None = None,
        on_run: Callable[[Run], None] | None = None,
    ) -> Batch:
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
            worker.end_input()
        for worker in self.workers:
            worker.stop()
        self.workers = []
        shutil.rmtree(self._tmp, ignore_errors=True)

    def __enter__(self) -> Pool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _start(self) -> _PoolWorker:
        folder = Path(tempfile.mkdtemp(prefix="worker-", dir=self._tmp))
        worker = _PoolWorker(processes.start(folder, "pool", debug=self.debug))
        self.workers.append(worker)
        self.started += 1
        return worker

    def _retire(self, worker: _PoolWorker) -> None:
        worker.stop()
        if worker in self.workers:
            self.workers.remove(worker)


class Batch:
    """One ``Pool.run``: hands jobs to idle workers, reads their runs, yields them in order."""

    def __init__(
        self,
        pool: Pool,
        jobs: list[Job],
        trace_dir: str | None,
        on_start: Callable[[str, str], None] | None,
        on_run: Callable[[Run], None] | None,
    ) -> None:
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
                    protocol.encode(job.scenario),
                    protocol.preparation_key(job.scenario),
                )
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
            worker.stop()
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
                worker.stop()
                self._take(worker)
                if worker.job is not None:
                    last = worker.stderr_tail()
                    self._fail(
                        worker,
                        RunError(
                            "WorkerCrashed",
                            f"worker exited with {code}" + (f": {last}" if last else ""),
                            None,
                        ),
                    )
                self.pool._retire(worker)
            elif worker.deadline is not None and now >= worker.deadline:
                worker.stop()
                self._take(worker)  # written between the last read and the stop
                if worker.job is not None:
                    self._fail(
                        worker,
                        RunError(
                            "Timeout",
                            f"the run did not finish within {self.pool.timeout:g} s (--timeout)",
                            None,
                        ),
                    )
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
                index = next(
                    (i for i in self.pending if self._key[i] in worker.prepared), self.pending[0]
                )
                self.pending.remove(index)
                self._send(worker, index)

    def _send(self, worker: _PoolWorker, index: int) -> None:
        job, token = self.jobs[index], next(self.pool._tokens)
        self._token_index[token] = index
        key = self._key[index]
        if key in worker.prepared:
            worker.prepared.remove(key)
        worker.prepared.append(key)
        del worker.prepared[: -protocol.KEEP_PREPARED]
        worker.job, worker.label = token, job.strategy
        worker.sent_at = time.monotonic()
        worker.deadline = None if self.pool.timeout is None else worker.sent_at + self.pool.timeout
        if self.on_start is not None:
            self.on_start(job.strategy, job.sequence)
        worker.send(
            protocol.job(
                token, self._payload[index], job.strategy, job.sequence, self.trace_dir, job.cap
            )
        )

    def _take(self, worker: _PoolWorker, notify: bool = True) -> None:
        for event in worker.records(lambda: self.pool._retire(worker)):
            if isinstance(event, Ready):
                worker.import_s = event.import_s
            elif isinstance(event, Environment):
                self.pool.environment = event  # the latest
            elif isinstance(event, Finished):  # a pool's workers are never asked to prepare ahead
                index = self._token_index.get(event.job)  # type: ignore[arg-type]
                if index is None:  # a job of an earlier batch, stopped since
                    continue
                self.pool.costs.append(
                    JobCost(
                        index,
                        worker.proc.pid,
                        worker.import_s,
                        event.prepare_s,
                        event.run_s,
                        round(time.monotonic() - worker.sent_at, 4),
                    )
                )
                worker.import_s = None
                worker.job = worker.deadline = None
                if event.run.status == "error":  # replaced: see Pool
                    self.pool._retire(worker)
                self._finish(index, event.run, notify)

    def _fail(self, worker: _PoolWorker, error: RunError) -> None:
        index = self._token_index[worker.job]  # type: ignore[index]
        worker.job = worker.deadline = None
        self._finish(index, unfinished(self.jobs[index], error), True)

    def _finish(self, index: int, run: Run, notify: bool) -> None:
        self.results[index] = run
        self._finished[index] = run
        if notify:
            self.handed.add(index)  # before the call: Ctrl-C inside it must not hand it twice
            if self.on_run is not None:
                self.on_run(run)


class PoolExecutor:
    """A pool behind the Executor interface (executor.py): its own, or one shared between
    scenarios (``check --jobs N``), which it leaves open."""

    def __init__(self, pool: Pool, *, own: bool, trace_dir: str | None = None) -> None:
        self.pool, self.own, self.trace_dir = pool, own, trace_dir
        self._batch: Batch | None = None

    def runs(
        self, jobs: Sequence[Job], on_start: OnStart | None = None, on_run: OnRun | None = None
    ) -> Iterator[Run]:
        self._batch = self.pool.run(
            list(jobs), trace_dir=self.trace_dir, on_start=on_start, on_run=on_run
        )
        yield from self._batch

    def interrupted(self) -> list[Run]:
        return self._batch.interrupted() if self._batch is not None else []

    def environment(self) -> Environment | None:
        return self.pool.environment

    def close(self) -> None:
        if self._batch is not None:
            self._batch.close()
        if self.own:
            self.pool.close()
