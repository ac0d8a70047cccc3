"""Size symbols, points and sequences: the vocabulary of "which sizes move". No torch.

A **symbol** is a name of capital letters and digits written in a tensor spec's shape (``B``,
``S``, ``H2``); ``B`` is the batch size. A **point** gives every symbol of a scenario a size; a
sequence is a list of points. The scenario validator parses with these functions and every
report formats points with them, so one spelling holds everywhere.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import did_you_mean, type_name

BATCH = "B"
SYMBOL = re.compile(r"^[A-Z][A-Z0-9]*$")


def is_symbol(token: Any) -> bool:
    return isinstance(token, str) and SYMBOL.match(token) is not None


@dataclass(frozen=True)
class Point:
    """Sizes of every symbol at one call, in the scenario's symbol order."""

    items: tuple[tuple[str, int], ...]

    @classmethod
    def of(cls, sizes: Mapping[str, int], order: Sequence[str] | None = None) -> Point:
        names = list(order) if order is not None else list(sizes)
        return cls(tuple((name, int(sizes[name])) for name in names if name in sizes))

    @classmethod
    def batch(cls, size: int) -> Point:
        return cls(((BATCH, int(size)),))

    def to_dict(self) -> dict[str, int]:
        return dict(self.items)

    def get(self, symbol: str) -> int | None:
        return next((size for name, size in self.items if name == symbol), None)

    @property
    def symbols(self) -> tuple[str, ...]:
        return tuple(name for name, _ in self.items)

    def __str__(self) -> str:
        return format_point(self)


def format_point(point: Point) -> str:
    """ "B 2, S 7"; a batch-only point is just its size, as reports always showed it."""
    if point.symbols == (BATCH,):
        return str(point.get(BATCH))
    return ", ".join(f"{name} {size}" for name, size in point.items)


def format_change(before: Point | None, after: Point) -> str:
    """What changed between two calls, and only that: "1 → 2", "S 7 → 33", "B 1 → 2, S 7 → 33"."""
    if before is None:
        return format_point(after)
    if after.symbols == (BATCH,) and before.symbols == (BATCH,):
        return f"{before.get(BATCH)} → {after.get(BATCH)}"
    changed = [
        (name, before.get(name), size) for name, size in after.items if before.get(name) != size
    ]
    if not changed:
        return format_point(after)
    return ", ".join(f"{name} {old} → {new}" for name, old, new in changed)


def format_sequence(points: Sequence[Point], width: int = 72) -> str:
    """A sequence in one line within ``width``: "B = 1 → 2 → 8", "(B 1, S 7) → (B 2, S 7)"; a long
    one is abbreviated in the middle, never wrapped mid-point."""
    if all(p.symbols == (BATCH,) for p in points):
        parts = [str(p.get(BATCH)) for p in points]
        head = "B = "
    else:
        parts = [f"({format_point(p)})" for p in points]
        head = ""
    text = head + " → ".join(parts)
    if len(text) <= width or len(parts) <= 4:
        return text

    def cut(keep: int) -> str:
        return head + " → ".join(parts[:keep] + [f"… {len(parts) - keep - 1} more …"] + parts[-1:])

    best = cut(2)
    for keep in range(3, len(parts) - 1):
        if len(cut(keep)) > width:
            break
        best = cut(keep)
    return best


# --- sequences ------------------------------------------------------------------------------------


class SizeError(ValueError):
    """A malformed sequence or path; ``key`` is the dotted scenario key it came from."""

    def __init__(self, key: str, message: str, remedy: str | None = None) -> None:
        super().__init__(message)
        self.key, self.message, self.remedy = key, message, remedy


def expand_grid(grid: Mapping[str, Sequence[int]]) -> list[dict[str, int]]:
    """Every combination, in the order written, the LAST symbol varying fastest."""
    names = list(grid)
    return [dict(zip(names, combo)) for combo in itertools.product(*(grid[n] for n in names))]


