"""The lines `suggest` prints, shared by every format. Reads only the suggestion records."""

from __future__ import annotations

from ...records.suggestion import Evaluation, Suggestion
from .. import cells

HEADERS = ("#", "candidate", "status", "compiles", "guards", "shape guards", "µs/call", "outputs")
#: candidates shown in the table (all are in the JSON)
SHOWN = 12


def us(e: Evaluation) -> str:
    if e.steady_state_us is None:
        return cells.NA
    spread = ""
    if e.steady_state_min_us is not None and e.steady_state_p90_us is not None:
        spread = f" ({e.steady_state_min_us:.0f}-{e.steady_state_p90_us:.0f})"
    return f"{e.steady_state_us:.1f}{spread}" + (" env" if e.form == "environment" else "")


def _marksus(s: Suggestion) -> str:
    """The recommendation's own marks timing, where its figures are the environment form's."""
    e = s.recommendation
    if e is None:
        return cells.NA
    return us(e) if e.form == "marks" else cells.num(e.marks_steady_state_us, "{:.1f}")


def outputs(e: Evaluation) -> str:
    return {True: "match", False: "DIFFER", None: cells.NA}[e.outputs_match]


def row(e: Evaluation, rank: int | str) -> list[str]:
    return [
        str(rank),
        e.name,
        e.status,
        f"≥{e.compiles}" if e.status == "cut" and e.compiles is not None else cells.num(e.compiles),
        cells.num(e.guard_count),
        cells.num(e.shape_env_guard_count),
        us(e),
        outputs(e),
    ]


def headline(s: Suggestion) -> str:
    where = f" ({s.scenario.path})" if s.scenario.path else ""
    how = (
        "exhaustive search: the optimum is proven"
        if s.optimal
        else f"{s.search} search: the best of what was measured, not proven optimal"
    )
    if not s.complete:
        limit = (
            f"--time-limit {s.time_limit:g} s"
            if s.stopped_by == "time_limit" and s.time_limit is not None
            else f"--budget {s.budget}"
        )
        how += f"; stopped by {limit}, see Notes for what was not measured"
    measured = (
        f"{s.evaluations} of {s.planned} candidates measured"
        if s.planned is not None and s.evaluations < s.planned
        else f"{s.evaluations} candidates measured"
    )
    return (
        f"Which marks? {s.scenario.name}{where} · sequences {', '.join(s.sequences)} · "
        f"{measured} ({how})"
    )


def recommendation(s: Suggestion) -> str:
    e = s.recommendation
    if e is None:
        return "No candidate could be measured."
    if e.status != "ok":
        return (
            f"No candidate ran cleanly: the best, {e.name}, is {e.status}"
            + (f" ({e.error})" if e.error else "")
            + "."
        )
    what = e.whole_function or (
        ", ".join(
            f"{m.kind} {m.name}:{m.dim}" + (f" ({m.symbol})" if m.symbol else "") for m in e.marks
        )
        or "no marks"
    )
    form = (
        " · fastest as the environment form (no per-call mark calls)"
        if e.form == "environment"
        else ""
    )
    covered = f" · {e.coverage_note}" if e.coverage_note else ""
    return (
        f"Recommendation: {what} · {cells.num(e.compiles)} compiles over "
        f"{len(s.sequences)} sequence(s), guards {cells.num(e.guard_count)}, shape guards "
        f"{cells.num(e.shape_env_guard_count)}, outputs {outputs(e)}{covered}{form}"
    )


def blocks(s: Suggestion) -> list[tuple[str, list[str]]]:
    out: list[tuple[str, list[str]]] = []
    if s.locations:
        out.append(
            (
                "Dims that vary over the points",
                [
                    f"{loc.name}:{loc.dim}"
                    + (f" follows {loc.symbol}" if loc.symbol else "")
                    + f" · sizes {', '.join(map(str, loc.sizes[:8]))}"
                    + (" ..." if len(loc.sizes) > 8 else "")
                    for loc in s.locations
                ],
            )
        )
    else:
        out.append(("Dims that vary over the points", ["none: no tensor dim changes size"]))
    if s.necessity:
        out.append(
            (
                "Why each mark is needed (measured)",
                [
                    f"{n.mark.kind} {n.mark.name}:{n.mark.dim} "
                    + ("dropped" if n.change == "dropped" else "as dynamic instead")
                    + f": {n.why}"
                    + (f"\n    {n.reason}" if n.reason else "")
                    for n in s.necessity
                ],
            )
        )
    if s.checks_with is not None:
        lines = [f"{s.checks_verdict}", *(f"  {c}" for c in s.checks_with.checks)]
        if s.checks_without is not None:
            lines.append(
                f"  with: {s.checks_with.compiles} compiles, guards "
                f"{cells.num(s.checks_with.guard_count)}, shape guards "
                f"{cells.num(s.checks_with.shape_env_guard_count)}, {us(s.checks_with)}"
                f" µs · without: {s.checks_without.compiles} compiles, guards "
                f"{cells.num(s.checks_without.guard_count)}, shape guards "
                f"{cells.num(s.checks_without.shape_env_guard_count)}, "
                f"{us(s.checks_without)} µs (both through the same wrapper)"
            )
        out.append(("torch._check lines", lines))
    if s.unfixable:
        out.append(
            (
                "What marking does not fix"
                if "search" not in s.skipped
                else "What no measured marking fixed (the search was stopped: one not tried may)",
                [
                    f"{u.sequence} call {u.call_index}: {u.reason}"
                    + (f" [{u.reason_kind}]" if u.reason_kind else "")
                    + f"\n    what would fix it (advice, not measured): {u.remedy}"
                    for u in s.unfixable
                ],
            )
        )
    if s.change is not None:
        out.append(("The change: code", list(s.change.code)))
        if s.change.environment:
            env = [f'{k}="{v}"' for k, v in s.change.environment.items()]
            if s.change.environment_note:
                env.append(f"# {s.change.environment_note}")
            measured = s.change.environment_measured
            if measured is not None and measured.steady_state_us is not None:
                env.append(f"# µs/call {us(measured)}; with the marks {_marksus(s)}")
            out.append(("The change: environment (instead of the marks)", env))
        elif s.change.environment_note:
            out.append(("The change: environment", [s.change.environment_note]))
        out.append(
            (
                "The change: scenario YAML (suggest --write adds it)",
                s.change.yaml.rstrip("\n").splitlines(),
            )
        )
    if s.notes:
        out.append(("Notes", list(s.notes)))
    return out


RANKED_BY = (
    "Ranked by: ok and outputs equal to eager, every size of a declared coverage range "
    "proved served (where one is), compiles, guards, shape guards, µs/call "
    "(median; equal when the (fastest-p90) ranges overlap; env: the marking's "
    "environment form, measured faster than its marks), dims changed, unbacked marks."
)
