"""Cache entries of compiled code and their guard trees."""

from __future__ import annotations

from typing import Any

import torch


def cache_entries(code: Any) -> list[Any] | None:
    """Cache entries of a code object, most recently used first; None if this torch hides them."""
    eval_frame: Any = getattr(torch._dynamo, "eval_frame", None)
    getter: Any = getattr(eval_frame, "_debug_get_cache_entry_list", None)
    if getter is None:
        return None
    try:
        return list(getter(code))
    except Exception:  # noqa: BLE001 - a private API; its failure means "n/a", not a crash
        return None


def dynamo_codes() -> list[Any] | None:
    """Every code object Dynamo was asked to compile since the last reset."""
    convert_frame: Any = getattr(torch._dynamo, "convert_frame", None)
    tracker: Any = getattr(convert_frame, "input_codes", None)
    seen: Any = getattr(tracker, "seen", None)
    if seen is None:
        return None
    return [c for c in (ref() for ref in list(seen)) if c is not None]


def accepts(entry: Any, f_locals: dict[str, Any]) -> bool | None:
    """Whether the entry's guards accept these frame locals, asked so that the program does not
    notice: a failing ``guard_manager.check`` counts the failure and sorts the guard tree's
    children by failures, so the next real call's recompile would name another failing guard
    first than the program's own run does. ``check_verbose`` evaluates the same guards and
    leaves the tree as it is. None: this entry has no guard manager."""
    manager = getattr(entry, "guard_manager", None)
    if manager is None:
        return None
    verbose = getattr(manager, "check_verbose", None)
    if verbose is None:  # no side-effect-free check in this torch: the plain one
        return bool(manager.check(f_locals))
    return bool(verbose(f_locals).result)


def entry_compile_id(entry: Any) -> str | None:
    cid: Any = getattr(entry, "compile_id", None)
    return None if cid is None else str(cid)


def guard_root(entry: Any) -> Any | None:
    return getattr(getattr(entry, "guard_manager", None), "root", None)


def walk(root: Any) -> list[tuple[str | None, Any]]:
    """(source, leaf guard) for every leaf guard of a guard tree, depth first."""
    out: list[tuple[str | None, Any]] = []
    stack = [root]
    while stack:
        manager = stack.pop()
        try:
            source = manager.get_source()
        except Exception:  # noqa: BLE001
            source = None
        out.extend((source, g) for g in manager.get_leaf_guards())
        stack.extend(reversed(manager.get_child_managers()))
    return out


def epilogue_guards(root: Any) -> list[Any]:
    """The root's epilogue lambda guards: where every symbolic (shape-env) guard lives."""
    return list(root.get_epilogue_lambda_guards())


def failing_parts(entry: Any, f_locals: dict[str, Any]) -> list[str] | None:
    """The verbose code parts ``check_verbose`` names for a rejection (a failing leaf guard's
    parts, or torch's own sentence such as "tensor 'L['x']' size mismatch at index 0. expected
    4, actual 1"); [] when the entry accepts; None where this torch has no verbose check."""
    verbose = getattr(getattr(entry, "guard_manager", None), "check_verbose", None)
    if verbose is None:
        return None
    result = verbose(f_locals)
    return [] if result.result else list(result.verbose_code_parts)


def recompile_limit() -> int | None:
    """Cache entries a frame may hold before a miss stops compiling and runs eagerly."""
    config: Any = getattr(torch._dynamo, "config", None)
    for name in ("recompile_limit", "cache_size_limit"):  # renamed in 2.7
        value = getattr(config, name, None)
        if isinstance(value, int):
            return value
    return None
