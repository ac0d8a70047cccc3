"""Where runs execute, behind one interface: inline (this process), one process per strategy
(``--isolate process``) or a pool of reused worker processes (``--jobs N``).

Every executor yields the same ``Run`` records for the same jobs (the tests hold them to it);
``on_run`` sees each as it finishes (inline and per strategy: right after the caller has it, so an
interrupt raised by ``on_run`` loses nothing). After Ctrl-C, ``interrupted`` hands over the runs
that finished and were not yielded yet (unfinished ones are left out, in every mode). ``close``
leaves nothing running that an executor started.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from typing import Protocol

from ..records.report import Environment
from ..records.run import Run, RunError, figureless_run
from ..scenario.model import Scenario

OnStart = Callable[[str, str], None]  #: (strategy, sequence or sequences) as a job starts
OnRun = Callable[[Run], None]  #: a run as it finishes


@dataclass(frozen=True)
class Job:
    """One run to make: a strategy of a scenario over one of its sequences."""

    scenario: Scenario
    strategy: str  #: a name the scenario knows (built in or custom)
    sequence: str  #: a key of ``scenario.points``
    #: stop the sequence once its compiles pass this many (probe.run.probe's ``cap``)
    cap: int | None = None


def scenario_jobs(scenario: Scenario) -> list[Job]:
    """Every (strategy, sequence) of the scenario, strategy by strategy (as one process runs
    them; reports order them sequence-major: records/order.py)."""
    return [
        Job(scenario, strategy, sequence)
        for strategy in scenario.strategies
        for sequence in scenario.points
    ]


class Executor(Protocol):
    def runs(
        self, jobs: Sequence[Job], on_start: OnStart | None = None, on_run: OnRun | None = None
    ) -> Iterator[Run]:
        """The jobs' runs as they finish; a scenario that cannot be prepared raises its
        ProbeError."""

    def interrupted(self) -> list[Run]:
        """After Ctrl-C: the finished runs not yielded yet (``on_run`` has seen them)."""

    def environment(self) -> Environment | None:
        """Where the runs ran: inline, this process as the runs left it (the tool's patches
        undone); else what the workers reported (None: none did)."""

    def close(self) -> None:
        """Stop whatever the executor started."""


def unfinished(job: Job, error: RunError, isolation: str = "process") -> Run:
    """The run of a job that did not finish (a timeout, a crashed worker): status error."""
    scenario = job.scenario
    run = figureless_run(
        scenario.target,
        job.sequence,
        scenario.sequences[job.sequence],
        job.strategy,
        scenario.backend,
        "error",
        error,
        description=scenario.strategy(job.strategy).description,
        isolation=isolation,
    )
    return replace(run, points=tuple(p.to_dict() for p in scenario.points.get(job.sequence, ())))


def by_strategy(jobs: Sequence[Job]) -> list[tuple[str, list[Job]]]:
    """Jobs grouped by strategy, in first-seen order (a strategy's sequences run together)."""
    groups: dict[str, list[Job]] = {}
    for job in jobs:
        groups.setdefault(job.strategy, []).append(job)
    return list(groups.items())
