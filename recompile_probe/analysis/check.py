"""`check`'s verdict: scenarios' reports judged by their budgets and a baseline. No torch.

Every violation and every baseline change is kept, not just the first: the exit code says
whether any budget broke or the baseline regressed (commands/check.py runs the scenarios).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from ..errors import ExitCode, ProbeError
from ..records.report import Report, ScenarioRef
from ..records.run import Run, Violation
from ..scenario.model import Scenario, definitions
from ..strategies.advice import Definitions
from . import baseline as baseline_mod
from .budgets import effective, evaluate, held_on_samples


@dataclass(frozen=True)
class SampledHold:
    """A budget that held where coverage was decided on samples only: not a proof."""

    scenario: str
    sequence: str
    strategy: str
    #: e.g. "no_recompile_in B ∈ [2, 64]"
    budget: str
    rank: int | None = None  #: the rank whose run it is, in a scenario with `ranks:`


@dataclass
class Outcome:
    reports: list[Report] = field(default_factory=list)
    #: scenario path -> the error that stopped it (eager failure, unloadable target)
    failures: list[tuple[Scenario, ProbeError]] = field(default_factory=list)
    changes: list[baseline_mod.Change] = field(default_factory=list)
    #: baseline and fresh runs side by side (empty without a baseline)
    pairs: list[baseline_mod.Pair] = field(default_factory=list)
    tolerance: int = 0
    #: scenarios the baseline has no report for
    without_baseline: list[str] = field(default_factory=list)
    baseline_accepted: bool = False
    budgets_checked: int = 0
    interrupted: bool = False
    #: saved reports judged instead of running their scenarios (check --reuse-reports)
    reused: list[str] = field(default_factory=list)
    #: budgets that held on sampled coverage only
    sampled: list[SampledHold] = field(default_factory=list)
    #: a report's scenario -> what its measured fixes are written with (its custom strategies),
    #: where the file judged is the one the report was made from
    definitions: dict[ScenarioRef, Definitions] = field(default_factory=dict)

    def add(self, report: Report, scenario: Scenario) -> Report:
        """``report`` judged by ``scenario``'s budgets, kept with its counts; returned."""
        judged, checked = judge(report, scenario)
        self.reports.append(judged)
        self.budgets_checked += checked
        if scenario.sha256 == judged.scenario.sha256:  # a file edited since defines other fixes
            self.definitions[judged.scenario] = definitions(scenario)
        self.sampled += [
            SampledHold(judged.scenario.name, run.sequence_name, run.strategy, budget, run.rank)
            for run in judged.runs
            for budget in held_on_samples(run, scenario.budgets)
        ]
        return judged

    def violations(self) -> list[tuple[Report, Run, Violation]]:
        return [(rep, run, v) for rep in self.reports for run in rep.runs for v in run.violations]

    def regressions(self) -> list[baseline_mod.Change]:
        return [c for c in self.changes if c.kind == "regression"]

    def improvements(self) -> list[baseline_mod.Change]:
        return [c for c in self.changes if c.kind == "improvement"]

    @property
    def exit_code(self) -> ExitCode:
        if self.interrupted:
            return ExitCode.INTERRUPTED
        if self.failures:
            return ExitCode.TARGET_OR_INTERNAL
        if self.violations() or (self.regressions() and not self.baseline_accepted):
            return ExitCode.BUDGET
        return ExitCode.OK


def judge(report: Report, scenario: Scenario) -> tuple[Report, int]:
    """The report with each run's violations filled in, and how many budgets were checked."""
    runs, checked = [], 0
    for run in report.runs:
        checked += len(effective(run, scenario.budgets))
        runs.append(replace(run, violations=evaluate(run, scenario.budgets, report.rank_runs)))
    return replace(report, runs=tuple(runs)), checked


def compare(outcome: Outcome, baseline: list[Report] | None, tolerance: int) -> Outcome:
    if baseline is not None:
        known = {r.scenario.name for r in baseline}
        outcome.without_baseline = [
            r.scenario.name for r in outcome.reports if r.scenario.name not in known
        ]
        current = [r for r in outcome.reports if r.scenario.name in known]
        outcome.pairs = baseline_mod.pair(baseline, current)
        outcome.tolerance = tolerance
        outcome.changes = [c for p in outcome.pairs for c in baseline_mod.changes(p, tolerance)]
    return outcome
