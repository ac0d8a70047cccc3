"""Dynamo's own state: resetting it, its caches, the backend it would build."""

from __future__ import annotations

import contextlib
import re
import sys
import types
from collections.abc import Callable, Iterator
from typing import Any

import torch

from .metrics import _dynamo_utils, clear_metrics


def reset_dynamo() -> None:
    """Fresh Dynamo state, including what torch._dynamo.reset() leaves behind."""
    torch._dynamo.reset()
    clear_metrics()
    eval_frame: Any = getattr(torch._dynamo, "eval_frame", None)
    if eval_frame is not None and hasattr(eval_frame, "_EXAMPLE_INPUTS"):
        eval_frame._EXAMPLE_INPUTS = None  # eager_then_compile would skip its eager call
    utils = _dynamo_utils()
    if utils is not None and hasattr(utils, "counters"):
        utils.counters.clear()


@contextlib.contextmanager
def isolated_caches(backend: str) -> Iterator[None]:
    """No profile-guided dynamism from earlier runs, and fresh inductor caches."""
    with contextlib.ExitStack() as stack:
        config = torch._dynamo.config
        for name, value in (
            ("automatic_dynamic_local_pgo", False),
            ("automatic_dynamic_remote_pgo", False),
        ):
            if hasattr(config, name):
                stack.enter_context(config.patch(name, value))
        if backend == "inductor":
            import torch._inductor.utils as inductor_utils

            fresh = getattr(inductor_utils, "fresh_cache", None) or getattr(
                inductor_utils, "fresh_inductor_cache", None
            )
            if fresh is not None:
                stack.enter_context(fresh())
        yield


def resolve_backend(name: str, mode: str | None, options: dict | None, dynamic: bool | None) -> Any:
    """The backend torch.compile would build for these arguments."""
    if name == "inductor" and hasattr(torch, "_TorchCompileInductorWrapper"):
        # lookup_backend("inductor") would drop mode and options.
        return torch._TorchCompileInductorWrapper(mode, options, dynamic)
    from torch._dynamo.backends.registry import lookup_backend

    return lookup_backend(name)


# --- inside a compile -----------------------------------------------------------------------------


def current_compile() -> tuple[str | None, Any, tuple] | None:
    """(compile id, ShapeEnv, traced code objects) of the compile in progress, read inside a
    backend (or anything Dynamo calls during a compile); None outside one or where this torch
    has no such context. O(1): the ShapeEnv is kept by reference, read later."""
    guards_mod = sys.modules.get("torch._guards")
    if guards_mod is None:
        return None
    try:
        context = guards_mod.TracingContext.try_get()
        shape_env: Any = getattr(getattr(context, "fake_mode", None), "shape_env", None)
        if shape_env is None:
            return None
        compile_id = guards_mod.CompileContext.current_compile_id()
        traced = tuple(getattr(context, "traced_code", None) or ())
    except Exception:  # noqa: BLE001 - a private API; unavailable means n/a
        return None
    return (None if compile_id is None else str(compile_id)), shape_env, traced


def current_compile_id() -> str | None:
    """The id of the compile in progress ("0/1"), read inside it; None outside one."""
    guards_mod = sys.modules.get("torch._guards")
    try:
        compile_id = guards_mod.CompileContext.current_compile_id() if guards_mod else None
    except Exception:  # noqa: BLE001 - a private API; unavailable means n/a
        return None
    return None if compile_id is None else str(compile_id)


def compiling_code() -> types.CodeType | None:
    """The code object Dynamo is compiling, from its ``convert_frame._compile(code, ...)`` frame
    on the current stack; None outside a compile or where this torch compiles elsewhere.

    A compile that fails before tracing (the recompile limit) writes a metrics record with no
    name: this is the only first-hand account of whose compile it was."""
    found = _compile_frame_locals()
    code = None if found is None else found.get("code")
    return code if isinstance(code, types.CodeType) else None


