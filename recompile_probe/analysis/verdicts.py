"""Verdicts: which run of a sequence wins, and one line that says why. No torch."""

from __future__ import annotations

import math
from collections.abc import Sequence

from ..records.run import Run
from ..sizes.ranges import format_ranges
from .sequence import batch_only, moved, points_of, sequence_label, transitions

NOISE_RATIO = 1.3


def too_noisy(min_us: float | None, median_us: float | None) -> bool | None:
    """median > NOISE_RATIO x min; None when either figure is missing."""
    if min_us is None or median_us is None or min_us <= 0:
        return None
    return median_us > NOISE_RATIO * min_us


def noisy(run: Run) -> bool:
    """The run's µs/call must not rank it: its own flag, else judged from its min and median;
    False where neither says (a report without the spread ranks by its µs/call)."""
    flag = run.steady_state_noisy
    if flag is None:
        flag = too_noisy(run.steady_state_min_us, run.steady_state_us)
    return bool(flag)


def compiled_nothing(run: Run) -> bool:
    """It finished without one compile (a stance that ran everything eagerly, a target Dynamo
    skipped): its 0 compiles measure nothing torch.compile did, so it is no candidate."""
    return run.status == "ok" and run.compiles == 0


def _figures(run: Run) -> tuple:
    """What a strategy's effect shows in: its compiles, failures, graphs and the guards of each
    cache entry."""
    return (
        run.compiles,
        run.failed_compiles,
        run.recompiles,
        run.graphs,
        run.cache_entries,
        tuple((e.guard_count, e.shape_env_guard_count) for e in run.entries),
    )


def no_effect(run: Run, runs: Sequence[Run] = ()) -> str | None:
    """The run's "no effect" (its guards and failures named none of its sources), kept only
    where it also made the same figures as the same sequence's default run; a strategy whose
    figures differ took effect, whatever its guards' text says. Without a default run of that
    sequence in ``runs`` the guards' word stands."""
    if not run.no_effect:
        return None
    default = next(
        (
            r
            for r in runs
            if r.strategy == "default" and r.sequence_name == run.sequence_name and r is not run
        ),
        None,
    )
    if default is not None and default.status == "ok" and _figures(default) != _figures(run):
        return None
    return run.no_effect


def took_effect(runs: Sequence[Run]) -> list[str]:
    """The runs whose guards named none of their sources but whose figures differ from the
    default run's: said, since the run's own note claims no effect."""
    return [r.strategy for r in runs if r.no_effect and not no_effect(r, runs)]


def eligible(run: Run, runs: Sequence[Run] = ()) -> bool:
    """A run that can win: it finished, compiled, its outputs did not differ from eager, and the
    strategy took effect (sources that matched nothing leave the default run, relabelled);
    ``runs``: the report's runs, against whose default run "no effect" is checked."""
    return (
        run.status == "ok"
        and run.outputs_match is not False
        and run.compiles is not None
        and not no_effect(run, runs)
        and not compiled_nothing(run)
    )


def _value(x: float | None) -> float:
    return math.inf if x is None else x


def _key(run: Run) -> tuple[float, ...]:
    # Outputs verified equal rank before outputs that could not be compared (unknown is never
    # taken for a match); then "fewest guards": guard_count, then the symbolic guards it holds.
    return (
        float(run.outputs_match is not True),
        coverage_rank(run),
        _value(run.compiles),
        _value(run.guard_count),
        _value(run.shape_env_guard_count),
    )


def coverage_rank(run: Run) -> float:
    """With a declared range, proven coverage ranks before the compile count: two strategies
    with 1 compile on the sequence differ if one recompiles at B = 0. 0: proved (or no range
    asked), 1: no miss found on samples, 2: a size is not served or nothing was decided."""
    c = run.coverage
    if c is None or c.proved:
        return 0.0
    return 1.0 if c.decided and not c.unserved else 2.0


def tied(runs: list[Run]) -> list[Run]:
    """The eligible runs that only µs/call could separate: fewest compiles, then guards."""
    candidates = [r for r in runs if eligible(r, runs)]
    if not candidates:
        return []
    top = min(_key(r) for r in candidates)
    return [r for r in candidates if _key(r) == top]


def best(runs: list[Run]) -> Run | None:
    """Fewest compiles, then fewest guards, then the lowest steady-state cost; errors excluded.

    µs/call decides a tie only when no tied run's measurement is too noisy to rank on; otherwise
    the first tied run in scenario order wins and the verdict says why.
    """
    top = tied(runs)
    if not top:
        return None
    if any(noisy(r) for r in top):
        return top[0]
    return min(top, key=lambda r: _value(r.steady_state_us))


