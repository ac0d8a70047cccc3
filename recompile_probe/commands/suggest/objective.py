"""The objective a candidate is ranked by, and a candidate's runs summed over the sequences.

In order: status ok; outputs equal to eager before outputs not compared (unknown is never a
match); with a declared coverage range, every size proved served; fewest compiles over every
sequence; fewest
guards of the newest entry (guard_count, then shape_env_guard_count); lowest steady-state
µs/call, where two candidates whose [fastest, p90] sample ranges overlap count as equally fast;
fewest changed dims (a whole-function strategy counts as every varying dim plus one); fewest
unbacked marks. No torch.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from ...reasons.text import without_comments
from ...records.run import Run
from ...records.suggestion import Evaluation, MarkChoice
from ...sizes.ranges import format_ranges


def aggregate(
    name: str,
    marks: tuple[MarkChoice, ...],
    whole: str | None,
    runs: list[Run],
    checks: tuple[str, ...],
    cost: int,
) -> Evaluation:
    def total(field: str) -> int | None:
        values = [getattr(r, field) for r in runs]
        return None if any(v is None for v in values) else sum(values)

    def largest(field: str) -> int | None:
        values = [getattr(r, field) for r in runs]
        return None if any(v is None for v in values) else max(values)

    def timing(field: str) -> float | None:
        values = [getattr(r, field) for r in runs]
        return None if any(v is None for v in values) else round(sum(values), 3)

    statuses = [r.status for r in runs]
    matches = [r.outputs_match for r in runs]
    status = next((s for s in ("unsupported", "error") if s in statuses), "ok")
    if status == "ok" and False in matches:
        status = "mismatch"
    outputs = False if False in matches else None if None in matches else True
    error = next((f"{r.error.type}: {r.error.message}" for r in runs if r.error), None)
    reasons = tuple(
        dict.fromkeys(
            without_comments(e.reason).splitlines()[0]
            for r in runs
            for e in r.compile_events
            if e.recompile and e.reason
        )
    )
    covered, note = _coverage(runs)
    return Evaluation(
        name,
        marks,
        whole,
        status,
        total("compiles"),
        total("recompiles"),
        total("graphs"),
        largest("guard_count"),
        largest("shape_env_guard_count"),
        timing("steady_state_us"),
        timing("steady_state_min_us"),
        timing("steady_state_p90_us"),
        outputs,
        reasons,
        checks,
        error,
        cost,
        covered=covered,
        coverage_note=note,
    )


def _coverage(runs: list[Run]) -> tuple[bool | None, str | None]:
    asked = [r.coverage for r in runs if r.coverage is not None]
    if not asked:
        return None, None
    for c in asked:
        if not c.proved:
            if not c.decided:
                return False, f"coverage n/a: {c.why_na}"
            if c.counterexample:
                at = ", ".join(f"{k} = {v}" for k, v in c.counterexample.items())
                first = c.unserved[0].outcome if c.unserved else "not served"
                return False, f"{at} not served ({first})"
            return False, f"{format_ranges(c.ranges)}: no miss found, {c.method} ({c.scope})"
    return True, f"proved over {format_ranges(asked[0].ranges)}"


def _inf(value: int | None) -> float:
    return math.inf if value is None else value


def primary(e: Evaluation) -> tuple:
    """The objective before speed: ok first, outputs verified equal before outputs that could
    not be compared (unknown: never taken for a match), then compiles, guards, shape-env
    guards."""
    return (
        e.status != "ok",
        e.outputs_match is not True,
        e.covered is False,
        _inf(e.compiles),
        _inf(e.guard_count),
        _inf(e.shape_env_guard_count),
    )


def same_speed(a: Evaluation, b: Evaluation) -> bool:
    """Within the measured noise: the [fastest, p90] sample ranges overlap (n/a never decides)."""
    a_min, a_p90 = a.steady_state_min_us, a.steady_state_p90_us
    b_min, b_p90 = b.steady_state_min_us, b.steady_state_p90_us
    if a_min is None or a_p90 is None or b_min is None or b_p90 is None:
        return True
    return a_min <= b_p90 and b_min <= a_p90


def unbacked_count(e: Evaluation) -> int:
    return sum(m.kind == "unbacked" for m in e.marks)


def ranked(evaluations: Iterable[Evaluation]) -> list[Evaluation]:
    """Best first, by the objective (see the module's docstring)."""
    evaluations = list(evaluations)
    fastest: dict[tuple, Evaluation] = {}
    for e in evaluations:
        held = fastest.get(primary(e))
        if held is None or (e.steady_state_us or math.inf) < (held.steady_state_us or math.inf):
            fastest[primary(e)] = e
    return sorted(
        evaluations,
        key=lambda e: (
            primary(e),
            not same_speed(e, fastest[primary(e)]),
            e.cost,
            unbacked_count(e),
            e.steady_state_us or math.inf,
            e.name,
        ),
    )


def worse(a: Evaluation, b: Evaluation) -> str | None:
    """How ``a`` is worse than ``b`` on the objective, in words; None when it is not."""
    if a.status == "cut" and b.status == "ok" and a.compiles is not None:
        if b.compiles is not None and a.compiles > b.compiles:  # compiles only grow
            return f"at least {a.compiles} compiles instead of {b.compiles} (cut there)"
    if a.status != "ok" and b.status == "ok":
        return f"status {a.status}" + (f" ({a.error})" if a.error else "")
    if a.status == b.status == "ok" and a.outputs_match is not True and b.outputs_match is True:
        return "outputs not compared with eager (verified for the other)"
    if a.status == b.status == "ok" and a.outputs_match is True and b.outputs_match is not True:
        return None
    if a.covered is False and b.covered is True:
        return f"not every size of the declared range is served ({a.coverage_note})"
    if a.covered is True and b.covered is False:
        return None
    for field, what in (
        ("compiles", "compile"),
        ("guard_count", "guard"),
        ("shape_env_guard_count", "shape-env guard"),
    ):
        x, y = getattr(a, field), getattr(b, field)
        if _inf(x) != _inf(y):
            if _inf(x) < _inf(y):
                return None
            return f"{x} {what}s instead of {y}" if x is not None else f"{what}s n/a"
    if not same_speed(a, b) and (a.steady_state_us or 0) > (b.steady_state_us or 0):
        return (
            f"{a.steady_state_us:.1f} µs/call instead of {b.steady_state_us:.1f} "
            "(beyond the measured spread)"
        )
    return None
