"""Measuring candidates: the target loaded once, eager outputs once per sequence, a probe run per
(candidate, sequence), on the worker pool where there is one. Each candidate is measured once.

The search measures its candidates untimed: µs/call only decides between candidates that tie on
everything before it (status, outputs, compiles, guards), so ``time_finalists`` times only those
tied for first, each a probe run again with the scenario's timing, inline (never beside other
candidates on the pool). The others keep µs/call n/a: no figure could change their rank. The
forms measured for the recommendation (environment, torch._check lines) and confirmations are
timed as they are measured.

A saved `run` report (``reuse``) gives the candidates it already measured: the unmarked one
(its `default` runs) and the whole-function strategies it ran over the same sequences, sizes and
backend. Those are read back, not measured again, and count against no limit.

A searched candidate is measured only as long as it can still rank first: once its compiles pass
those of the leader so far (ok, outputs equal to eager, not shown to miss a declared coverage
range), nothing after that call can lift it above the leader, so its probe stops there (status
``cut``, its compiles a lower bound). Compiles only grow, so this never changes the answer; it
saves the candidates that recompile dozens of times (an unbacked mark that guards every size).
On the pool, each sequence of a batch is cut at the leader's total when the batch starts.

Two limits stop the measuring: --budget (candidates) and --time-limit (seconds of wall clock since
the command began). Both are checked before a candidate starts, never during one: a started
candidate is finished, so every figure reported is a whole measurement, and the first candidate
always runs, so a stopped search still has an answer.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from ...records.run import Run
from ...records.suggestion import Evaluation, MarkChoice
from ...scenario.model import Scenario
from ...sizes.points import Point
from ...strategies.model import Strategy
from .objective import aggregate, primary, ranked

#: the kinds of candidate key the search measures (untimed until they are finalists)
SEARCHED = ("marks", "whole")


class Stopped(Exception):
    """A limit was reached: the search stops with the best so far."""


class BudgetSpent(Stopped):
    """--budget candidates were measured."""


class TimeUp(Stopped):
    """--time-limit seconds have passed."""


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
        time_limit: float | None = None,
        started: float | None = None,
    ) -> None:
        from ...execution.inline import Prepared

        self.scenario, self.sequences, self.budget = scenario, sequences, budget
        self.on_measured, self.pool = on_measured, pool
        #: time.monotonic() when the command began: the time limit counts the set-up too
        self.started = time.monotonic() if started is None else started
        self.time_limit = time_limit
        #: what stopped the measuring first: "budget" or "time_limit"; None: nothing yet
        self.stopped_by: str | None = None
        #: when the first candidate began (the set-up before it is no candidate's cost)
        self.measuring_since: float | None = None
        #: what the search's candidates run as: the scenario untimed (see the module's docstring)
        self.untimed = replace(scenario, repeats=0)
        #: the finalists timed by ``time_finalists``, by name
        self.finalists: list[str] = []
        #: the target loaded, warmed up and its eager outputs made, as a `run` prepares it; every
        #: candidate starts from the program's state as loaded
        self.prepared = Prepared(scenario, sequences=sequences)
        self.target = self.prepared.target
        self.measured: dict[Any, Evaluation] = {}
        self.runs: dict[str, list[Run]] = {}
        self._strategies: dict[Any, tuple[Strategy, Any]] = {}
        #: extra measurements that confirmed or undid a win on speed alone
        self.confirmations = 0
        #: wins on speed alone left unconfirmed because a limit stopped the measuring
        self.unconfirmed = 0
        #: candidate key -> the saved report's runs of it (``reuse``), read instead of measured
        self.saved: dict[Any, list[Run]] = {}
        #: the candidates taken from the saved report, in the order the search asked for them
        self.reused: list[str] = []

    def reuse(self, runs: dict[Any, list[Run]]) -> None:
        """Saved runs per candidate key: each must cover every sequence of the search."""
        self.saved.update(runs)

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
        leader = None
        if key in self.saved and target is None and not checks:
            runs = self.saved[key]
            self.reused.append(strategy.name)
        else:
            self._may_start()
            searched = key[0] in SEARCHED
            leader = self.leader() if searched else None
            runs = self._probe_all(
                strategy, target, timed=not searched, cap=None if leader is None else leader[1]
            )
        evaluation = self._cut(
            aggregate(strategy.name, marks, whole, runs, checks, cost), runs, leader
        )
        self.measured[key] = evaluation
        self.runs[strategy.name] = runs
        if self.on_measured is not None:
            self.on_measured(evaluation, len(self.measured))
        self._strategies[key] = (strategy, target)
        return evaluation

    def leader(self) -> tuple[str, int] | None:
        """The candidate ranked first so far and its compiles, where no later candidate with
        more compiles can pass it: ok, outputs equal to eager, not shown to miss a coverage
        range (those rank before compiles)."""
        order = ranked(self.candidates())
        if not order:
            return None
        e = order[0]
        if e.status != "ok" or e.outputs_match is not True or e.covered is False:
            return None
        return None if e.compiles is None else (e.name, e.compiles)

    @staticmethod
    def _cut(e: Evaluation, runs: list[Run], leader: tuple[str, int] | None) -> Evaluation:
        """``e`` as cut where one of its runs stopped at the leader's cap."""
        if leader is None or all(r.cut_after is None for r in runs):
            return e
        return replace(
            e,
            status="cut",
            error=f"stopped at {e.compiles} compiles, past the {leader[1]} of {leader[0]}: "
            "it could no longer rank first",
        )

    def elapsed(self) -> float:
        return time.monotonic() - self.started

    def _time_up(self) -> bool:
        return (
            self.time_limit is not None
            and bool(self.measured)
            and self.elapsed() >= self.time_limit
        )

    def _stop(self, exc: Stopped) -> Stopped:
        if self.stopped_by is None:
            self.stopped_by = "budget" if isinstance(exc, BudgetSpent) else "time_limit"
        return exc

    def _may_start(self) -> None:
        """Raises when a limit forbids starting another candidate."""
        if self._time_up():
            raise self._stop(TimeUp())
        if self.budget is not None and len(self.measured) - len(self.reused) >= self.budget:
            raise self._stop(BudgetSpent())
        if self.measuring_since is None:
            self.measuring_since = time.monotonic()

    def per_candidate(self) -> float | None:
        """Seconds per measured candidate so far (confirmations included in the time)."""
        probed = len(self.measured) - len(self.reused)
        if self.measuring_since is None or probed < 1:
            return None
        return (time.monotonic() - self.measuring_since) / probed

    def untimed_count(self) -> int:
        """Competing candidates left without µs/call (a scenario untimed: every one)."""
        return sum(e.steady_state_us is None for e in self.candidates())

    def time_finalists(self) -> list[str]:
        """Time the candidates tied for first before µs/call (see the module's docstring): each
        probed again with timing, its evaluation replaced where the figures are the same (if a
        re-run compiled differently, the worse of the two stands, untimed, as in ``again``)."""
        order = ranked(self.candidates())
        if not order or self.scenario.repeats == 0:
            return []
        top = primary(order[0])
        for e in order:
            if primary(e) != top or e.steady_state_us is not None or e.status != "ok":
                continue
            key = next(k for k, v in self.measured.items() if v.name == e.name)
            strategy, target = self._strategies[key]
            if self._time_up():  # not a new candidate (no budget), but time all the same
                raise self._stop(TimeUp())
            runs = self._probe_all(strategy, target)
            fresh = aggregate(e.name, e.marks, e.whole_function, runs, e.checks, e.cost)
            if primary(fresh) == primary(e):
                self.measured[key], self.runs[e.name] = fresh, runs
            else:
                self.measured[key] = max((e, fresh), key=primary)
            self.finalists.append(e.name)
        return self.finalists

    def _probe_all(
        self, strategy: Strategy, target: Any = None, timed: bool = True, cap: int | None = None
    ) -> list[Run]:
        """One probe run per sequence, in a fresh Dynamo state each (as `run` does). ``cap``:
        the compiles over all sequences past which the candidate is cut (the sequences after
        the cut are not run)."""
        scenario = self.scenario if timed else self.untimed
        runs: list[Run] = []
        for name in self.sequences:
            left = None if cap is None else cap - sum(r.compiles or 0 for r in runs)
            run = self.prepared.probe(strategy, name, scenario, target=target, cap=left)
            runs.append(run)
            if run.cut_after is not None:
                break
        return runs

    def measure_all(
        self, wanted: list[tuple[Any, Strategy, tuple[MarkChoice, ...], str | None, int]]
    ) -> list[Evaluation]:
        """Several candidates of the plain target: on the pool's workers when there is one (each
        a probe run per sequence, as inline), else one after the other. Stops at a limit."""
        todo = [w for w in dict((w[0], w) for w in wanted).values() if w[0] not in self.measured]
        for w in [w for w in todo if w[0] in self.saved]:
            self.measure(*w)
        todo = [w for w in todo if w[0] not in self.saved]
        if self.pool is None or len(todo) < 2:
            for key, strategy, marks, whole, cost in todo:
                self.measure(key, strategy, marks, whole, cost)
        else:
            # Under a time limit, a batch per round of the pool's workers: the limit is looked
            # at between rounds, as between candidates inline. Without one, one batch keeps
            # every worker busy to the end.
            size = len(todo) if self.time_limit is None else max(1, self.pool.size)
            while todo:
                self._may_start()
                room = (
                    len(todo)
                    if self.budget is None
                    else self.budget - (len(self.measured) - len(self.reused))
                )
                batch, todo = todo[: min(size, room)], todo[min(size, room) :]
                if len(batch) == 1:
                    self.measure(*batch[0])
                else:
                    self._on_pool(batch)
        return [self.measured[w[0]] for w in wanted]

    def _on_pool(self, todo: list) -> None:
        from ...execution.executor import Job
        from ...execution.session import run_jobs

        # One scenario for the whole batch: a worker prepares it (target, eager outputs) once.
        variant = replace(
            self.untimed,
            custom_strategies={
                **self.scenario.custom_strategies,
                **{t[1].name: t[1] for t in todo},
            },
            strategies=tuple(t[1].name for t in todo),
            points=dict(self.sequences),
        )
        # The sequences run side by side: each is cut at the leader's total, which a sequence
        # that passes it alone passes in the sum too.
        leader = self.leader()
        cap = None if leader is None else leader[1]
        jobs = [Job(variant, t[1].name, name, cap) for t in todo for name in self.sequences]
        runs: dict[str, list[Run]] = {}
        for run in run_jobs(jobs, pool=self.pool):
            runs.setdefault(run.strategy, []).append(run)
        for key, strategy, marks, whole, cost in todo:
            evaluation = self._cut(
                aggregate(strategy.name, marks, whole, runs.get(strategy.name, []), (), cost),
                runs.get(strategy.name, []),
                leader,
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
        # not a new candidate (the budget does not count it), but time all the same
        if self._time_up():
            raise self._stop(TimeUp())
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
