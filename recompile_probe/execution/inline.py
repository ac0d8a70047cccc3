"""Runs in this process, one after another: one torch import, one warm-up compile, the eager
references computed once per sequence; every run starts from the probe's own reset."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from ..probe.eager import EagerReference, eager_reference
from ..probe.run import probe, warm_up
from ..probe.state import ProgramState, roots_of, state_note
from ..records.report import Environment
from ..records.run import Run
from ..scenario.model import Scenario
from ..sizes.points import Point
from ..strategies.model import Strategy
from ..targets import loader
from ..targets.loader import LoadedTarget
from .executor import Job, OnRun, OnStart, by_strategy


class Prepared:
    """A scenario ready to probe: its target loaded, the warm-up done, the eager references."""

    def __init__(
        self,
        scenario: Scenario,
        debug: bool = False,
        sequences: Mapping[str, tuple[Point, ...]] | None = None,
    ) -> None:
        """``sequences``: those whose eager references are computed now (all of the scenario's
        by default; any other on first use)."""
        self.scenario, self.debug = scenario, debug
        self.target: LoadedTarget = loader.load(scenario)
        # as the program is before its first call: every reference and run starts from it
        self.state = ProgramState(roots_of(scenario.target, self.target.fn, self.target.driver))
        warm_up(
            scenario.backend, scenario.backend_mode, dict(scenario.backend_options or {}) or None
        )
        # a rank of a distributed scenario calls every point, as its peers' collectives expect
        self.every_call = bool(scenario.ranks)
        self.references: dict[tuple, EagerReference] = {}
        self.complete(scenario.points if sequences is None else sequences)

    def complete(self, sequences: Mapping[str, tuple[Point, ...]] | None = None) -> None:
        """The eager references of ``sequences`` (every sequence of the scenario by default) not
        computed yet, in their order, as preparing with them computes them."""
        for name, points in (self.scenario.points if sequences is None else sequences).items():
            if (name, ()) not in self.references:
                self.references[(name, ())] = self._reference(points, self.scenario.repeats, None)

    def _reference(self, points: Any, repeats: int, options: Any) -> EagerReference:
        self.state.restore()
        ref = eager_reference(self.target, points, repeats, options, every_call=self.every_call)
        ref.notes = tuple(filter(None, [state_note(self.state.changes())]))
        return ref

    def reference(self, sequence: str, scenario: Scenario, options: Any) -> EagerReference:
        """The eager outputs of a sequence, per driver_options (computed on first use)."""
        key = (sequence, tuple(sorted((k, repr(v)) for k, v in (options or {}).items())))
        if key not in self.references:
            # timed as the prepared scenario is, whatever a candidate's variant says
            self.references[key] = self._reference(
                scenario.points[sequence], self.scenario.repeats, options
            )
        return self.references[key]

    def run(
        self,
        strategy: str,
        sequence: str,
        scenario: Scenario | None = None,
        trace_dir: str | None = None,
        cap: int | None = None,
    ) -> Run:
        """One (strategy, sequence); ``scenario``: one prepared the same way (the same target,
        inputs, sequences and backend) whose strategies may differ, e.g. a candidate's."""
        scenario = scenario or self.scenario
        return self.probe(
            scenario.strategy(strategy), sequence, scenario, trace_dir=trace_dir, cap=cap
        )

    def probe(
        self,
        strategy: Strategy,
        sequence: str,
        scenario: Scenario | None = None,
        *,
        target: LoadedTarget | None = None,
        trace_dir: str | None = None,
        cap: int | None = None,
    ) -> Run:
        """One run of ``strategy`` over ``sequence``, from the program's state as loaded;
        ``target``: another callable over the same inputs (e.g. the target with lines added);
        ``cap``: see probe.run.probe."""
        scenario = scenario or self.scenario
        reference = self.reference(sequence, scenario, strategy.driver_options)
        self.state.restore()
        return probe(
            scenario,
            target or self.target,
            sequence,
            scenario.points[sequence],
            strategy,
            reference,
            trace_dir,
            quiet=not self.debug,
            cap=cap,
        )


class InlineExecutor:
    def __init__(
        self, scenario: Scenario, trace_dir: str | None = None, debug: bool = False
    ) -> None:
        self.scenario, self.trace_dir, self.debug = scenario, trace_dir, debug
        self._prepared: Prepared | None = None

    def runs(
        self, jobs: Sequence[Job], on_start: OnStart | None = None, on_run: OnRun | None = None
    ) -> Iterator[Run]:
        if self._prepared is None:
            self._prepared = Prepared(self.scenario, self.debug)
        for strategy, group in by_strategy(jobs):
            if on_start:
                on_start(strategy, ", ".join(j.sequence for j in group))
            for job in group:
                run = self._prepared.run(
                    strategy, job.sequence, job.scenario, self.trace_dir, cap=job.cap
                )
                yield run  # kept by the caller before on_run runs: an interrupt there keeps it
                if on_run:
                    on_run(run)

    def interrupted(self) -> list[Run]:
        return []  # inline, each run is handed over as it finishes

    def environment(self) -> Environment | None:
        # after the runs: every patch of the tool's is undone, what is changed was inherited
        from ..records.environment import current
        from ..torch_compat.settings import changed_config

        return current(config=changed_config())

    def close(self) -> None:
        self._prepared = None
