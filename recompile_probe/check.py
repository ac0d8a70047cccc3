"""`check`: run scenarios, evaluate every budget, compare with a baseline; report it all at once.

Every scenario is validated before the first one runs (a malformed one is exit 2 with nothing
run). A scenario whose target fails without torch.compile is recorded and the others still run.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from . import baseline as baseline_mod
from . import budgets as budgets_mod
from . import scenario as scenario_mod
from .errors import ExitCode, ProbeError, UsageError
from .model import Report, Run, Violation, replace
from .scenario import Scenario

SCENARIO_SUFFIXES = (".yaml", ".yml")


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


def expand(paths: list[Path]) -> list[Path]:
    """Scenario files, with each directory replaced by the YAML files below it (sorted)."""
    out: list[Path] = []
    for path in paths:
        if path.is_dir():
            found = sorted(p for p in path.rglob("*") if p.suffix in SCENARIO_SUFFIXES)
            if not found:
                raise UsageError(f"{path}: no scenario files (*.yaml, *.yml) in this directory")
            out.extend(found)
        else:
            out.append(path)
    return out


def load_all(paths: list[Path], strategies: list[str] | None,
             max_recompiles: int | None) -> list[Scenario]:
    scenarios = []
    for path in expand(paths):
        s = scenario_mod.with_overrides(scenario_mod.load(path), strategies=strategies)
        if max_recompiles is not None:
            flag = budgets_mod.Budget(budgets_mod.ANY, budgets_mod.ANY, "max_recompiles",
                                      max_recompiles, "--max-recompiles", from_flag=True)
            s = replace(s, budgets=(*s.budgets, flag))
        scenarios.append(s)
    return scenarios


def judge(report: Report, scenario: Scenario) -> tuple[Report, int]:
    """The report with each run's violations filled in, and how many budgets were checked."""
    runs, checked = [], 0
    for run in report.runs:
        checked += len(budgets_mod.effective(run, scenario.budgets))
        runs.append(replace(run, violations=budgets_mod.evaluate(run, scenario.budgets)))
    return replace(report, runs=tuple(runs)), checked


def run_check(
    scenarios: list[Scenario],
    *,
    baseline: list[Report] | None = None,
    tolerance: int = 0,
    accept_baseline: bool = False,
    on_start: Callable[[str, str], None] | None = None,
    on_run: Callable[[Run], None] | None = None,
) -> Outcome:
    from .session import run_scenario

    outcome = Outcome(baseline_accepted=accept_baseline)
    for scenario in scenarios:
        try:
            report = run_scenario(scenario, on_start=on_start, on_run=on_run)
        except ProbeError as exc:
            outcome.failures.append((scenario, exc))
            continue
        report, checked = judge(report, scenario)
        outcome.reports.append(report)
        outcome.budgets_checked += checked
        if not report.complete:
            outcome.interrupted = True
            break
    if baseline is not None:
        known = {r.scenario.name for r in baseline}
        outcome.without_baseline = [r.scenario.name for r in outcome.reports
                                    if r.scenario.name not in known]
        current = [r for r in outcome.reports if r.scenario.name in known]
        outcome.pairs = baseline_mod.pair(baseline, current)
        outcome.tolerance = tolerance
        outcome.changes = [c for p in outcome.pairs for c in baseline_mod.changes(p, tolerance)]
    return outcome
