"""Capturing a compile's ShapeEnv: by reference, inside the backend call, read after the compile.

``collector.capture()`` from a counting backend, or ``with capture_hook(collector.add): ...``
around code whose backend is not ours (watch, record(), as_is); ``collector.get("0/1")`` after
that compile ended extracts its origins once (shape_env.py) and drops the ShapeEnv.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from typing import Any

from ..torch_compat.dynamo import backend_calls, current_compile, placeholder_dims
from .shape_env import CompileOrigins, extract


@dataclass(frozen=True)
class Capture:
    """What a backend sees of one compile: kept by reference, read after the compile ends.

    Reading later matters: guards added after the backend ran (the rest of the compile) are in
    the same ShapeEnv by then. Extract once the compile is over and drop the capture (a ShapeEnv
    references the compile's graph)."""

    compile_id: str | None
    shape_env: Any = field(repr=False)
    traced_code: tuple = field(default=(), repr=False)
    #: symbol -> (source, dim) of the graph's inputs (torch_compat.dynamo.placeholder_dims)
    dims: dict = field(default_factory=dict, repr=False)


@dataclass(frozen=True)
class RuntimeAsserts:
    """The assertions a compile's graph checks when it runs (the ShapeEnv's deferred runtime
    asserts, sympy over the graph's symbols), with the input dim behind each symbol."""

    exprs: tuple[Any, ...]
    dims: dict  #: symbol -> (Dynamo source, dim)


def capture() -> Capture | None:
    """Call inside a backend (or anything Dynamo calls during a compile): O(1), nothing parsed."""
    found = current_compile()
    return None if found is None else Capture(*found)


class Collector:
    """Captures per compile id; extracted on demand, each once, the ShapeEnv then dropped.

    ``collector.capture()`` from a backend, or ``with capture_hook(collector.add): ...`` around
    code whose backend is not ours; ``collector.get("0/1")`` after that compile ended.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._captures: dict[str | None, Capture] = {}
        self._done: dict[str | None, CompileOrigins | None] = {}
        self._asserts: dict[str | None, RuntimeAsserts | None] = {}

    def capture(self, gm: Any = None) -> None:
        found = capture()
        if found is not None and gm is not None:
            found = replace(found, dims=placeholder_dims(gm))
        self.add(found)

    def add(self, cap: Capture | None) -> None:
        if cap is None:
            return
        with self._lock:
            held = self._captures.get(cap.compile_id)
            if held is not None and held.dims:  # a frame's later graph: the inputs of both
                cap = replace(cap, dims={**held.dims, **cap.dims})
            self._captures[cap.compile_id] = cap  # a frame's later backend call: same ShapeEnv
            self._done.pop(cap.compile_id, None)

    def compile_ids(self) -> list[str | None]:
        with self._lock:
            return list(dict.fromkeys([*self._done, *self._captures]))

    def get(self, compile_id: str | None) -> CompileOrigins | None:
        with self._lock:
            if compile_id in self._done:
                return self._done[compile_id]
            cap = self._captures.pop(compile_id, None)
        if cap is None:
            return None
        result = extract(cap.compile_id, cap.shape_env, cap.traced_code)
        asserts = _runtime_asserts(cap)
        with self._lock:
            self._done[compile_id] = result
            self._asserts[compile_id] = asserts
        return result

    def runtime_asserts(self, compile_id: str | None) -> RuntimeAsserts | None:
        """What that compile's graph asserts when it runs; None where nothing was captured."""
        self.get(compile_id)
        with self._lock:
            return self._asserts.get(compile_id)


def _runtime_asserts(cap: Capture) -> RuntimeAsserts | None:
    found = getattr(cap.shape_env, "deferred_runtime_asserts", None)
    if not isinstance(found, dict):
        return None
    try:
        exprs = tuple(ra.expr for items in found.values() for ra in items)
    except Exception:  # noqa: BLE001 - private structures; unreadable means n/a
        return None
    return RuntimeAsserts(exprs, dict(cap.dims))


@contextlib.contextmanager
def capture_hook(on_capture: Callable[[Capture | None], None]) -> Iterator[bool]:
    """Capture every compile that reaches a backend, whatever the backend (watch, record()).
    Yields False where this torch has no hook for it."""
    with backend_calls(lambda: on_capture(capture())) as hooked:
        yield hooked
