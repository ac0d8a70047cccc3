"""Steady-state timing: samples of one call, synchronized with the device the inputs live on."""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch


@dataclass(frozen=True)
class Timing:
    """Steady-state samples of one call, summarized: the median ranks, min and p90 show spread."""

    min_us: float
    median_us: float
    p90_us: float  #: nearest rank: the ceil(0.9 n)-th fastest sample

    @classmethod
    def of(cls, samples: list[float]) -> Timing:
        ordered = sorted(samples)
        p90 = ordered[max(0, math.ceil(0.9 * len(ordered)) - 1)]
        return cls(round(ordered[0], 2), round(statistics.median(ordered), 2), round(p90, 2))


def wait_for_device(args: tuple, kwargs: dict | None = None) -> Callable[[], None] | None:
    """A synchronize for the accelerator the inputs live on, so timings include the kernels."""
    for arg in (*args, *(kwargs or {}).values()):
        if isinstance(arg, torch.Tensor) and arg.device.type not in ("cpu", "meta"):
            module = getattr(torch, arg.device.type, None)
            sync = getattr(module, "synchronize", None)
            return sync if callable(sync) else None
    return None


def synced(fn: Callable[[], Any], sync: Callable[[], None] | None) -> Callable[[], Any]:
    if sync is None:
        return fn

    def call() -> Any:
        out = fn()
        sync()
        return out

    return call
