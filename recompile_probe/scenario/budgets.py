"""Budgets: a scenario's `expect:` section and `check`'s flags, parsed. No torch.

A budget applies to one strategy or all ("*"), one sequence or all ("*"). For each key the most
specific budget wins: strategy+sequence, then strategy, then sequence, then "*"; a command-line
flag overrides them all (analysis/budgets.py judges a run by them).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import did_you_mean
from ..records.run import STATUSES, Run
from ..sizes.ranges import parse_mapping
from .context import Context
from .keys import ANY, BUDGET_KEYS, KEYS, RANGE_KEYS, RANK_KEYS, TOP_KEYS


@dataclass(frozen=True)
class Budget:
    strategy: str  #: a strategy name or "*"
    sequence: str  #: a sequence name or "*"
    key: str  #: one of KEYS
    limit: Any
    source: str | None = None  #: "scenario.yaml:12" or the flag that set it
    from_flag: bool = False

    @property
    def rank(self) -> int:
        return 4 if self.from_flag else 2 * (self.strategy != ANY) + (self.sequence != ANY)

    def applies_to(self, run: Run) -> bool:
        return self.strategy in (ANY, run.strategy) and self.sequence in (ANY, run.sequence_name)


def parse(
    ctx: Context,
    value: Any,
    known: list[str],
    sequences: Mapping[str, Any],
    ranks: int | None,
    symbols: Sequence[str] = (),
) -> tuple[Budget, ...]:
    """expect: {STRATEGY|"*": {BUDGET: limit, SEQUENCE|"*": {BUDGET: limit}}}"""
    ctx.typed("expect", value, TOP_KEYS["expect"])
    out: list[Budget] = []
    for strategy, spec in value.items():
        key = f"expect.{strategy}"
        strategy = str(strategy)
        if strategy != ANY and strategy not in known:
            raise ctx.fail(
                key,
                f"unknown strategy {strategy!r}",
                did_you_mean(strategy, known) or 'Budgets apply to a strategy name or "*" (all).',
            )
        ctx.expect(key, spec, dict, "a mapping of budgets, e.g. {max_recompiles: 0}")
        for name, sub in spec.items():
            name = str(name)
            if name in KEYS:
                out.append(
                    _parse_one(ctx, f"{key}.{name}", strategy, ANY, name, sub, ranks, symbols)
                )
            elif name == ANY or name in sequences:
                skey = f"{key}.{name}"
                ctx.expect(skey, sub, dict, "a mapping of budgets")
                for bname, limit in sub.items():
                    bname = str(bname)
                    if bname not in KEYS:
                        raise ctx.fail(
                            f"{skey}.{bname}",
                            f"unknown budget {bname!r}",
                            did_you_mean(bname, KEYS) or f"Budgets: {', '.join(KEYS)}.",
                        )
                    out.append(
                        _parse_one(
                            ctx, f"{skey}.{bname}", strategy, name, bname, limit, ranks, symbols
                        )
                    )
            else:
                raise ctx.fail(
                    f"{key}.{name}",
                    f"{name!r} is neither a budget nor a sequence of this scenario",
                    did_you_mean(name, [*KEYS, *sequences])
                    or f"Budgets: {', '.join(KEYS)}; sequences: {', '.join(sequences)}.",
                )
    return tuple(out)


def _parse_one(
    ctx: Context,
    key: str,
    strategy: str,
    sequence: str,
    name: str,
    limit: Any,
    ranks: int | None,
    symbols: Sequence[str],
) -> Budget:
    if name in RANGE_KEYS:
        return Budget(strategy, sequence, name, ranges_of(ctx, key, limit, symbols), ctx.where(key))
    ctx.typed(key, limit, BUDGET_KEYS[name])
    if name in RANK_KEYS and not ranks:
        raise ctx.fail(
            key,
            f"{name} compares the ranks of a distributed scenario, and this one has no `ranks:`",
            "Add `ranks: 2` (and per-rank sizes with `by_rank:`), or drop the budget.",
        )
    if name == "status" and limit not in STATUSES:
        raise ctx.fail(
            key,
            f"unknown status {limit!r}",
            did_you_mean(limit, STATUSES) or f"Statuses: {', '.join(STATUSES)}.",
        )
    return Budget(strategy, sequence, name, limit, ctx.where(key))


def ranges_of(
    ctx: Context, key: str, value: Any, symbols: Sequence[str]
) -> dict[str, tuple[int, int]]:
    """{B: [1, 4096]} at ``key``, each symbol one of the scenario's."""
    ranges = ctx.sizes(lambda: parse_mapping(key, value))
    for symbol in ranges:
        if symbol not in symbols:
            raise ctx.fail(
                f"{key}.{symbol}",
                f"{symbol} is not a size symbol of this scenario",
                did_you_mean(symbol, symbols) or f"Its symbols: {', '.join(symbols)}.",
            )
    return ranges
