"""The lines `check` prints, shared by every format. No torch."""

from __future__ import annotations

from ...analysis.check import Outcome


def summary(outcome: Outcome) -> str:
    runs = sum(len(r.runs) for r in outcome.reports)
    parts = [
        f"{len(outcome.reports)} scenario{'s' * (len(outcome.reports) != 1)}, {runs} runs, "
        f"{outcome.budgets_checked} budgets checked: {len(outcome.violations())} violated"
        + (f", {len(outcome.sampled)} held on samples only" if outcome.sampled else "")
    ]
    if outcome.changes or outcome.without_baseline:
        parts.append(
            f"baseline: {len(outcome.regressions())} regressions, "
            f"{len(outcome.improvements())} improvements"
            + (" (accepted: baseline updated)" if outcome.baseline_accepted else "")
        )
    if outcome.failures:
        parts.append(f"{len(outcome.failures)} scenario(s) could not run")
    return "; ".join(parts) + "."


def sampled(outcome: Outcome) -> list[str]:
    """A line per budget that held on samples only: what was not proved."""
    return [
        f"{h.scenario} / {h.sequence} / {h.strategy}"
        + ("" if h.rank is None else f" (rank {h.rank})")
        + f": {h.budget} held on samples only, not a "
        f"proof: no sampled size was unserved, and between samples nothing is known"
        for h in outcome.sampled
    ]
