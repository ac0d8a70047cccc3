"""A distributed scenario's ``ranks:`` and ``distributed:`` (the process group the ranks join).
Each rank's own sizes are a sequence's ``by_rank:`` (sequences.py). No torch."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .context import Context
from .keys import DEFAULT_PG_TIMEOUT_S, DISTRIBUTED_KEYS, TOP_KEYS


def parse_ranks(ctx: Context, data: Mapping) -> int | None:
    """``ranks:``, None for a scenario of one process."""
    if "ranks" not in data:
        return None
    return int(ctx.typed("ranks", data["ranks"], TOP_KEYS["ranks"]))


def parse_group(ctx: Context, data: Mapping, ranks: int | None) -> dict[str, Any]:
    """``distributed:`` as the Scenario's distributed_* fields."""
    value = data.get("distributed")
    if value is None:
        return {"distributed_backend": "gloo", "distributed_timeout_s": DEFAULT_PG_TIMEOUT_S}
    ctx.typed("distributed", value, TOP_KEYS["distributed"])
    if not ranks:
        raise ctx.fail(
            "distributed",
            "`distributed:` sets up the process group of a scenario with `ranks:`, and this "
            "one has none",
            "Add `ranks: 2`, or drop `distributed:`.",
        )
    ctx.keys("distributed", value, DISTRIBUTED_KEYS)
    backend = ctx.typed(
        "distributed.backend", value.get("backend", "gloo"), DISTRIBUTED_KEYS["backend"]
    ).strip()
    if not backend:
        raise ctx.fail("distributed.backend", "expected a backend name, e.g. gloo")
    timeout = ctx.typed(
        "distributed.timeout_s",
        value.get("timeout_s", DEFAULT_PG_TIMEOUT_S),
        DISTRIBUTED_KEYS["timeout_s"],
    )
    return {"distributed_backend": backend, "distributed_timeout_s": float(timeout)}
