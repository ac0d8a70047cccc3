"""Knobs a release may have without honouring them (measured by a canary compile), and the knobs
only some releases have: which keyword or option the installed torch takes, and which release
has the ones it lacks."""

from __future__ import annotations

import functools
from typing import Any

import torch

from .collectives import COMPILER_COLLECTIVES, compiler_collectives_fail
from .compile_keywords import compile_accepts, compile_keywords
from .dynamo import reset_dynamo
from .logs import quiet_torch_logs
from .settings import defaults_restored

#: A knob -> the release it was measured in, for "unsupported" to name where it exists.
#: ``compile:NAME`` is a torch.compile keyword, ``FN:OPTION`` an option of a mark function.
RELEASES: dict[str, str] = {
    "torch.compiler.config.static_sources": "torch 2.15",
    "compile:dynamic_shapes": "torch 2.14",
    "compile:shapes_spec": "torch 2.13",
    "compile:isolate_recompiles": "torch 2.13",
    "compile:recompile_limit": "torch 2.13",
    "maybe_mark_dynamic:min": "torch 2.15",
    "maybe_mark_dynamic:max": "torch 2.15",
    "mark_unbacked:shape_id": "torch 2.13",
    "mark_unbacked:min": "torch 2.13",
    "mark_unbacked:max": "torch 2.13",
}


#: torch.compile's keyword for a ShapesSpec, newest name first (each release rejects the other).
def release_of(knob: str) -> str:
    """ " (torch 2.15 has it)" for a knob whose release is known; "" otherwise."""
    where = RELEASES.get(knob)
    return f" ({where} has it)" if where else ""


def compile_keyword_missing(key: str) -> str | None:
    """Why ``torch.compile(..., key=...)`` cannot run here (naming the release that has it);
    None when this torch takes it or its keywords cannot be read (torch.compile then says)."""
    have = compile_keywords()
    if have is None or key in have:
        return None
    return f"torch.compile in this torch has no {key}= keyword" + release_of(f"compile:{key}")


def recompile_limit_as_config(kwargs: dict[str, Any]) -> dict[str, Any]:
    """``recompile_limit=`` is a torch.compile keyword from 2.13 only: where this torch lacks it,
    take it out of ``kwargs`` and return the config patch that sets the same limit (the config
    was ``cache_size_limit`` before it was ``recompile_limit``); {} where nothing moved."""
    if "recompile_limit" not in kwargs or compile_accepts("recompile_limit"):
        return {}
    limit = kwargs.pop("recompile_limit")
    name = (
        "recompile_limit"
        if hasattr(torch._dynamo.config, "recompile_limit")
        else "cache_size_limit"
    )
    return {f"torch._dynamo.config.{name}": limit}


def shapes_spec_types() -> tuple[Any, Any, Any] | None:
    """(ShapesSpec, TensorSpec, ShapeVar) from torch.fx.experimental.dynamic_spec, or None."""
    try:
        from torch.fx.experimental import dynamic_spec
    except ImportError:
        return None
    names = ("ShapesSpec", "TensorSpec", "ShapeVar")
    found = tuple(getattr(dynamic_spec, n, None) for n in names)
    return None if None in found else found  # type: ignore[return-value]


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
            # an inherited setting (static_sources, say) would override the knob: the canary
            # measures the knob itself, with every inherited config at its default
            with defaults_restored(), config.patch(unbacked_sources=value), quiet_torch_logs():
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
