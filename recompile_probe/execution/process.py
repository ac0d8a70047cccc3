"""``--isolate process``: each strategy in a fresh worker process, its sequences one after another.

The worker gets every sequence of its strategy as a job (protocol.py) and writes each finished
run at once; the parent hands each run on as soon as its line is complete, so a crash, a timeout
or a Ctrl-C loses only the runs that had not finished. After a timeout or a crash those become
status ``error``; after Ctrl-C they are left out, as inline mode leaves them out. ``timeout``
limits each strategy, counted from its worker's start, less the time a worker started ahead
waited for its turn.

Where two cores are free, the next strategy's worker starts once the current one has finished its
first run, and loads the target and warms up (nothing of it compiles the target or depends on
the strategy) while the current one goes on; its jobs, and its timed eager reference calls, wait
until the current strategy is done, so runs never overlap. A target that only one process at a
time can load (a lock, a port, an exclusive GPU) is loaded again at its strategy's turn.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import shutil
import tempfile
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

from ..errors import ProbeError
from ..records.report import Environment
from ..records.run import Run, RunError
from ..scenario.model import Scenario
from . import processes, protocol
from .executor import Job, OnRun, OnStart, by_strategy, unfinished
from .processes import POLL_S, Finished, Prepared, Unprepared, WorkerProcess


class ProcessExecutor:
    def __init__(
        self,
        scenario: Scenario,
        timeout: float | None = None,
        trace_dir: str | None = None,
        debug: bool = False,
    ) -> None:
        self.scenario, self.timeout = scenario, timeout
        self.trace_dir, self.debug = trace_dir, debug
        self._environment: Environment | None = None
        self._tmp: str | None = None
        self._tokens = itertools.count()
        self._worker: WorkerProcess | None = None  # the one running now, until its output is read
        #: the next strategy's worker, loading its target while the current one runs, and when
        #: it was started (time.monotonic())
        self._ahead: tuple[str, WorkerProcess, float] | None = None
        #: each scenario object's encoding, made once however many jobs share it (the object is
        #: kept beside it: an id alone could be a later object's)
        self._payloads: dict[int, tuple[Scenario, str]] = {}
        self._on_run: OnRun | None = None

    def environment(self) -> Environment | None:
        return self._environment

    def runs(
        self, jobs: Sequence[Job], on_start: OnStart | None = None, on_run: OnRun | None = None
    ) -> Iterator[Run]:
        self._on_run = on_run
        groups = by_strategy(jobs)
        for index, (strategy, group) in enumerate(groups):
            if on_start:
                on_start(strategy, ", ".join(j.sequence for j in group))
            following = groups[index + 1] if index + 1 < len(groups) and two_cores() else None
            for run in self._strategy(strategy, group, following):
                yield run  # kept by the caller before on_run runs: an interrupt there keeps it
                if on_run:
                    on_run(run)

    def _strategy(
        self, strategy: str, group: list[Job], following: tuple[str, list[Job]] | None
    ) -> Iterator[Run]:
        worker, busy = self._start(strategy, group)
        # the worker's own start and preparation count, not its wait for its turn
        deadline = None if self.timeout is None else time.monotonic() + self.timeout - busy
        failure: RunError | None = None
        done: set[str] = set()
        while True:
            code = worker.proc.poll()  # before reading: once it has exited, one read gets all
            try:
                for run in self._take(worker, done):
                    yield run
                    # once this worker holds the target and has made its timed eager calls
                    if following is not None and self._ahead is None:
                        self._start_ahead(*following)
                        following = None
            except _Unprepared:  # it could not load the target beside the other worker
                worker.stop()
                worker = self._send(self._spawn(strategy), group)
                deadline = None if self.timeout is None else time.monotonic() + self.timeout
                continue
            if code is not None:
                break
            if deadline is not None and time.monotonic() >= deadline:
                failure = RunError(
                    "Timeout",
                    f"the strategy did not finish within {self.timeout:g} s (--timeout)",
                    None,
                )
                break
            time.sleep(POLL_S)
        worker.stop()
        with contextlib.suppress(_Unprepared):
            yield from self._take(worker, done)  # written between the last read and the stop
        self._worker = None
        if failure is None and worker.proc.returncode != 0:
            last = worker.stderr_tail()
            failure = RunError(
                "WorkerCrashed",
                f"worker exited with {worker.proc.returncode}" + (f": {last}" if last else ""),
                None,
            )
        for job in group:
            if job.sequence not in done:
                yield unfinished(job, failure or RunError("WorkerCrashed", "no result", None))

    def interrupted(self) -> list[Run]:
        """After Ctrl-C: stop the running worker and return the runs it finished that were not
        handed over yet. The unfinished ones are left out, as inline mode leaves them out."""
        worker, self._worker = self._worker, None
        try:
            if worker is None:
                return []
            worker.stop()
            runs: list[Run] = []
            with contextlib.suppress(ProbeError, _Unprepared):  # the interrupt wins
                runs.extend(self._take(worker, set()))
        finally:
            self._stop_ahead()
        for run in runs:
            if self._on_run is not None:
                with contextlib.suppress(KeyboardInterrupt):
                    self._on_run(run)
        return runs

    def close(self) -> None:
        worker, self._worker = self._worker, None
        try:
            if worker is not None:
                worker.stop()
        finally:
            try:
                self._stop_ahead()
            finally:
                if self._tmp is not None:
                    shutil.rmtree(self._tmp, ignore_errors=True)
                    self._tmp = None

    def _start(self, strategy: str, group: list[Job]) -> tuple[WorkerProcess, float]:
        """The strategy's worker with its jobs sent (the one started ahead for it, if any), and
        the seconds it spent loading the target before its turn."""
        ahead, self._ahead = self._ahead, None
        if ahead is not None and ahead[0] == strategy:
            worker, started = ahead[1], ahead[2]
            self._worker = worker  # close() stops it whatever happens next
            now, ready_at, failed = time.monotonic(), None, False
            for event in worker.records(worker.stop):
                if isinstance(event, Environment):
                    self._environment = event
                elif isinstance(event, Prepared):
                    ready_at = event.at
                elif isinstance(event, Unprepared):
                    failed = True
            if not failed:  # loaded at ready_at, or still loading
                return self._send(worker, group), max(0.0, min(ready_at or now, now) - started)
        if ahead is not None:
            ahead[1].stop()
        return self._send(self._spawn(strategy), group), 0.0

    def _send(self, worker: WorkerProcess, group: list[Job]) -> WorkerProcess:
        self._worker = worker  # before anything can fail: close() stops it
        for job in group:
            worker.send(
                protocol.job(
                    next(self._tokens),
                    self._payload(job),
                    job.strategy,
                    job.sequence,
                    self.trace_dir,
                    job.cap,
                )
            )
        worker.end_input()  # the worker exits once its strategy's sequences are done
        return worker

    def _start_ahead(self, strategy: str, group: list[Job]) -> None:
        started = time.monotonic()
        try:
            worker = self._spawn(strategy)
        except OSError:  # its turn starts it as any worker starts
            return
        self._ahead = (strategy, worker, started)
        worker.send(protocol.prepare(self._payload(group[0])))

    def _spawn(self, strategy: str) -> WorkerProcess:
        if self._tmp is None:
            self._tmp = tempfile.mkdtemp(prefix="recompile-probe-")
        folder = Path(tempfile.mkdtemp(prefix="strategy-", dir=self._tmp))
        return processes.start(folder, strategy, debug=self.debug)

    def _payload(self, job: Job) -> str:
        kept = self._payloads.get(id(job.scenario))
        if kept is None or kept[0] is not job.scenario:
            kept = self._payloads[id(job.scenario)] = (job.scenario, protocol.encode(job.scenario))
        return kept[1]

    def _stop_ahead(self) -> None:
        ahead, self._ahead = self._ahead, None
        if ahead is not None:
            ahead[1].stop()

    def _take(self, worker: WorkerProcess, done: set[str]) -> Iterator[Run]:
        for event in worker.records(worker.stop):
            if isinstance(event, Environment):
                self._environment = event
            elif isinstance(event, Unprepared):
                raise _Unprepared
            elif isinstance(event, Finished):
                done.add(event.run.sequence_name)
                yield event.run


class _Unprepared(Exception):
    """The worker started ahead could not load the target: its strategy starts again."""


def two_cores() -> bool:
    """Whether a worker can load a target beside the running one without taking its core."""
    try:
        return len(os.sched_getaffinity(0)) >= 2
    except AttributeError:  # no affinity call on this platform
        return (os.cpu_count() or 1) >= 2