def noisy_line(run: Run) -> str:
    """'name (min a, median b, p90 c µs)' for a run whose µs/call is too noisy to rank."""
    figures = ", ".join(
        f"{k} {v:.1f}"
        for k, v in (
            ("min", run.steady_state_min_us),
            ("median", run.steady_state_us),
            ("p90", run.steady_state_p90_us),
        )
        if v is not None
    )
    return f"{run.strategy} ({figures} µs)" if figures else run.strategy


def plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def verdict(sequence_name: str, runs: list[Run]) -> str:
    """One line: the winner and why, who recompiled, who failed."""
    points = points_of(runs)
    if batch_only(points):
        head = f"{sequence_name} {list(runs[0].sequence if runs else ())}: "
    else:
        head = f"{sequence_name} {sequence_label(points, 60)}: "
    winner = best(runs)
    idle = [r.strategy for r in runs if compiled_nothing(r)]
    not_candidates = ""
    if idle:
        noun = "a candidate" if len(idle) == 1 else "candidates"
        not_candidates = f"{', '.join(idle)} compiled nothing: not {noun}"
    if winner is None:
        if idle:
            return head + f"no strategy compiled and finished matching eager ({not_candidates})."
        return head + "no strategy finished with outputs matching eager."
    ties = [r for r in runs if eligible(r, runs) and r.compiles == winner.compiles]
    compiles = winner.compiles or 0  # an eligible run finished: its count is known
    parts = [f"{winner.strategy} wins with {plural(compiles, 'compile')}"]
    detail = []
    if winner.guard_count is not None:
        detail.append(f"{plural(winner.guard_count, 'guard')}")
    if winner.shape_env_guard_count is not None:
        detail.append(f"{plural(winner.shape_env_guard_count, 'shape guard')}")
    if winner.steady_state_us is not None:
        detail.append(
            f"{winner.steady_state_us:.1f} µs/call"
            + (", too noisy to rank" if noisy(winner) else "")
        )
    if winner.coverage is not None and winner.coverage.proved:
        detail.append(f"proved over {format_ranges(winner.coverage.ranges)}")
    if detail:
        parts[0] += f" ({', '.join(detail)})"
    fewer = [
        r.strategy
        for r in runs
        if eligible(r, runs)
        and coverage_rank(r) > coverage_rank(winner)
        and _value(r.compiles) < compiles
    ]
    if fewer:
        parts.append(
            f"{', '.join(fewer)} compiled less but not every size of the declared range is "
            "proved served"
        )
    ties = [r for r in ties if coverage_rank(r) == coverage_rank(winner)]
    others = [r.strategy for r in ties if r is not winner]
    if others:
        parts.append(f"also {plural(compiles, 'compile')}: {', '.join(others)}")
    unranked = [r for r in tied(runs) if noisy(r)]
    if len(tied(runs)) > 1 and unranked:
        parts.append(
            f"µs/call too noisy to rank ({', '.join(r.strategy for r in unranked)}: "
            f"median > {NOISE_RATIO}x min), so {winner.strategy} wins the tie by "
            "scenario order"
        )
    recompiling = [r for r in runs if r.recompiles]
    if recompiling:
        first = transitions(recompiling[0])
        where = ""
        if first and first[0].batch_before is not None:
            where = f" (first at call {first[0].call_index}, {moved(recompiling[0], first[0])})"
        parts.append(f"recompile: {', '.join(r.strategy for r in recompiling)}{where}")
    if winner.outputs_match is None:
        parts.append(f"{winner.strategy}'s outputs were not compared with eager")
    mismatched = [r.strategy for r in runs if r.status == "ok" and r.outputs_match is False]
    if mismatched:
        parts.append(f"outputs differ from eager: {', '.join(mismatched)}")
    idle = [r.strategy for r in runs if r.status == "ok" and no_effect(r, runs)]
    if idle:
        parts.append(f"no effect (matched no source): {', '.join(idle)}")
    acted = took_effect(runs)
    if acted:
        parts.append(
            f"{', '.join(acted)}: no guard named its sources, but its figures differ from "
            "default's: it took effect"
        )
    failed = [r.strategy for r in runs if r.status == "error"]
    if failed:
        parts.append(f"error: {', '.join(failed)}")
    if not_candidates:
        parts.append(not_candidates)
    return head + "; ".join(parts) + "."
