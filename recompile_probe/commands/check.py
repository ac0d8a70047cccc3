"""`check`: run scenarios, evaluate every budget, compare with a baseline; report it all at once.

Every scenario is validated before the first one runs (a malformed one is exit 2 with nothing
run). A scenario whose target fails without torch.compile is recorded and the others still run.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Collection
from dataclasses import replace
from pathlib import Path
from typing import Any

from ..analysis.check import Outcome, compare
from ..errors import ProbeError, ReportError, UsageError
from ..records.order import ordered, planned
from ..records.report import Report
from ..records.run import Run
from ..scenario import load as scenario_load
from ..scenario.budgets import Budget
from ..scenario.keys import ANY
from ..scenario.model import Scenario, coverage_ranges
from ..scenario.overrides import cover_ranges, with_overrides
from ..version import __version__

SCENARIO_SUFFIXES = (".yaml", ".yml")


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


def load_all(
    paths: list[Path],
    strategies: list[str] | None,
    max_recompiles: int | None,
    *,
    cover: str | None = None,
    no_recompile_in: str | None = None,
) -> list[Scenario]:
    scenarios = []
    for path in expand(paths):
        s = with_overrides(scenario_load.load(path), strategies=strategies, cover=cover)
        if max_recompiles is not None:
            flag = Budget(
                ANY, ANY, "max_recompiles", max_recompiles, "--max-recompiles", from_flag=True
            )
            s = replace(s, budgets=(*s.budgets, flag))
        if no_recompile_in is not None:
            ranges = cover_ranges(s, no_recompile_in, "--no-recompile-in")
            flag = Budget(ANY, ANY, "no_recompile_in", ranges, "--no-recompile-in", from_flag=True)
            s = replace(s, budgets=(*s.budgets, flag))
        scenarios.append(s)
    return scenarios


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
    cleared: dict[str, str] | None = None,
    reuse: Path | None = None,
) -> Outcome:
    """``runs``: only these (scenario name, sequence, strategy), e.g. a shard's; a scenario with
    none of them is left out. ``pool``: an ``execution.session.open_pool`` every scenario's runs
    share, its workers reused from one scenario to the next. ``cleared``: the inherited compile
    settings `--clean-env` kept out (inside ``execution.session.clean_environment``).
    ``reuse``: a folder of saved reports, one per scenario (``reused``); a scenario whose report
    there is not reusable runs, and its report is saved there."""
    from ..execution import session

    outcome = Outcome(baseline_accepted=accept_baseline)
    for scenario in scenarios:
        saved = reused(scenario, reuse) if reuse is not None else None
        if saved is not None and reuse is not None:
            outcome.add(saved, scenario)
            outcome.reused.append(str(saved_path(scenario, reuse)))
            continue
        began = time.time()
        try:
            report = _run_some(scenario, runs, on_start, on_run, pool)
        except ProbeError as exc:
            outcome.failures.append((scenario, exc))
            continue
        if report is None:
            continue
        if cleared is not None:
            report = session.cleared(report, cleared)
        if reuse is not None and report.complete:
            _save(report, saved_path(scenario, reuse), began)
        report = outcome.add(report, scenario)
        if not report.complete:
            outcome.interrupted = True
            break
    return compare(outcome, baseline, tolerance)


def _save(report: Report, path: Path, began: float) -> None:
    """The report, dated when its run began: a file edited while it ran is newer than it."""
    import os

    from ..artefacts import write_atomic
    from ..records.report import to_json

    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, to_json(report))
    os.utime(path, (began, began))


def saved_path(scenario: Scenario, folder: Path) -> Path:
    return folder / f"{scenario.name}.json"


def reused(scenario: Scenario, folder: Path) -> Report | None:
    """The scenario's saved report in ``folder`` where it still stands for a fresh run: written
    from this very scenario file (its sha256), with the runs and coverage ranges it plans, and
    newer than the file and than every source file its compiles and their user lines came
    from. A change to code the compiled frames only call is not seen: the hook that uses this
    says so (docs/ci.md)."""
    from ..records.report import from_json

    path = saved_path(scenario, folder)
    try:
        report = from_json(path.read_text(encoding="utf-8"), str(path))
        written = path.stat().st_mtime
    except (OSError, ReportError):
        return None
    if scenario.sha256 is None or report.scenario.sha256 != scenario.sha256 or not report.complete:
        return None
    if report.tool.version != __version__ or report.environment.torch != _torch_version():
        return None  # another tool or torch measured it
    plan = sorted(planned(scenario.points, scenario.strategies))
    if plan != sorted(dict.fromkeys((r.sequence_name, r.strategy) for r in report.runs)):
        return None
    ranges = coverage_ranges(scenario)
    if any((r.coverage.ranges if r.coverage else None) != ranges for r in report.runs):
        return None
    sources: set[str | None] = {scenario.path}
    for run in report.runs:
        for event in run.compile_events:
            sources.add(event.filename)
            sources.update(o.file for o in event.reason_origins or () if o)
    for source in sources:
        try:
            if source and Path(source).stat().st_mtime >= written:
                return None
        except OSError:
            continue  # a frame of generated code, or a file since removed
    return report


def _torch_version() -> str | None:
    """The torch a run here would import, as its reports write it (torch.__version__)."""
    if "torch" in sys.modules:
        return getattr(sys.modules["torch"], "__version__", None)
    from ..records.environment import current

    return current().torch


def _run_some(
    scenario: Scenario,
    runs: Collection[tuple[str, str, str]] | None,
    on_start: Callable[[str, str], None] | None,
    on_run: Callable[[Run], None] | None,
    pool: Any = None,
) -> Report | None:
    """The scenario's report, or the report of the selected runs only. Sequences that need the
    same strategies run as one part (one eager reference each, as unsharded); every run resets
    Dynamo, so a run's figures do not depend on which runs share its process."""
    from ..execution.session import run_scenario

    if runs is None:
        return run_scenario(scenario, on_start=on_start, on_run=on_run, pool=pool)
    chosen = set(runs)
    groups: dict[tuple[str, ...], list[str]] = {}
    for sequence in scenario.points:
        strategies = tuple(s for s in scenario.strategies if (scenario.name, sequence, s) in chosen)
        if strategies:
            groups.setdefault(strategies, []).append(sequence)
    parts: list[Report] = []
    for strategies, sequences in groups.items():
        part = replace(
            scenario, strategies=strategies, points={n: scenario.points[n] for n in sequences}
        )
        parts.append(run_scenario(part, on_start=on_start, on_run=on_run, pool=pool))
        if not parts[-1].complete:
            break
    if not parts:
        return None
    from ..execution.session import rank_runs_of

    runs_of_parts = ordered(
        (r for p in parts for r in p.runs), scenario.points, scenario.strategies
    )
    return replace(
        parts[0],
        runs=runs_of_parts,
        complete=all(p.complete for p in parts),
        rank_runs=rank_runs_of(scenario, runs_of_parts),
    )


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
        raise ReportError(
            f"{source}: report(s) for {', '.join(map(repr, extra))}, which no scenario given names",
            "Give check the same scenarios as the runs.",
        )
    outcome = Outcome(baseline_accepted=accept_baseline)
    for scenario in scenarios:
        report = by_name.get(scenario.name)
        if report is None:
            raise ReportError(
                f"{source}: no report for scenario {scenario.name!r}",
                "Merge every shard (a scenario that could not run in a shard "
                "is left out of its report).",
            )
        plan = list(planned(scenario.points, scenario.strategies))
        # a distributed scenario's report holds a run per rank of each planned one
        held = list(dict.fromkeys((r.sequence_name, r.strategy) for r in report.runs))
        if sorted(plan) != sorted(held):
            lost = [f"{a} / {b}" for a, b in plan if (a, b) not in held]
            more = [f"{a} / {b}" for a, b in held if (a, b) not in plan]
            raise ReportError(
                f"{source}: scenario {scenario.name!r}: the report's runs differ from the "
                f"scenario's"
                + (f"; missing {', '.join(lost)}" if lost else "")
                + (f"; not planned {', '.join(more)}" if more else ""),
                "Use the scenarios and --strategy the report was made with.",
            )
        report = outcome.add(report, scenario)
        if not report.complete:
            outcome.interrupted = True
    return compare(outcome, baseline, tolerance)
