"""Cache entries as records, after a run; which entry serves a call, and what checking it costs.

A guard tree is flattened into ``GuardLine``s: one per code part of each leaf guard, with the
source of the manager it hangs under, comments stripped, relational guards (NO_TENSOR_ALIASING,
which hang under every source they relate) kept once. Symbolic guards live in the root's epilogue
lambda guard and become SHAPE_ENV lines; the ``a is b`` guards Dynamo puts in an epilogue
lambda guard too become OBJECT_ALIASING lines. Each line gets the user line behind it
(provenance).
"""

from __future__ import annotations

import statistics
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..provenance.capture import Collector
from ..provenance.first_use import first_uses
from ..reasons.text import epilogue_kind, strip_comment
from ..records.origin import Origin
from ..records.run import SHAPE_ENV, GuardLine
from ..torch_compat import cache


@dataclass(frozen=True)
class EntryInfo:
    """One cache entry of one compiled frame."""

    function: str
    filename: str
    line: int
    compile_id: str | None
    leaf_guard_count: int | None  #: distinct leaf guards in the tree, epilogue (shape-env) included
    guards: tuple[GuardLine, ...]  #: flattened, comments stripped; empty when unreadable
    #: leaf_guard_count per kind, most first (None when unreadable)
    leaf_kinds: dict[str, int] | None = None


def inspect_entry(code: Any, entry: Any, collector: Collector | None = None) -> EntryInfo:
    """The entry's guards; with an ``origins.Collector`` (the run's), each SHAPE_ENV line gets
    the user line(s) that created it and each TENSOR_MATCH line its tensor's first use."""
    root = cache.guard_root(entry)
    compile_id = cache.entry_compile_id(entry)
    leaf_count: int | None = None
    leaf_kinds: dict[str, int] | None = None
    lines: list[GuardLine] = []
    locate = _locator(code, entry, compile_id, collector) if collector is not None else None
    if root is not None:
        try:
            seen_guards: set[tuple] = set()
            seen_lines: set[tuple] = set()
            leaves = [(source, g, type(g).__name__) for source, g in cache.walk(root)]
            leaves += [
                (None, g, epilogue_kind(list(g.verbose_code_parts())))
                for g in cache.epilogue_guards(root)
            ]
            for source, guard, kind in leaves:
                verbose = tuple(guard.verbose_code_parts())
                parts = tuple(strip_comment(p) for p in verbose)
                seen_guards.add((kind, parts))
                for part, whole in zip(parts, verbose):
                    if (kind, part) not in seen_lines:
                        seen_lines.add((kind, part))
                        origin, origins = locate(kind, source, whole) if locate else (None, ())
                        lines.append(
                            GuardLine(
                                kind, None if source == "L" else source, part, origin, origins
                            )
                        )
            leaf_count = len(seen_guards)
            leaf_kinds = dict(Counter(kind for kind, _ in seen_guards).most_common())
        except Exception:  # noqa: BLE001 - private tree API; unreadable means n/a
            leaf_count, lines, leaf_kinds = None, [], None
    return EntryInfo(
        code.co_name,
        code.co_filename,
        code.co_firstlineno,
        compile_id,
        leaf_count,
        tuple(lines),
        leaf_kinds,
    )


def _locator(
    code: Any, entry: Any, compile_id: str | None, collector: Collector
) -> Callable[[str, str | None, str], tuple[Origin | None, tuple[Origin, ...]]]:
    """(kind, source, verbose part) -> (origin, contributing origins); read lazily:
    the ShapeEnv is extracted once per entry, the first-use map once per entry."""
    memo: dict[str, Any] = {}

    def uses() -> dict | None:
        if "uses" not in memo:
            memo["uses"] = first_uses(entry, code)
        return memo["uses"]

    def locate(
        kind: str, source: str | None, whole: str
    ) -> tuple[Origin | None, tuple[Origin, ...]]:
        try:
            if kind == SHAPE_ENV:
                if "compile" not in memo:
                    memo["compile"] = collector.get(compile_id)
                found = memo["compile"]
                if found is None:
                    return None, ()
                attributed = found.attribute(whole, uses())
                return attributed.origin, attributed.origins
            if kind == "TENSOR_MATCH" and source is not None:
                origin = (uses() or {}).get(source)
                return origin, ()
        except Exception:  # noqa: BLE001 - private structures; unreadable means n/a
            pass
        return None, ()

    return locate


def all_entries(collector: Collector | None = None) -> list[EntryInfo] | None:
    """Every cache entry of every frame Dynamo compiled since the last reset; None if unknown.
    ``collector``: the run's captures, for the user line of each guard."""
    codes = cache.dynamo_codes()
    if codes is None:
        return None
    out: list[EntryInfo] = []
    for code in codes:
        entries = cache.cache_entries(code)
        if entries is None:
            return None
        out.extend(inspect_entry(code, e, collector) for e in entries)
    return out


# --- which entry serves a call, and what checking it costs ----------------------------------------


def serving_entry(code: Any, f_locals: dict[str, Any]) -> Any | None | bool:
    """The cache entry whose guards accept these locals; None if none does; False if unknown."""
    entries = cache.cache_entries(code) if code is not None else None
    if entries is None:
        return False
    for entry in entries:
        try:
            if cache.accepts(entry, f_locals):
                return entry
        except Exception:  # noqa: BLE001
            return False
    return None


def check_cost_us(
    entry: Any,
    f_locals: dict[str, Any],
    before: Callable[[], None] | None = None,
    rounds: int = 15,
    per_round: int = 200,
) -> float | None:
    """Warm µs per guard_manager.check of the entry on the real inputs (median of rounds)."""
    manager = getattr(entry, "guard_manager", None)
    if manager is None:
        return None
    samples = []
    for _ in range(rounds):
        if before is not None:
            before()
        start = time.perf_counter_ns()
        for _ in range(per_round):
            manager.check(f_locals)
        samples.append((time.perf_counter_ns() - start) / 1000.0 / per_round)
    return statistics.median(samples)
