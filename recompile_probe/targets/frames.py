"""The locals and globals a compiled frame starts with, as its guards see them (imports torch
lazily)."""

from __future__ import annotations

import inspect
from typing import Any


def _compiled(fn: Any) -> Any:
    """The function whose frame Dynamo compiles for this callable: forward for a module, a
    bound method's function, a wrapper itself (not what it wraps)."""
    import torch

    if isinstance(fn, torch.nn.Module):
        fn = type(fn).forward
    return getattr(fn, "__func__", fn)


def frame_code(fn: Any) -> Any | None:
    """The code object Dynamo compiles for this callable (forward for a module)."""
    return getattr(_compiled(fn), "__code__", None)


def frame_globals(fn: Any) -> dict[str, Any]:
    """The globals of the frame Dynamo compiles for this callable (its guards' ``G``)."""
    found = getattr(_compiled(fn), "__globals__", None)
    return found if isinstance(found, dict) else {}


def frame_locals(fn: Any, args: tuple, kwargs: dict | None = None) -> dict[str, Any] | None:
    """The locals the compiled frame starts with, as guards see them (L['x'] -> x)."""
    import torch

    # follow_wrapped=False and the closure: a functools.wraps wrapper's frame has (*args, **kwargs)
    # and its free variables (L['fn']), not the wrapped function's parameters.
    # A bound method's frame holds its self too: in args[0] when the function is a
    # wrapped_func(*args, **kwargs), so bind the function with self, not the method.
    func = type(fn).forward if isinstance(fn, torch.nn.Module) else fn
    if inspect.ismethod(fn):
        func, args = fn.__func__, (fn.__self__, *args)
    try:
        if isinstance(fn, torch.nn.Module):
            bound = inspect.signature(func, follow_wrapped=False).bind(fn, *args, **(kwargs or {}))
        else:
            bound = inspect.signature(func, follow_wrapped=False).bind(*args, **(kwargs or {}))
        bound.apply_defaults()
    except (TypeError, ValueError):
        return None
    code, cells = getattr(func, "__code__", None), getattr(func, "__closure__", None) or ()
    free = {
        name: cell.cell_contents
        for name, cell in zip(getattr(code, "co_freevars", ()), cells)
        if not _empty(cell)
    }
    return {**free, **bound.arguments}


def _empty(cell: Any) -> bool:
    try:
        _ = cell.cell_contents  # reading an empty cell raises
    except ValueError:
        return True
    return False
