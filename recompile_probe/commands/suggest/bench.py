"""Measuring candidates: the target loaded once, eager outputs once per sequence, a probe run per
(candidate, sequence), on the worker pool where there is one. Each candidate is measured once."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from ...records.run import Run
from ...records.suggestion import Evaluation, MarkChoice
from ...scenario.model import Scenario
from ...sizes.points import Point
from ...strategies.model import Strategy
from .objective import aggregate, primary


class BudgetSpent(Exception):
    """--budget candidates were measured: the search stops with the best so far."""


class Bench:
    """Measures candidates: the target loaded once, eager outputs once per sequence, a probe run
    per (candidate, sequence). Each candidate is measured at most once."""

    def __init__(
        self,
        scenario: Scenario,
        sequences: dict[str, tuple[Point, ...]],
        budget: int | None = None,
        on_measured: Callable[[Evaluation, int], None] | None = None,
        pool: Any = None,
    ) -> None:
        from ...probe import eager, run
        from ...targets import loader

        self.scenario, self.sequences, self.budget = scenario, sequences, budget
        self.on_measured, self.pool = on_measured, pool
        self.target = loader.load(scenario)
        run.warm_up(
            scenario.backend, scenario.backend_mode, dict(scenario.backend_options or {}) or None
        )
        self.references: dict[tuple, Any] = {
            (name, ()): eager.eager_reference(self.target, points, scenario.repeats)
            for name, points in sequences.items()
        }
        self.measured: dict[Any, Evaluation] = {}
        self.runs: dict[str, list[Run]] = {}
        self._strategies: dict[Any, tuple[Strategy, Any]] = {}
        #: extra measurements that confirmed or undid a win on speed alone
        self.confirmations = 0

    def measure(
        self,
        key: Any,
        strategy: Strategy,
        marks: tuple[MarkChoice, ...],
        whole: str | None,
        cost: int,
        target: Any = None,
        checks: tuple[str, ...] = (),
    ) -> Evaluation:
        if key in self.measured:
            return self.measured[key]
        if self.budget is not None and len(self.measured) >= self.budget:
            raise BudgetSpent
        runs = self._probe_all(strategy, target)
        evaluation = aggregate(strategy.name, marks, whole, runs, checks, cost)
        self.measured[key] = evaluation
        self.runs[strategy.name] = runs
        if self.on_measured is not None:
            self.on_measured(evaluation, len(self.measured))
        self._strategies[key] = (strategy, target)
        return evaluation

    def _probe_all(self, strategy: Strategy, target: Any = None) -> list[Run]:
        """One probe run per sequence, in a fresh Dynamo state each (as `run` does)."""
        from ...probe.run import probe

        return [
            probe(
                self.scenario,
                target or self.target,
                name,
                points,
                strategy,
                self._reference(name, points, strategy.driver_options),
            )
            for name, points in self.sequences.items()
        ]

    def _reference(self, name: str, points: Any, options: Any) -> Any:
        """Eager outputs per sequence and per driver_options (a changed program: its own)."""
        from ...probe import eager

        key = (name, tuple(sorted((k, repr(v)) for k, v in (options or {}).items())))
        if key not in self.references:
            self.references[key] = eager.eager_reference(
                self.target, points, self.scenario.repeats, options
            )
        return self.references[key]

    def measure_all(
        self, wanted: list[tuple[Any, Strategy, tuple[MarkChoice, ...], str | None, int]]
    ) -> list[Evaluation]:
        """Several candidates of the plain target: on the pool's workers when there is one (each
        a probe run per sequence, as inline), else one after the other. Stops at the budget."""
        todo = [w for w in dict((w[0], w) for w in wanted).values() if w[0] not in self.measured]
        room = None if self.budget is None else max(0, self.budget - len(self.measured))
        spent = room is not None and len(todo) > room
        todo = todo[:room] if room is not None else todo
        if self.pool is None or len(todo) < 2:
            for key, strategy, marks, whole, cost in todo:
                self.measure(key, strategy, marks, whole, cost)
        else:
            self._on_pool(todo)
        if spent:
            raise BudgetSpent
        return [self.measured[w[0]] for w in wanted]

    def _on_pool(self, todo: list) -> None:
        from ...execution.executor import Job
        from ...execution.session import run_jobs

        # One scenario for the whole batch: a worker prepares it (target, eager outputs) once.
        variant = replace(
            self.scenario,
            custom_strategies={
                **self.scenario.custom_strategies,
                **{t[1].name: t[1] for t in todo},
            },
            strategies=tuple(t[1].name for t in todo),
            points=dict(self.sequences),
        )
        jobs = [Job(variant, t[1].name, name) for t in todo for name in self.sequences]
        runs: dict[str, list[Run]] = {}
        for run in run_jobs(jobs, pool=self.pool):
            runs.setdefault(run.strategy, []).append(run)
        for key, strategy, marks, whole, cost in todo:
            evaluation = aggregate(
                strategy.name, marks, whole, runs.get(strategy.name, []), (), cost
            )
            self.measured[key] = evaluation
            self.runs[strategy.name] = runs.get(strategy.name, [])
            self._strategies[key] = (strategy, None)
            if self.on_measured is not None:
                self.on_measured(evaluation, len(self.measured))

    def candidates(self) -> list[Evaluation]:
        """What competes: markings and whole-function strategies, not the runs that only
        measure a form of one (environment, torch._check wrappers)."""
        return [v for k, v in self.measured.items() if k[0] not in ("env", "checks")]

    def again(self, e: Evaluation) -> Evaluation:
        """``e`` measured once more; its timing ranges widened by the new samples (a speed
        difference must survive the machine's drift between two measurements)."""
        key = next(k for k, v in self.measured.items() if v.name == e.name)
        strategy, target = self._strategies[key]
        runs = self._probe_all(strategy, target)
        self.confirmations += 1
        fresh = aggregate(e.name, e.marks, e.whole_function, runs, e.checks, e.cost)
        if primary(fresh) != primary(e):  # not the same figures twice: keep the worse
            return max((e, fresh), key=primary)
        low = [v for v in (e.steady_state_min_us, fresh.steady_state_min_us) if v is not None]
        high = [v for v in (e.steady_state_p90_us, fresh.steady_state_p90_us) if v is not None]
        mid = [v for v in (e.steady_state_us, fresh.steady_state_us) if v is not None]
        widened = replace(
            e,
            steady_state_min_us=min(low) if low else None,
            steady_state_p90_us=max(high) if high else None,
            steady_state_us=round(sum(mid) / len(mid), 3) if mid else None,
        )
        self.measured[key] = widened
        return widened
