"""A scenario's ``sequences:``: name -> the points of each call, and each rank's own points for a
sequence written ``by_rank:``. The sizes themselves are parsed in sizes/points.py. No torch."""

from __future__ import annotations

from collections.abc import Mapping
from functools import partial
from typing import Any

from ..sizes.points import Point, parse_sequence
from .context import Context
from .keys import BY_RANK, TOP_KEYS

#: name -> points, and name -> every rank's points (the ``by_rank:`` sequences only)
Sequences = tuple[dict[str, tuple[Point, ...]], dict[str, tuple[tuple[Point, ...], ...]]]


def parse(ctx: Context, data: Mapping, symbols: tuple[str, ...], ranks: int | None) -> Sequences:
    """name -> points (rank 0's for a ``by_rank:`` sequence), and name -> every rank's points for
    the ``by_rank:`` sequences."""
    value = data.get("sequences")
    if value is None:
        raise ctx.fail(
            "sequences" if "sequences" in data else "",
            "missing required key 'sequences'",
            "e.g. sequences: {rl: [1, 2, 8]}",
        )
    if isinstance(value, list):  # one unnamed sequence
        value = {"sequence": value}
        ctx.lines.update(
            {
                k.replace("sequences", "sequences.sequence", 1): v
                for k, v in list(ctx.lines.items())
                if k.startswith("sequences[")
            }
        )
    ctx.expect("sequences", value, dict, TOP_KEYS["sequences"].what)
    if not value:
        raise ctx.fail("sequences", "expected at least one sequence")
    out: dict[str, tuple[Point, ...]] = {}
    per_rank: dict[str, tuple[tuple[Point, ...], ...]] = {}
    for name, points in value.items():
        key = f"sequences.{name}"
        if isinstance(points, dict) and BY_RANK in points:
            per_rank[str(name)] = _by_rank(ctx, key, points, symbols, ranks)
            out[str(name)] = per_rank[str(name)][0]
        else:
            out[str(name)] = ctx.sizes(partial(parse_sequence, key, points, symbols))
    return out, per_rank


def _by_rank(
    ctx: Context, key: str, value: dict, symbols: tuple[str, ...], ranks: int | None
) -> tuple[tuple[Point, ...], ...]:
    """A sequence's ``by_rank:`` form: rank -> that rank's sizes, for every rank."""
    if not ranks:
        raise ctx.fail(
            f"{key}.{BY_RANK}",
            "`by_rank:` gives each rank its own sizes, and this scenario has no `ranks:`",
            "Add `ranks: 2` (one process per rank), or write the sequence as a plain list.",
        )
    if set(value) != {BY_RANK}:
        extra = next(str(k) for k in value if k != BY_RANK)
        raise ctx.fail(
            f"{key}.{extra}",
            f"unknown key {extra!r} beside `by_rank:`",
            "A per-rank sequence is {by_rank: {0: [...], 1: [...]}} and nothing else.",
        )
    per_rank = value[BY_RANK]
    ctx.expect(f"{key}.{BY_RANK}", per_rank, dict, "a mapping of rank -> sizes")
    given: dict[int, Any] = {}
    for rank, sizes in per_rank.items():
        number = (
            rank
            if isinstance(rank, int) and not isinstance(rank, bool)
            else int(rank)
            if isinstance(rank, str) and rank.isdigit()
            else None
        )
        if number is None or not 0 <= number < ranks:
            raise ctx.fail(
                f"{key}.{BY_RANK}.{rank}",
                f"{rank!r} is not a rank of this scenario (ranks: {ranks}, so 0 to {ranks - 1})",
            )
        given[number] = sizes
    missing = [r for r in range(ranks) if r not in given]
    if missing:
        raise ctx.fail(
            f"{key}.{BY_RANK}",
            f"no sizes for rank{'s' if len(missing) > 1 else ''} {', '.join(map(str, missing))}",
            f"Give every rank from 0 to {ranks - 1} its sizes (ranks: {ranks}).",
        )
    return tuple(
        ctx.sizes(partial(parse_sequence, f"{key}.{BY_RANK}.{r}", given[r], symbols))
        for r in range(ranks)
    )
