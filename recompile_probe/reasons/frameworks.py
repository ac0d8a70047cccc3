"""Advice that fits one framework, given only where a recompile's files show that framework
(the compiled frame's file or the user lines behind its failing guards). No torch.

A generic remedy for ``kwargs['cache'].layers[0].is_initialized == False`` ("keep the object's
state the same") is true and useless; for a transformers model the fix is the one transformers
documents for generate() recompiles: a static cache. These hints are advice, never measured:
a scenario measures one by a custom strategy with ``driver_options`` (the renderers say which).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from ..records.reason_detail import ReasonDetail

#: a path inside the transformers package, as torch prints it (full or shortened)
_TRANSFORMERS = re.compile(r"(^|[/\\])transformers[/\\]")
#: a source that is a KV cache: transformers names it cache / past_key_values
_CACHE = re.compile(r"cache|past_key_values")
#: kinds a cache's growth or state gives: its shape, its flags, its length
_CACHE_KINDS = (
    "object_state",
    "static_size_change",
    "zero_one_specialization",
    "shape_env_guard",
    "arguments_changed",
    "type_or_id_change",
)

STATIC_CACHE = (
    "transformers (advice, not measured): generate with a static cache "
    '(generate(..., cache_implementation="static"), or '
    'model.generation_config.cache_implementation = "static"; compile options in '
    "generation_config.compile_config): the KV cache is allocated once at its full length, so "
    "its shapes and flags stop changing between decode steps. That is the fix transformers "
    "documents for generate() recompiles."
)
#: said after STATIC_CACHE when no run of the report had a static cache
MEASURE_STATIC_CACHE = (
    "To measure it here, add a custom strategy with driver_options: {cache_implementation: "
    "static} and pass that option from the driver to generate()."
)


def is_transformers(files: Iterable[str | None]) -> bool:
    return any(f and _TRANSFORMERS.search(f) for f in files)


def hints(
    kind: str | None,
    detail: ReasonDetail | None,
    files: Iterable[str | None],
    measured: str | None = None,
) -> str:
    """The framework's advice for this recompile, or "" where no framework shows.
    ``measured``: what the report's own static-cache runs did at this call, if it has any."""
    files = list(files)
    source = "" if detail is None else (detail.source or detail.text or "")
    if kind in _CACHE_KINDS and _CACHE.search(source) and is_transformers(files):
        return f"{STATIC_CACHE} {measured or MEASURE_STATIC_CACHE}"
    return ""


def is_static_cache(driver_options: Mapping[str, Any]) -> bool:
    """A strategy whose driver_options ask the program for a static cache."""
    return "static" in str(driver_options.get("cache_implementation", ""))