def compiling_closure_functions() -> tuple[dict, ...] | None:
    """The Python functions held by the closure of the frame Dynamo is compiling, each
    {name, module, file, line}; () where its closure holds none; None outside a compile or
    where this torch's ``_compile`` takes no ``closure``.

    A decorator's wrapper (``def wrapped(*args, **kwargs): return fn(*args, **kwargs)``) is one
    code object for every function it decorates; only the closure tells which one a compile of
    it was for."""
    found = _compile_frame_locals()
    if found is None or "closure" not in found:
        return None
    out = []
    for cell in found.get("closure") or ():
        try:
            value = cell.cell_contents
        except (ValueError, AttributeError):  # an empty cell
            continue
        fn = value.__func__ if isinstance(value, types.MethodType) else value
        if not isinstance(fn, types.FunctionType):
            continue
        code = fn.__code__
        out.append(
            {
                "name": getattr(fn, "__qualname__", None) or code.co_name,
                "module": getattr(fn, "__module__", None),
                "file": code.co_filename,
                "line": code.co_firstlineno,
            }
        )
    return tuple(out)


def _compile_frame_locals() -> dict | None:
    frame: Any = sys._getframe(2)
    while frame is not None:
        code = frame.f_code
        if code.co_name == "_compile" and code.co_filename.endswith("convert_frame.py"):
            return frame.f_locals
        frame = frame.f_back
    return None


@contextlib.contextmanager
def backend_calls(on_call: Callable[[], None]) -> Iterator[bool]:
    """Call ``on_call`` whenever Dynamo hands a graph to a backend, whatever the backend.

    Wraps ``OutputGraph.call_user_compiler`` while the block runs; the original does all the
    work, and an exception from ``on_call`` never reaches the compile. Yields False where this
    torch has no such method."""
    import torch._dynamo.output_graph as output_graph

    owner: Any = getattr(output_graph, "OutputGraph", None)
    original: Any = getattr(owner, "call_user_compiler", None)
    if original is None:
        yield False
        return

    def call_user_compiler(graph_self: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            on_call()
        except Exception:  # noqa: BLE001 - observing must never change the compile
            pass
        return original(graph_self, *args, **kwargs)

    call_user_compiler.__wrapped__ = original  # type: ignore[attr-defined]
    owner.call_user_compiler = call_user_compiler
    try:
        yield True
    finally:
        if owner.__dict__.get("call_user_compiler") is call_user_compiler:
            owner.call_user_compiler = original


def graph_break_reasons() -> list | None:
    """Dynamo's list of graph breaks (GraphCompileReason, with user stacks), cleared by reset;
    None where this torch keeps none."""
    utils = sys.modules.get("torch._dynamo.utils")
    reasons: Any = getattr(utils, "graph_break_reasons", None)
    return reasons if isinstance(reasons, list) else None


_SIZE_SOURCE = re.compile(r"^(?P<source>.+)\.size\(\)\[(?P<dim>\d+)\]$")


def placeholder_dims(gm: Any) -> dict[Any, tuple[str, int]]:
    """symbol -> (Dynamo source, dim) of the graph's inputs, read inside a backend: a tensor
    placeholder's symbolic sizes, and a size passed as its own input (an unbacked or dynamic
    size is often one: ``L['x'].size()[0]``). {} where the graph does not say."""
    out: dict[Any, tuple[str, int]] = {}
    try:
        for node in gm.graph.nodes:
            if node.op != "placeholder":
                continue
            arg = node.meta.get("grapharg")
            source = getattr(arg, "source", None)
            name = getattr(source, "name", None)
            name = name() if callable(name) else name
            if not isinstance(name, str):
                continue
            value = node.meta.get("example_value")
            if isinstance(value, torch.SymInt):
                found = _SIZE_SOURCE.match(name)
                if found is not None:
                    out.setdefault(value.node.expr, (found["source"], int(found["dim"])))
            elif isinstance(value, torch.Tensor):
                for dim, size in enumerate(value.shape):
                    if isinstance(size, torch.SymInt) and size.node.expr.is_Symbol:
                        out.setdefault(size.node.expr, (name, dim))
    except Exception:  # noqa: BLE001 - private graph metadata; unreadable means {}
        return {}
    return out