def parse_sequence(key: str, value: Any, symbols: Sequence[str]) -> tuple[Point, ...]:
    """One sequence of a scenario: a list of batch sizes, a list of points, or ``{grid: ...}``."""
    if isinstance(value, dict):
        if set(value) != {"grid"}:
            extra = next(iter(set(value) - {"grid"}), None)
            raise SizeError(
                f"{key}.{extra}" if extra is not None else key,
                f"unknown key {extra!r} in a sequence mapping",
                "A sequence is a list, or {grid: {SYMBOL: [sizes], ...}}.",
            )
        grid = value["grid"]
        if not isinstance(grid, dict) or not grid:
            raise SizeError(
                f"{key}.grid",
                "expected a mapping of symbol -> list of sizes",
                "e.g. {grid: {B: [1, 2, 8], S: [16, 128]}}",
            )
        for name, sizes in grid.items():
            _check_symbol(f"{key}.grid.{name}", name, symbols)
            if isinstance(sizes, int) and not isinstance(sizes, bool):
                sizes = [sizes]
            if not isinstance(sizes, list) or not sizes:
                raise SizeError(
                    f"{key}.grid.{name}",
                    f"expected a non-empty list of sizes for {name}, got {sizes!r}",
                )
            for j, size in enumerate(sizes):
                _check_size(f"{key}.grid.{name}[{j}]", size)
            grid[name] = sizes
        _check_complete(f"{key}.grid", set(grid), symbols)
        return tuple(Point.of(p, symbols) for p in expand_grid(grid))
    if not isinstance(value, list):
        raise SizeError(
            key,
            f"expected a list of sizes or points, got {type_name(value)}",
            "e.g. [1, 2, 8], [{B: 1, S: 7}, {B: 2, S: 7}] or {grid: {B: [1, 2]}}",
        )
    if not value:
        raise SizeError(key, "expected a non-empty list")
    points = []
    for i, item in enumerate(value):
        ikey = f"{key}[{i}]"
        if isinstance(item, dict):
            for name, size in item.items():
                _check_symbol(f"{ikey}.{name}", name, symbols)
                _check_size(f"{ikey}.{name}", size)
            _check_complete(ikey, set(item), symbols)
            points.append(Point.of(item, symbols))
        else:
            _check_size(
                ikey, item, "a batch size (a non-negative integer) or a point {SYMBOL: size, ...}"
            )
            if BATCH not in symbols or len(symbols) > 1:
                others = [s for s in symbols if s != BATCH]
                raise SizeError(
                    ikey,
                    f"a plain number is a batch size, but this scenario's "
                    f"symbols are {', '.join(symbols) or 'none'}",
                    f"Write a point per call, e.g. {{{', '.join(f'{s}: 4' for s in symbols)}}}"
                    if others
                    else None,
                )
            points.append(Point.batch(item))
    return tuple(points)


def _check_symbol(key: str, name: Any, symbols: Sequence[str]) -> None:
    if str(name) not in symbols:
        raise SizeError(
            key,
            f"unknown size symbol {str(name)!r}",
            did_you_mean(str(name), symbols)
            or f"This scenario's symbols: {', '.join(symbols) or 'none'}.",
        )


def _check_size(key: str, size: Any, what: str = "a size (a non-negative integer)") -> None:
    if isinstance(size, bool) or not isinstance(size, int):
        raise SizeError(key, f"expected {what}, got {type_name(size)} ({size!r})")
    if size < 0:
        raise SizeError(key, f"sizes cannot be negative, got {size}")


def _check_complete(key: str, given: set, symbols: Sequence[str]) -> None:
    missing = [s for s in symbols if s not in given]
    if missing:
        raise SizeError(
            key,
            f"missing size for symbol{'s' if len(missing) > 1 else ''} {', '.join(missing)}",
            "Every point names every symbol of the scenario "
            "(hold one fixed with a one-element list in a grid).",
        )


def varying(points: Sequence[Point]) -> tuple[str, ...]:
    """Symbols whose size changes within the points, in symbol order; all of them if none does
    (a one-point sequence still marks what it would mark)."""
    if not points:
        return ()
    moving = tuple(s for s in points[0].symbols if len({p.get(s) for p in points}) > 1)
    return moving or points[0].symbols
