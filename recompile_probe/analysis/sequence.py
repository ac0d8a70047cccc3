"""How a run's sequence reads: its points, the point of each call, what moved at a recompile.
Every view spells points through these and sizes/points.py. No torch."""

from __future__ import annotations

from dataclasses import dataclass

from ..reasons.parse import classify
from ..records.run import Run
from ..sizes.points import BATCH, Point, format_change, format_point, format_sequence


@dataclass(frozen=True)
class Transition:
    """One recompile, placed in the sequence."""

    strategy: str
    call_index: int
    batch_before: int | None
    batch_after: int
    reason: str | None
    compile_id: str | None
    kind: str | None = None  #: reasons.kinds.KINDS
    #: what changed between the previous call and this one: "1 → 2", "S 7 → 33", ...
    change: str = ""


#: A steady-state median above this multiple of the fastest sample is too noisy to rank on: stalls
#: (e.g. ~250 ms thread-pool stalls on a loaded 2-core box) reached the median itself. Measured on


def transitions(run: Run) -> list[Transition]:
    def point(i: int) -> Point | None:
        sizes = run.calls[i].sizes if 0 <= i < len(run.calls) else None
        if sizes:
            return Point.of(sizes)
        if 0 <= i < len(run.calls):
            return Point.batch(run.calls[i].batch_size)
        return Point.batch(run.sequence[i]) if 0 <= i < len(run.sequence) else None

    def batch(p: Point | None) -> int | None:
        if p is None:
            return None
        return p.get("B") if p.get("B") is not None else p.items[0][1]

    out = []
    for event in run.compile_events:
        if not event.recompile or event.call_index is None:
            continue
        i = event.call_index
        before, after = point(i - 1) if i > 0 else None, point(i)
        kind = event.reason_kind
        if kind is None and event.reason:  # a report written before kinds existed
            detail = classify(event.reason)
            kind = detail.kind if detail is not None else None
        out.append(
            Transition(
                run.strategy,
                i,
                batch(before),
                batch(after) or 0,
                event.reason,
                event.compile_id,
                kind,
                format_change(before, after) if after is not None else "",
            )
        )
    return out


def run_points(run: Run) -> list[Point]:
    """The sequence's points; a report written before size symbols has batch sizes only."""
    if run.points:
        return [Point.of(p) for p in run.points]
    return [Point.batch(b) for b in run.sequence]


def points_of(runs: list[Run]) -> list[Point]:
    """The points of a sequence shared by these runs: from a run that recorded them (a run lost
    in a crashed worker may carry only the batch sizes)."""
    with_points = next((r for r in runs if r.points), runs[0] if runs else None)
    return run_points(with_points) if with_points is not None else []


def batch_only(points: list[Point]) -> bool:
    """Only B moves: every view then reads exactly as it did before size symbols."""
    return all(p.symbols == (BATCH,) for p in points)


def call_point(run: Run, index: int) -> Point | None:
    if not 0 <= index < len(run.calls):
        return None
    call = run.calls[index]
    return Point.of(call.sizes) if call.sizes else Point.batch(call.batch_size)


def stepped(run: Run) -> bool:
    """A driver called the target more than once in some point."""
    return any(c.step for c in run.calls)


def named(point: Point) -> str:
    """A point with its symbols always named: "B 2", "B 2, S 7"."""
    return f"{BATCH} {point.get(BATCH)}" if point.symbols == (BATCH,) else format_point(point)


def at_call(run: Run, index: int) -> str:
    """The point of one call: "B 2", "B 2, S 7"; a driver's later calls in a point add their
    step: "B 2, S 7, step 1"."""
    point = call_point(run, index)
    if point is None:
        return "?"
    step = run.calls[index].step
    return named(point) + (f", step {step}" if step else "")


def moved(run: Run, t: Transition) -> str:
    """What moved at a recompile: "B 1 → 2", "S 7 → 33", "B 1 → 2, S 7 → 33"; when the call
    before it is in the same point (a driver), the point did not move: "step 1 at B 2, S 7"."""
    i, point = t.call_index, call_point(run, t.call_index)
    if (
        point is not None
        and run.calls[i].step
        and i > 0
        and run.calls[i - 1].point_index == run.calls[i].point_index
    ):
        return f"step {run.calls[i].step} at {named(point)}"
    if point is None or point.symbols == (BATCH,):
        return f"{BATCH} {'?' if t.batch_before is None else t.batch_before} → {t.batch_after}"
    return t.change


def sequence_label(points: list[Point], width: int = 72) -> str:
    """The sequence in one line: "B = 1 → 2 → 8" (never abbreviated, as always), or its points
    "(B 1, S 7) → (B 1, S 33) → …" abbreviated in the middle to ``width``."""
    if batch_only(points):
        return "B = " + " → ".join(str(p.get(BATCH)) for p in points)
    return format_sequence(points, max(width, 24))
