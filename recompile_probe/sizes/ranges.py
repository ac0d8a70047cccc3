"""Declared size ranges and the sets of sizes a coverage answer is made of. No torch.

A **range** gives some symbols an inclusive interval (``B=1..4096``, YAML ``{B: [1, 4096]}``);
its points are the box they span. A set of points inside it is written as **boxes**: each box an
inclusive interval per symbol, so one symbol's set is a list of runs (``[[0, 1], [3, 3]]``).
Points are ordered by the symbols in the range's order, first symbol first, so the smallest
point of a set is the same on every run.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from .points import SYMBOL, SizeError

#: symbol -> (lo, hi), inclusive, in the order written
Ranges = Mapping[str, tuple[int, int]]
#: one box: (lo, hi) per symbol of the range, in its order
Box = tuple[tuple[int, int], ...]

_ITEM = re.compile(r"^\s*([A-Z][A-Z0-9]*)\s*=\s*(\d+)\s*(?:\.\.|-|:)\s*(\d+)\s*$")


def parse_cover(text: str, key: str = "--cover") -> dict[str, tuple[int, int]]:
    """``B=1..4096,S=1..2048`` -> {"B": (1, 4096), "S": (1, 2048)}."""
    out: dict[str, tuple[int, int]] = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        found = _ITEM.match(item)
        if found is None:
            raise SizeError(
                key,
                f"cannot read {item!r} as a range",
                "Write SYMBOL=LO..HI, several joined by commas: B=1..4096,S=1..2048.",
            )
        name, lo, hi = found.group(1), int(found.group(2)), int(found.group(3))
        out[name] = _checked(key, name, lo, hi)
    if not out:
        raise SizeError(key, "names no range", "Write SYMBOL=LO..HI, e.g. B=1..4096.")
    return out


def parse_mapping(key: str, value: object) -> dict[str, tuple[int, int]]:
    """YAML ``{B: [1, 4096], S: [1, 2048]}`` -> {"B": (1, 4096), ...}."""
    if not isinstance(value, dict) or not value:
        raise SizeError(
            key, "expected a mapping of symbol -> [lo, hi]", "e.g. {B: [1, 4096], S: [1, 2048]}"
        )
    out: dict[str, tuple[int, int]] = {}
    for name, bounds in value.items():
        if not isinstance(name, str) or not SYMBOL.match(name):
            raise SizeError(f"{key}.{name}", f"{name!r} is not a size symbol", "e.g. B or S")
        if (
            not isinstance(bounds, list)
            or len(bounds) != 2
            or not all(isinstance(b, int) and not isinstance(b, bool) for b in bounds)
        ):
            raise SizeError(
                f"{key}.{name}",
                f"expected [lo, hi], two sizes, not {bounds!r}",
                "An inclusive range: [1, 4096].",
            )
        out[name] = _checked(f"{key}.{name}", name, bounds[0], bounds[1])
    return out


def _checked(key: str, name: str, lo: int, hi: int) -> tuple[int, int]:
    if lo < 0 or hi < lo:
        raise SizeError(
            key, f"{name}: {lo}..{hi} is not a range of sizes", "Sizes are >= 0 and lo <= hi."
        )
    return lo, hi


def count(ranges: Ranges) -> int:
    total = 1
    for lo, hi in ranges.values():
        total *= hi - lo + 1
    return total


def format_ranges(ranges: Ranges) -> str:
    """ "B ∈ [1, 4096]", "B ∈ [1, 4096] × S ∈ [1, 2048]"."""
    return " × ".join(f"{name} ∈ [{lo}, {hi}]" for name, (lo, hi) in ranges.items())


def format_box(names: Sequence[str], box: Box) -> str:
    """ "0..1", "B 0..1, S 7" for several symbols."""

    def one(lo: int, hi: int) -> str:
        return str(lo) if lo == hi else f"{lo}..{hi}"

    if len(names) == 1:
        return one(*box[0])
    return ", ".join(f"{n} {one(*b)}" for n, b in zip(names, box))


def samples(lo: int, hi: int, extra: Iterable[int] = ()) -> list[int]:
    """The sizes a sampled answer is checked at: the ends, 0, 1, 2, powers of two and their
    neighbours, small odd primes, a spread across the range, and ``extra`` (the sequence's own
    sizes): where 0/1 specialisation, parity, duck sizing and limits show."""
    picks = {lo, hi, 0, 1, 2, 3, 5, 7, 11, 13, 17, 31, 97, 127, 257, 509, 1021, *extra}
    power = 4
    while power <= hi + 1:
        picks.update((power - 1, power, power + 1))
        power *= 2
    span = hi - lo
    picks.update(lo + span * k // 16 for k in range(17))
    return sorted(p for p in picks if lo <= p <= hi)


def points(ranges: Ranges) -> Iterable[tuple[int, ...]]:
    """Every point of the range, smallest first."""
    return itertools.product(*(range(lo, hi + 1) for lo, hi in ranges.values()))


def runs(flags: Iterable[tuple[int, bool]]) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
    """(size, served) in increasing size -> (served runs, unserved runs), each inclusive."""
    served: list[tuple[int, int]] = []
    unserved: list[tuple[int, int]] = []
    for size, ok in flags:
        into = served if ok else unserved
        if into and into[-1][1] == size - 1:
            into[-1] = (into[-1][0], size)
        else:
            into.append((size, size))
    return served, unserved


@dataclass(frozen=True)
class Cells:
    """A range cut into cells at given boundaries, per symbol: for set algebra on boxes."""

    names: tuple[str, ...]
    cuts: tuple[tuple[tuple[int, int], ...], ...]  #: per symbol, its cells' (lo, hi)

    @classmethod
    def of(cls, ranges: Ranges, boxes: Iterable[Box]) -> Cells:
        names = tuple(ranges)
        starts: list[set[int]] = [{lo} for lo, _ in ranges.values()]
        for box in boxes:
            for i, (lo, hi) in enumerate(box):
                starts[i].update((lo, hi + 1))
        cuts = []
        for i, (lo, hi) in enumerate(ranges.values()):
            edges = sorted(s for s in starts[i] if lo <= s <= hi)
            cuts.append(tuple(zip(edges, [e - 1 for e in edges[1:]] + [hi])))
        return cls(names, tuple(cuts))

    def all(self) -> Iterable[Box]:
        return itertools.product(*self.cuts)


def inside(box: Box, cell: Box) -> bool:
    return all(blo <= clo and chi <= bhi for (blo, bhi), (clo, chi) in zip(box, cell))


def merge(boxes: list[Box]) -> list[Box]:
    """Adjacent cells joined along the last symbol, then along the first (enough for a
    readable list; every point stays in exactly one box)."""
    out: list[Box] = []
    for box in sorted(boxes):
        if out:
            prev = out[-1]
            if prev[:-1] == box[:-1] and prev[-1][1] + 1 == box[-1][0]:
                out[-1] = (*prev[:-1], (prev[-1][0], box[-1][1]))
                continue
        out.append(box)
    if len(out) > 1 and all(len(b) > 1 for b in out):
        joined: list[Box] = []
        for box in sorted(out, key=lambda b: (b[1:], b[0])):
            if joined:
                prev = joined[-1]
                if prev[1:] == box[1:] and prev[0][1] + 1 == box[0][0]:
                    joined[-1] = ((prev[0][0], box[0][1]), *box[1:])
                    continue
            joined.append(box)
        out = sorted(joined)
    return out
