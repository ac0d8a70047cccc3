"""A distributed scenario (``ranks: N``): N rank processes joined in one process group, each
running every (strategy, sequence) job over its own sizes; a run per job and rank comes back.

Every rank gets every job, in the same order, and waits for the others before each one
(rank_worker.py), so the ranks run a strategy side by side as a real job's ranks run a step.
Runs are handed on in job order, each job's runs rank by rank, as soon as every rank has it.

Nothing may hang: a collective gives up after ``distributed.timeout_s`` inside the ranks (the run
that waited becomes status error), and the parent stops every rank when none has finished a run
for ``stall_s`` (twice that timeout plus a minute, or ``timeout``): their unfinished runs become
status error, type Timeout, with the reason. A rank that cannot prepare the scenario stops them
all and raises its error, as a single worker's does.
"""

from __future__ import annotations

import contextlib
import itertools
import shutil
import socket
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import replace
from pathlib import Path

from ..errors import ProbeError
from ..records.report import Environment
from ..records.run import Run, RunError
from ..scenario.model import Scenario
from . import processes, protocol
from .executor import Job, OnRun, OnStart, by_strategy, unfinished
from .processes import POLL_S, Finished, WorkerProcess

RANK_WORKER = "recompile_probe.execution.rank_worker"
#: what a stalled rank gets on top of twice the collective timeout (a slow first compile)
STALL_MARGIN_S = 60.0


def free_port() -> int:
    """A TCP port free on this host now, for the ranks' rendezvous."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class RankExecutor:
    def __init__(
        self,
        scenario: Scenario,
        timeout: float | None = None,
        trace_dir: str | None = None,
        debug: bool = False,
    ) -> None:
        if not scenario.ranks:
            raise ValueError("RankExecutor runs scenarios with ranks:")
        self.scenario, self.world = scenario, scenario.ranks
        self.stall_s = (
            timeout if timeout is not None else 2 * scenario.distributed_timeout_s + STALL_MARGIN_S
        )
        self.trace_dir, self.debug = trace_dir, debug
        self._environment: Environment | None = None
        self._tmp: str | None = None
        self._workers: list[WorkerProcess] = []
        #: (strategy, sequence, rank) -> the run, read but not handed on yet
        self._done: dict[tuple[str, str, int], Run] = {}
        self._on_run: OnRun | None = None

    def environment(self) -> Environment | None:
        return self._environment

    def runs(
        self, jobs: Sequence[Job], on_start: OnStart | None = None, on_run: OnRun | None = None
    ) -> Iterator[Run]:
        self._on_run = on_run
        self._start(jobs)
        last_progress = time.monotonic()
        failure: RunError | None = None
        for strategy, group in by_strategy(jobs):
            if on_start:
                on_start(strategy, ", ".join(j.sequence for j in group))
            for job in group:
                for rank in range(self.world):
                    key = (job.strategy, job.sequence, rank)
                    while failure is None and key not in self._done:
                        if self._read():
                            last_progress = time.monotonic()
                            continue
                        failure = self._failure(last_progress)
                        if failure is None:
                            time.sleep(POLL_S)
                    run = self._done.pop(key, None)
                    if run is None:
                        run = self._unfinished(job, rank, failure)
                    yield run  # kept by the caller before on_run runs
                    if on_run:
                        on_run(run)
        self._stop_all()

    def _failure(self, last_progress: float) -> RunError | None:
        """Why the ranks will not finish (a rank crashed, or none made progress); None: wait."""
        for rank, worker in enumerate(self._workers):
            code = worker.proc.poll()
            if code is not None and code != 0:
                self._read()
                last = worker.stderr_tail()
                self._stop_all()
                return RunError(
                    "WorkerCrashed",
                    f"rank {rank} exited with {code}" + (f": {last}" if last else ""),
                    None,
                )
        if all(w.proc.poll() is not None for w in self._workers):
            self._read()
            self._stop_all()
            return RunError("WorkerCrashed", "the ranks exited without this run", None)
        if time.monotonic() - last_progress > self.stall_s:
            self._stop_all()
            return RunError(
                "Timeout",
                f"no rank finished a run for {self.stall_s:g} s: a rank waits on a collective "
                "another rank never joined (ranks that compile differently), or a compile "
                "takes longer than distributed.timeout_s allows; every rank was stopped",
                None,
            )
        return None

    def _unfinished(self, job: Job, rank: int, failure: RunError | None) -> Run:
        mine = Job(job.scenario.for_rank(rank), job.strategy, job.sequence)
        error = failure or RunError("WorkerCrashed", "no result", None)
        return replace(unfinished(mine, error), rank=rank)

    def _start(self, jobs: Sequence[Job]) -> None:
        self._tmp = tempfile.mkdtemp(prefix="recompile-probe-ranks-")
        port = free_port()
        tokens = itertools.count()
        ids = [next(tokens) for _ in jobs]
        for rank in range(self.world):
            folder = Path(self._tmp, f"rank-{rank}")
            folder.mkdir()
            env = {
                "RANK": str(rank),
                "LOCAL_RANK": str(rank),
                "WORLD_SIZE": str(self.world),
                "LOCAL_WORLD_SIZE": str(self.world),
                "MASTER_ADDR": "127.0.0.1",
                "MASTER_PORT": str(port),
            }
            worker = processes.start(
                folder,
                f"rank {rank}",
                debug=self.debug,
                module=RANK_WORKER,
                env=env,
                job_extra={
                    "backend": self.scenario.distributed_backend,
                    "timeout_s": self.scenario.distributed_timeout_s,
                },
            )
            payload: dict[int, str] = {}
            for token, job in zip(ids, jobs):
                if id(job.scenario) not in payload:
                    payload[id(job.scenario)] = protocol.encode(job.scenario.for_rank(rank))
                worker.send(
                    protocol.job(
                        token,
                        payload[id(job.scenario)],
                        job.strategy,
                        job.sequence,
                        self._trace_dir(rank),
                    )
                )
            worker.end_input()  # each rank exits once it has run every job
            self._workers.append(worker)

    def _trace_dir(self, rank: int) -> str | None:
        return None if self.trace_dir is None else str(Path(self.trace_dir, f"rank-{rank}"))

    def _read(self) -> bool:
        """Take every complete record the ranks wrote; True when a run came in."""
        got = False
        for rank, worker in enumerate(self._workers):
            try:
                for event in worker.records(self._stop_all):
                    if isinstance(event, Environment):
                        if self._environment is None:
                            self._environment = event
                    elif isinstance(event, Finished):
                        run = replace(event.run, rank=rank)
                        self._done[(run.strategy, run.sequence_name, rank)] = run
                        got = True
            except ProbeError as error:  # its fatal record: say which rank could not prepare
                if not error.message.startswith("rank "):
                    error.message = f"rank {rank}: {error.message}"
                raise
        return got

    def _stop_all(self) -> None:
        for worker in self._workers:
            worker.stop()

    def interrupted(self) -> list[Run]:
        """After Ctrl-C: every rank stopped; the runs they finished and were not handed on."""
        self._stop_all()
        with contextlib.suppress(ProbeError):
            self._read()
        runs = list(self._done.values())
        self._done.clear()
        for run in runs:
            if self._on_run is not None:
                with contextlib.suppress(KeyboardInterrupt):
                    self._on_run(run)
        return runs

    def close(self) -> None:
        self._stop_all()
        self._workers = []
        if self._tmp is not None:
            shutil.rmtree(self._tmp, ignore_errors=True)
            self._tmp = None
