"""A run judged by its budgets (scenario/budgets.py): which are broken, and why. No torch."""

from __future__ import annotations

from collections.abc import Iterable

from ..reasons.text import without_comments
from ..records.coverage import Coverage
from ..records.ranks import RankRuns
from ..records.run import Run, Violation
from ..scenario.budgets import Budget
from ..scenario.keys import KEYS, MAX_KEYS, RANGE_KEYS, RANK_KEYS
from ..sizes.ranges import format_box, format_ranges
from .ranks import agreement, divergence
from .sequence import at_call, moved, transitions


def effective(run: Run, budgets: Iterable[Budget]) -> dict[str, Budget]:
    """key -> the budget that governs it for this run."""
    chosen: dict[str, Budget] = {}
    for budget in budgets:
        if budget.applies_to(run):
            held = chosen.get(budget.key)
            if held is None or budget.rank >= held.rank:
                chosen[budget.key] = budget
    return chosen


def _recompile_reasons(run: Run) -> tuple[str, ...]:
    return tuple(
        f"call {t.call_index} ({moved(run, t)}): "
        f"{without_comments(t.reason) if t.reason else 'n/a'}"
        for t in transitions(run)
    )


def _compiles(run: Run) -> tuple[str, ...]:
    """Every compile that max_compiles counts, in order: the recompiles with their reasons, and
    the first compiles and failed attempts that make up the rest of the count."""
    reasons = {t.compile_id: t for t in transitions(run)}
    out = []
    for e in run.compile_events:
        at = f"call {e.call_index}" if e.call_index is not None else "a call"
        what = f"{e.compile_id} of {e.function or 'a frame'}"
        t = reasons.get(e.compile_id)
        if e.failed:
            said = (e.fail_reason or "").strip().splitlines()
            error = f"{e.fail_type}: {said[0]}" if said else e.fail_type
            out.append(f"{at}: {what} failed ({error or 'n/a'})")
        elif t is not None:
            reason = without_comments(t.reason) if t.reason else "n/a"
            out.append(f"call {t.call_index} ({moved(run, t)}): {reason}")
        else:
            out.append(f"{at}: {what}, {'a recompile' if e.recompile else 'first compile'}")
    return tuple(out)


def _why(run: Run, key: str) -> tuple[str, ...]:
    if key == "outputs_match":
        return tuple(
            f"call {c.index} ({at_call(run, c.index)}): "
            f"{'differs from eager' if c.outputs_match is False else 'not compared'}"
            + (f" ({c.outputs_detail})" if c.outputs_detail else "")
            for c in run.calls
            if c.outputs_match is not True and c.event != "error"
        )
    if key == "status" and run.error is not None:
        return (f"{run.error.type}: {run.error.message}",)
    if key == "max_compiles":
        return _compiles(run)
    return _recompile_reasons(run)


def evaluate(
    run: Run, budgets: Iterable[Budget], rank_runs: RankRuns | None = None
) -> tuple[Violation, ...]:
    """``rank_runs``: the ranks compared, for the budgets judged across ranks (``RANK_KEYS``),
    whose violation is written once, on the lowest rank's run."""
    violations = []
    for key, budget in effective(run, budgets).items():
        if key in RANK_KEYS:
            compared = agreement(rank_runs, run)
            if compared is not None and str(run.rank) != min(compared.by_rank, key=int):
                continue
            actual = None if compared is None else compared.agree
            if actual != budget.limit:
                why: tuple[str, ...] = ()
                if compared is not None:
                    why = (divergence(compared),) + ((compared.note,) if compared.note else ())
                violations.append(Violation(key, budget.limit, actual, why, budget.source))
            continue
        if key in RANGE_KEYS:
            broken_at = uncovered(run.coverage, budget.limit)
            if broken_at is not None:
                violations.append(
                    Violation(key, budget.limit, broken_at[0], broken_at[1], budget.source)
                )
            continue
        if key in MAX_KEYS:
            actual = getattr(run, MAX_KEYS[key])
            broken = actual is None or actual > budget.limit
        else:
            actual = getattr(run, key)
            broken = actual != budget.limit
        if broken:
            violations.append(Violation(key, budget.limit, actual, _why(run, key), budget.source))
    return tuple(sorted(violations, key=lambda v: KEYS.index(v.budget)))


#: what a call at an unserved size does, as a verb
_DOES = {"recompile": "recompiles", "eager": "runs eagerly", "raises": "raises"}


