"""`check`: run scenarios, evaluate every budget, compare with a baseline; report it all at once.

Every scenario is validated before the first one runs (a malformed one is exit 2 with nothing
run). A scenario whose target fails without torch.compile is recorded and the others still run.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Collection

from . import baseline as baseline_mod
from . import budgets as budgets_mod
from . import scenario as scenario_mod
from .errors import ExitCode, ProbeError, ReportError, UsageError
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
    runs: Collection[tuple[str, str, str]] | None = None,
    pool: Any = None,
) -> Outcome:
    """``runs``: only these (scenario name, sequence, strategy), e.g. a shard's; a scenario with
    none of them is left out. ``pool``: a ``session.open_pool`` (--jobs N) every scenario's runs
    share, its workers reused from one scenario to the next."""
    outcome = Outcome(baseline_accepted=accept_baseline)
    for scenario in scenarios:
        try:
            report = _run_some(scenario, runs, on_start, on_run, pool)
        except ProbeError as exc:
            outcome.failures.append((scenario, exc))
            continue
        if report is None:
            continue
        report, checked = judge(report, scenario)
        outcome.reports.append(report)
        outcome.budgets_checked += checked
        if not report.complete:
            outcome.interrupted = True
            break
    return _compare(outcome, baseline, tolerance)


def _run_some(scenario: Scenario, runs: Collection[tuple[str, str, str]] | None,
              on_start: Callable[[str, str], None] | None,
              on_run: Callable[[Run], None] | None, pool: Any = None) -> Report | None:
    """The scenario's report, or the report of the selected runs only. Sequences that need the
    same strategies run as one part (one eager reference each, as unsharded); every run resets
    Dynamo, so a run's figures do not depend on which runs share its process."""
    from .session import run_scenario

    if runs is None:
        return run_scenario(scenario, on_start=on_start, on_run=on_run, pool=pool)
    chosen = set(runs)
    groups: dict[tuple[str, ...], list[str]] = {}
    for sequence in scenario.points:
        strategies = tuple(s for s in scenario.strategies
                           if (scenario.name, sequence, s) in chosen)
        if strategies:
            groups.setdefault(strategies, []).append(sequence)
    parts: list[Report] = []
    for strategies, sequences in groups.items():
        part = replace(scenario, strategies=strategies,
                       points={n: scenario.points[n] for n in sequences})
        parts.append(run_scenario(part, on_start=on_start, on_run=on_run, pool=pool))
        if not parts[-1].complete:
            break
    if not parts:
        return None
    seq_rank = {n: i for i, n in enumerate(scenario.points)}
    strat_rank = {n: i for i, n in enumerate(scenario.strategies)}
    ordered = sorted((r for p in parts for r in p.runs),
                     key=lambda r: (seq_rank[r.sequence_name], strat_rank[r.strategy]))
    return replace(parts[0], runs=tuple(ordered), complete=all(p.complete for p in parts))


def from_reports(
    scenarios: list[Scenario],
    reports: list[Report],
    *,
    source: str = "report",
    baseline: list[Report] | None = None,
    tolerance: int = 0,
    accept_baseline: bool = False,
) -> Outcome:
    """`check --from-report`: the scenarios' budgets and the baseline judged on saved reports
    (e.g. merged shards) instead of fresh runs. Nothing runs; no torch import. Every run the
    scenarios plan must be in the reports and nothing else: a verdict on a partial report would
    pass what the full check fails."""
    by_name = {r.scenario.name: r for r in reports}
    names = {s.name for s in scenarios}
    extra = [n for n in by_name if n not in names]
    if extra:
        raise ReportError(f"{source}: report(s) for {', '.join(map(repr, extra))}, which no "
                          "scenario given names", "Give check the same scenarios as the runs.")
    outcome = Outcome(baseline_accepted=accept_baseline)
    for scenario in scenarios:
        report = by_name.get(scenario.name)
        if report is None:
            raise ReportError(f"{source}: no report for scenario {scenario.name!r}",
                              "Merge every shard (a scenario that could not run in a shard "
                              "is left out of its report).")
        planned = [(seq, strat) for seq in scenario.points for strat in scenario.strategies]
        held = [(r.sequence_name, r.strategy) for r in report.runs]
        if sorted(planned) != sorted(held):
            lost = [f"{a} / {b}" for a, b in planned if (a, b) not in held]
            more = [f"{a} / {b}" for a, b in held if (a, b) not in planned]
            raise ReportError(
                f"{source}: scenario {scenario.name!r}: the report's runs differ from the "
                f"scenario's" + (f"; missing {', '.join(lost)}" if lost else "")
                + (f"; not planned {', '.join(more)}" if more else ""),
                "Use the scenarios and --strategy the report was made with.")
        report, checked = judge(report, scenario)
        outcome.reports.append(report)
        outcome.budgets_checked += checked
        if not report.complete:
            outcome.interrupted = True
    return _compare(outcome, baseline, tolerance)


def _compare(outcome: Outcome, baseline: list[Report] | None, tolerance: int) -> Outcome:
    if baseline is not None:
        known = {r.scenario.name for r in baseline}
        outcome.without_baseline = [r.scenario.name for r in outcome.reports
                                    if r.scenario.name not in known]
        current = [r for r in outcome.reports if r.scenario.name in known]
        outcome.pairs = baseline_mod.pair(baseline, current)
        outcome.tolerance = tolerance
        outcome.changes = [c for p in outcome.pairs for c in baseline_mod.changes(p, tolerance)]
    return outcome
