"""Cost notes: facts about the timings that a verdict alone does not say. No torch."""

from __future__ import annotations

from ..records.run import Run
from .verdicts import NOISE_RATIO, eligible, noisy, noisy_line


def slow_winner(runs: list[Run], ratio: float = 1.2) -> str | None:
    """A note when a strategy with the fewest compiles is the slowest to run (by >= ratio).

    "Slowest" is a claim about every timed run: none is made while any of them is too noisy to
    rank (analysis.noisy); ``noise_note`` says which.
    """
    timed = [r for r in runs if eligible(r, runs) and r.steady_state_us is not None]
    if len(timed) < 2 or any(noisy(r) for r in timed):
        return None
    us = {id(r): r.steady_state_us or 0.0 for r in timed}  # None filtered out above
    fewest = min(r.compiles or 0 for r in timed)
    slowest = max(timed, key=lambda r: us[id(r)])
    fastest = min(timed, key=lambda r: us[id(r)])
    if (
        slowest.compiles == fewest
        and any(r.compiles != fewest for r in timed)
        and us[id(slowest)] >= ratio * us[id(fastest)]
    ):
        return (
            f"{slowest.strategy} compiles least ({slowest.compiles}) but runs slowest: "
            f"{slowest.steady_state_us:.1f} µs/call vs {fastest.steady_state_us:.1f} "
            f"({fastest.strategy})."
        )
    return None


def noise_note(runs: list[Run]) -> str | None:
    """Which runs' µs/call is too noisy to rank on, with the spread that says so."""
    loud = [r for r in runs if r.status == "ok" and noisy(r)]
    if not loud:
        return None
    return (
        f"µs/call too noisy to rank (~; median > {NOISE_RATIO}x the fastest "
        f"sample): {'; '.join(noisy_line(r) for r in loud)}. Such a figure decides "
        "no winner; rerun with OMP_NUM_THREADS=1 on a quiet machine, or more repeats."
    )
