"""`explain`: run a scenario's strategies, then explain the chosen ones' recompiles against them
(analysis/explain.py does the explaining; every strategy that ran is a measured fix)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..analysis.explain import Explanation, explain
from ..errors import UsageError, did_you_mean
from ..records.report import Report
from ..scenario.model import Scenario
from ..scenario.overrides import with_overrides
from ..strategies.advice import Arguments


@dataclass(frozen=True)
class Explained:
    report: Report
    explanations: tuple[Explanation, ...]
    notes: tuple[str, ...]


def explain_scenario(
    scenario: Scenario, *, chosen: list[str] | None = None, sequence: str | None = None, **run: Any
) -> Explained:
    """Explain ``chosen`` (default: every strategy that compiled more than once or errored) over
    ``sequence`` (default: every one); the chosen strategies run beside the scenario's own.
    ``run``: run_scenario's keywords (jobs, timeout, trace_dir, debug, on_start, on_run)."""
    from ..execution.session import run_scenario
    from ..targets import loader

    if chosen is not None:
        scenario = with_overrides(
            scenario,
            strategies=[*scenario.strategies, *[c for c in chosen if c not in scenario.strategies]],
        )
    if sequence is not None and sequence not in scenario.sequences:
        raise UsageError(
            f"--sequence: no sequence named {sequence!r} in the scenario",
            did_you_mean(sequence, scenario.sequences)
            or f"Sequences: {', '.join(scenario.sequences)}.",
        )
    report = run_scenario(scenario, **run)
    known = {name: scenario.strategy(name) for name in scenario.known_strategies()}
    target = loader.load(scenario)
    explanations, notes = explain(
        report, known, Arguments(target.dim_sources(), target.param_names), chosen, sequence
    )
    return Explained(report, tuple(explanations), tuple(notes))
