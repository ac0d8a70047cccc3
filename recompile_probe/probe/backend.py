"""The counting backend: counts the graphs handed to the backend, then delegates."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..provenance.capture import Collector


class CountingBackend:
    """Counts the graphs handed to the backend, then delegates (what CompileCounter counts).

    With a collector it also keeps a reference to the compile's ShapeEnv (O(1); read after the
    run) for the user line of each guard: the backend runs only for frames that make a graph."""

    def __init__(self, backend: Any, collector: Collector | None = None) -> None:
        self.backend = backend
        self.graphs = 0
        self.collector = collector

    def __call__(self, gm: Any, example_inputs: list) -> Callable:
        if self.collector is not None:
            self.collector.capture(gm)
        self.graphs += 1
        return self.backend(gm, example_inputs)
