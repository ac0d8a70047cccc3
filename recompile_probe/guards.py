"""Cache entries and their guard trees, read after a run (imports torch via compat)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from . import compat


@dataclass(frozen=True)
class EntryInfo:
    """One cache entry of one compiled frame."""

    function: str
    filename: str
    line: int
    compile_id: str | None
    leaf_guard_count: int | None  #: distinct leaf guards in the tree, epilogue (shape-env) included
    shape_env_guards: tuple[str, ...]  #: the symbolic guard expressions, comments stripped


def _strip_comment(part: str) -> str:
    return part.split("  #", 1)[0].strip()


def _leaf_guards(root: Any) -> list[Any]:
    guards: list[Any] = []
    stack = [root]
    while stack:
        manager = stack.pop()
        guards.extend(manager.get_leaf_guards())
        stack.extend(manager.get_child_managers())
    return guards


def inspect_entry(code: Any, entry: Any) -> EntryInfo:
    root = compat.guard_root(entry)
    leaf_count: int | None = None
    shape_env: list[str] = []
    if root is not None:
        try:
            epilogue = list(root.get_epilogue_lambda_guards())
            # Relational guards (e.g. NO_TENSOR_ALIASING) hang under every source they relate:
            # count each once.
            distinct = {
                (type(g).__name__, tuple(_strip_comment(p) for p in g.verbose_code_parts()))
                for g in [*_leaf_guards(root), *epilogue]
            }
            leaf_count = len(distinct)
            for g in epilogue:
                shape_env.extend(_strip_comment(p) for p in g.verbose_code_parts())
        except Exception:  # noqa: BLE001 - private tree API; unreadable means n/a
            leaf_count, shape_env = None, []
    return EntryInfo(code.co_name, code.co_filename, code.co_firstlineno,
                     compat.entry_compile_id(entry), leaf_count, tuple(shape_env))


def all_entries() -> list[EntryInfo] | None:
    """Every cache entry of every frame Dynamo compiled since the last reset; None if unknown."""
    codes = compat.dynamo_codes()
    if codes is None:
        return None
    out: list[EntryInfo] = []
    for code in codes:
        entries = compat.cache_entries(code)
        if entries is None:
            return None
        out.extend(inspect_entry(code, e) for e in entries)
    return out
