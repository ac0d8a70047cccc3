"""What `diff` (and check's baseline part) shows, built once for every format: a row per
compared run with its old and new figures, and the points of each compared sequence. No torch."""

from __future__ import annotations

from dataclasses import dataclass

from ...analysis import baseline
from ...analysis.sequence import batch_only, run_points, sequence_label
from .. import cells

HEADERS = (
    "scenario",
    "sequence",
    "strategy",
    *(label for _, label in baseline.METRICS),
    "status",
    "outputs",
)


@dataclass(frozen=True)
class Figure:
    old: str
    new: str
    #: "regression", "improvement", or None where the change is neither (or there is none)
    kind: str | None = None

    @property
    def same(self) -> bool:
        return self.old == self.new


@dataclass(frozen=True)
class Row:
    key: tuple[str, str, str]
    #: "only in old" / "only in new" when one side lacks the run (then no figures)
    side: str | None
    #: one per HEADERS after the key: the metrics, the status, the outputs
    figures: tuple[Figure, ...]

    @property
    def changed(self) -> bool:
        return self.side is not None or any(f.kind for f in self.figures)


@dataclass(frozen=True)
class DiffView:
    rows: tuple[Row, ...]
    #: the compared sequences' points, where more than B moves or the sides differ
    sequences: tuple[str, ...]
    regressions: int
    improvements: int
    tolerance: int

    def totals(self) -> str:
        worse, better = self.regressions, self.improvements
        return (
            f"{worse} regression{'s' * (worse != 1)}, {better} improvement"
            f"{'s' * (better != 1)} (tolerance {self.tolerance})."
        )


def view(
    pairs: list[baseline.Pair], tolerance: int = 0, width: int = 100, only_changed: bool = False
) -> DiffView:
    """``only_changed`` (check's baseline part): the runs that changed or that one side lacks,
    and the points of the sequences whose runs changed."""
    rows = []
    changed = []
    worse = better = 0
    for p in pairs:
        if p.old is None or p.new is None:
            side = "only in new" if p.old is None else "only in old"
            rows.append(Row(p.key, side, ()))
            continue
        found = baseline.changes(p, tolerance)
        worse += sum(c.kind == "regression" for c in found)
        better += sum(c.kind != "regression" for c in found)
        kinds = {c.metric: c.kind for c in found}
        if found:
            changed.append(p)
        elif only_changed:
            continue
        figures = [
            _figure(getattr(p.old, f), getattr(p.new, f), kinds.get(label))
            for f, label in baseline.METRICS
        ]
        figures.append(_figure(p.old.status, p.new.status, kinds.get("status")))
        figures.append(
            _figure(cells.outputs(p.old), cells.outputs(p.new), kinds.get("outputs_match"))
        )
        rows.append(Row(p.key, None, tuple(figures)))
    shown = changed if only_changed else pairs
    return DiffView(tuple(rows), tuple(sequences(shown, width)), worse, better, tolerance)


def _figure(old: object, new: object, kind: str | None) -> Figure:
    return Figure(cells.num(old), cells.num(new), kind)


def sequences(pairs: list[baseline.Pair], width: int = 100) -> list[str]:
    """What each compared sequence's points are, when more than B moves (a batch-only report
    shows none), and where the two sides ran different points."""
    seen: dict[tuple[str, str], tuple[list, list]] = {}
    for p in pairs:
        key = p.key[:2]
        old, new = seen.get(key, ([], []))
        old = old or (run_points(p.old) if p.old is not None else [])
        new = new or (run_points(p.new) if p.new is not None else [])
        seen[key] = (old, new)
    lines = []
    for (scenario, name), (old, new) in seen.items():
        if all(batch_only(side) for side in (old, new) if side):
            continue
        label = f"Sequence {name}" + (f" ({scenario})" if len({k[0] for k in seen}) > 1 else "")
        if not old or not new or old == new:
            head = f"{label}: "
            lines.append(head + sequence_label(old or new, width - len(head)))
        else:
            lines.append(f"{label} differs between the two sides:")
            lines += [
                f"  {side} " + sequence_label(points, width - 6)
                for side, points in (("old", old), ("new", new))
            ]
    return lines
