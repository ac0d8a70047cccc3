"""The lines `diff` (and check's baseline part) prints, shared by every format. No torch."""

from __future__ import annotations

from ...analysis.baseline import Pair
from ...analysis.sequence import batch_only, run_points, sequence_label


def sequences(pairs: list[Pair], width: int = 100) -> list[str]:
    """What each compared sequence's points are, when more than B moves (a batch-only report
    reads as it always did), and where the two sides ran different points."""
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