def uncovered(
    coverage: Coverage | None, ranges: dict[str, tuple[int, int]]
) -> tuple[str | None, tuple[str, ...]] | None:
    """Why a `no_recompile_in` budget over ``ranges`` is broken: (the smallest size that is not
    served, what happens there, its guard and user line); None where it holds. A range that was
    not decided breaks it (a budget that cannot be verified fails); a sampled answer with no
    miss holds, and the report says it was sampled."""
    if coverage is None or not coverage.decided:
        said = coverage.why_na if coverage is not None else None
        return None, (f"coverage n/a: {said or 'no coverage was decided'}",)
    outside = [
        f"{s} ∈ [{lo}, {hi}]"
        for s, (lo, hi) in ranges.items()
        if s not in coverage.ranges or lo < coverage.ranges[s][0] or hi > coverage.ranges[s][1]
    ]
    if outside:
        return None, (
            f"coverage n/a: {', '.join(outside)} lies outside the range decided "
            f"({format_ranges(coverage.ranges)})",
        )
    if coverage.scope == "top frame only":
        return None, (
            "coverage n/a: only the target's own frame was decided (other frames were compiled "
            "and no real call could sample them)",
        )
    for failure in coverage.raises_at_runtime or ():
        if all(
            s not in ranges or not (hi < ranges[s][0] or lo > ranges[s][1])
            for s, (lo, hi) in failure.sizes.items()
        ):
            at = ", ".join(f"{s} {lo}..{hi}" for s, (lo, hi) in failure.sizes.items())
            return "served but raises", (f"{at}: the graph asserts {failure.assertion}",)
    names = list(coverage.ranges)
    for miss in coverage.unserved:
        if not all(
            s not in ranges or not (hi < ranges[s][0] or lo > ranges[s][1])
            for s, (lo, hi) in miss.sizes.items()
        ):
            continue
        first = tuple(
            max(lo, ranges[s][0]) if s in ranges else lo for s, (lo, hi) in miss.sizes.items()
        )
        at = format_box(names, tuple((v, v) for v in first))
        label = at if len(names) > 1 else f"{names[0]} = {at}"
        why: list[str] = [
            f"{label} is not served ({miss.outcome}); unserved: "
            f"{format_box(names, tuple(miss.sizes.values()))}"
        ]
        if miss.guard:
            why.append(
                f"failing guard: {miss.guard}"
                + (f" [{miss.reason_kind}]" if miss.reason_kind else "")
            )
        if miss.origin:
            where = f"{miss.origin.file}:{miss.origin.line}"
            code = miss.origin.code
            why.append(f"user line: {where}" + (f"  {code}" if code else ""))
        if coverage.method == "sampled":
            why.append("checked on samples only (method sampled)")
        return f"{label} {_DOES.get(miss.outcome, miss.outcome)}", tuple(why)
    # nothing listed meets the budget's range: whether the lists say so of all of it (a
    # sampled answer holds where no sample missed, and the report says it was sampled)
    if coverage.method == "sampled":
        return None
    if not coverage.unserved_listed_for(ranges):
        return None, (
            "coverage n/a: the unserved list stops before this range ends (a range this large "
            "has more unserved parts than a report lists); decide the budget's own range "
            "(--cover) to judge it",
        )
    if not coverage.raises_listed_for(ranges):
        unknown = (
            "runtime assertions were checked at sampled sizes only"
            if coverage.raises_sampled
            else "the list of served parts that raise stops before this range ends"
        )
        return None, (
            f"coverage n/a: {unknown}; decide the budget's own range (--cover) to judge it",
        )
    return None


def held_on_samples(run: Run, budgets: Iterable[Budget]) -> tuple[str, ...]:
    """The `no_recompile_in` budgets of ``run`` that held on samples only (no sampled size was
    unserved; between samples nothing is known), each as "no_recompile_in B ∈ [2, 64]"."""
    c = run.coverage
    if c is None or c.method != "sampled":
        return ()
    broken = {v.budget for v in run.violations}
    return tuple(
        f"{key} {format_ranges(budget.limit)}"
        for key, budget in effective(run, budgets).items()
        if key in RANGE_KEYS and key not in broken
    )


def describe(violation: Violation) -> str:
    """One line, e.g. "max_recompiles: 1 > 0"."""
    if violation.budget in RANGE_KEYS:
        actual = "n/a" if violation.actual is None else violation.actual
        return f"{violation.budget} {format_ranges(violation.limit)}: {actual}"
    actual = "n/a" if violation.actual is None else violation.actual
    if violation.budget in MAX_KEYS:
        return f"{violation.budget}: {actual} > {violation.limit}"
    return f"{violation.budget}: {actual} (expected {violation.limit})"
