"""`explain`: run a scenario's strategies (or read them from a saved `run` report), then explain
the chosen ones' recompiles against them (analysis/explain.py does the explaining; every strategy
that ran is a measured fix).

From a saved report nothing runs that the report holds: the scenario file it names gives the
strategies (custom ones included) for the code advice, the runs give the target's argument names,
and only strategies the report lacks run. Then nothing imports torch.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ..analysis.explain import Explained, explain
from ..errors import UsageError, did_you_mean
from ..records.order import ordered
from ..records.report import Report
from ..scenario.model import Scenario, definitions
from ..scenario.overrides import with_overrides
from ..strategies.advice import Arguments, Definitions, recorded
from .saved import run_points, scenario_of


def explain_scenario(
    scenario: Scenario,
    *,
    chosen: list[str] | None = None,
    only: list[str] | None = None,
    sequence: str | None = None,
    **run: Any,
) -> Explained:
    """Explain ``chosen`` (default: every strategy that compiled more than once or errored) over
    ``sequence`` (default: every one). The strategies that run, and so the measured fixes: ``only``
    (default: the scenario's), with the chosen ones beside them.
    ``run``: run_scenario's keywords (jobs, timeout, trace_dir, debug, on_start, on_run)."""
    from ..execution.session import run_scenario

    full = scenario
    scenario = with_overrides(scenario, strategies=to_run(full.strategies, only, chosen))
    check_sequence(sequence, list(scenario.sequences))
    report = run_scenario(scenario, **run)
    return _explained(report, full, chosen, sequence, [])


def to_run(default: Sequence[str], only: list[str] | None, chosen: list[str] | None) -> list[str]:
    """``only`` (default: ``default``), then every chosen strategy not among them: a strategy is
    explained from its own run."""
    names = list(only) if only is not None else list(default)
    return names + [c for c in chosen or () if c not in names]


def check_sequence(sequence: str | None, names: list[str]) -> None:
    if sequence is not None and sequence not in names:
        raise UsageError(
            f"--sequence: no sequence named {sequence!r} in the "
            + ("report" if names else "scenario"),
            did_you_mean(sequence, names) or f"Sequences: {', '.join(names)}.",
        )


# --- from a saved report --------------------------------------------------------------------------


@dataclass(frozen=True)
class FromReport:
    """A saved report, its scenario, and the runs it lacks for what was asked."""

    report: Report  #: the saved runs of the wanted strategies
    scenario: Scenario  #: as its file reads now (unchanged since the report: checked)
    wanted: tuple[str, ...]  #: the strategies to explain against, in order
    #: strategies -> the sequences they must run over (grouped: one eager reference per part)
    missing: dict[tuple[str, ...], list[str]]
    warnings: tuple[str, ...] = ()

    @property
    def missing_runs(self) -> int:
        return sum(len(s) * len(seqs) for s, seqs in self.missing.items())


def plan_report(
    report: Report,
    source: str,
    scenario_path: Path | None = None,
    *,
    chosen: list[str] | None = None,
    only: list[str] | None = None,
    sequence: str | None = None,
) -> FromReport:
    """What `explain --from-report` reuses and what it must still run. ``scenario_path``: the
    scenario file, where it is not where the report says (moved). Torch-free."""
    warnings: list[str] = []
    scenario = scenario_of(report, source, scenario_path, warnings, "explain")
    held = list(dict.fromkeys(r.strategy for r in report.runs))
    wanted = to_run(held, only, chosen)
    with_overrides(scenario, strategies=wanted)  # unknown names: the scenario's own error
    names = [n for n, _ in report.sequences()]
    check_sequence(sequence, names)
    have = {(r.sequence_name, r.strategy) for r in report.runs}
    missing: dict[tuple[str, ...], list[str]] = {}
    for name in names:
        if sequence is not None and name != sequence:
            continue
        lacking = tuple(s for s in wanted if (name, s) not in have)
        if lacking:
            missing.setdefault(lacking, []).append(name)
    kept = replace(report, runs=tuple(r for r in report.runs if r.strategy in wanted))
    return FromReport(kept, scenario, tuple(wanted), missing, tuple(warnings))


def explain_planned(
    plan: FromReport, *, chosen: list[str] | None = None, sequence: str | None = None, **run: Any
) -> Explained:
    """Run what the plan lacks (imports torch only then), and explain."""
    report = plan.report
    if plan.missing:
        report = _with_missing(plan, **run)
    return _explained(report, plan.scenario, chosen, sequence, list(plan.warnings), saved=True)


def _with_missing(plan: FromReport, **run: Any) -> Report:
    """The plan's report with its missing runs run: at the report's sizes and backend, so they
    are measured like the saved ones."""
    from ..execution.session import run_scenario

    report, parts = plan.report, []
    for strategies, sequences in plan.missing.items():
        saved = [next(r for r in report.runs if r.sequence_name == n) for n in sequences]
        part = replace(
            plan.scenario,
            strategies=strategies,
            points={r.sequence_name: run_points(r) for r in saved},
            backend=saved[0].backend,
        )
        parts.append(run_scenario(part, **run))
        if not parts[-1].complete:
            break
    names = [n for n, _ in report.sequences()]
    runs = [*report.runs, *(r for p in parts for r in p.runs)]
    return replace(
        report,
        runs=ordered(runs, names, plan.wanted),
        complete=report.complete and all(p.complete for p in parts),
    )


# --- both -----------------------------------------------------------------------------------------


def _explained(
    report: Report,
    scenario: Scenario,
    chosen: list[str] | None,
    sequence: str | None,
    warnings: list[str],
    saved: bool = False,
) -> Explained:
    written = definitions(scenario)
    explanations, notes = explain(
        report,
        written.strategies,
        _arguments(report, scenario, written, warnings if saved else None),
        chosen,
        sequence,
    )
    ran = list(dict.fromkeys(r.strategy for r in report.runs))
    skipped = [s for s in scenario.strategies if s not in ran]
    if skipped:
        notes.append(
            f"measured fixes are only among the strategies that ran ({', '.join(ran)}); "
            f"the scenario's {', '.join(skipped)} did not run"
        )
    return Explained(report, tuple(explanations), tuple(notes), tuple(warnings))


def _arguments(
    report: Report, scenario: Scenario, written: Definitions, warnings: list[str] | None
) -> Arguments:
    """How the target names its arguments: as its runs recorded it, or (a report written before
    runs kept it) from the target itself, which imports it and torch."""
    found = recorded(report.runs, written.ranges, written.driver)
    if found is not None:
        return found
    if warnings is not None and report.runs:
        warnings.append(
            "the report's runs do not record the target's argument names (written by an older "
            "recompile-probe): the target was imported, with torch, to name them; nothing ran."
        )
    from ..targets import loader

    target = loader.load(scenario)
    return Arguments(target.dim_sources(), target.param_names, written.ranges, written.driver)
