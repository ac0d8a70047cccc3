"""Knobs a release may have without honouring them, measured by a canary compile."""

from __future__ import annotations

import functools
from typing import Any

import torch

from .collectives import COMPILER_COLLECTIVES, compiler_collectives_fail
from .dynamo import reset_dynamo
from .logs import quiet_torch_logs


@functools.cache
def knob_not_honoured(dotted: str) -> str | None:
    """Why a config this torch has does nothing here, measured by a canary compile; None when it
    works (or no canary is known for it). Runs at most once per knob and process, in a fresh
    Dynamo state that it leaves fresh."""
    if dotted == COMPILER_COLLECTIVES:
        return compiler_collectives_fail()
    if dotted != "torch.compiler.config.unbacked_sources":
        return None

    def canary(x: torch.Tensor) -> torch.Tensor:
        return x * 2

    def compiles(value: str) -> int:
        counter = [0]

        def backend(gm: Any, example_inputs: Any) -> Any:
            counter[0] += 1
            return gm

        reset_dynamo()
        try:
            config: Any = torch.compiler.config  # its knobs are module attributes patch() sets
            with config.patch(unbacked_sources=value), quiet_torch_logs():
                compiled = torch.compile(canary, backend=backend)
                for n in (1, 2, 3):
                    compiled(torch.ones(n))
        finally:
            reset_dynamo()
        return counter[0]

    try:
        per_dim = compiles("L['x']:0")
        if per_dim == 1:
            return None
        # torch 2.9 matches whole tensor names only (every dim unbacked): say so, since the
        # strategy names single dims and would be a different experiment with whole tensors
        whole = compiles("L['x']")
    except Exception as exc:  # noqa: BLE001 - a knob that breaks compiles is not honoured either
        return f"{dotted} makes a canary compile fail in this torch ({type(exc).__name__})"
    why = (
        f"{dotted} exists in this torch but is not honoured for dims: a canary marked "
        f"through it (L['x']:0) compiled {per_dim} times for sizes 1, 2, 3 (1 when honoured)"
    )
    if whole == 1:
        why += (
            "; this torch takes whole tensors only (L['x'] compiled once), which would make "
            "every dim of a named tensor unbacked, not just the batch dims"
        )
    return why
