"""Where Dynamo first used each tensor, read from a cache entry's TENSOR_MATCH guards.

A TENSOR_MATCH size mismatch has no creating line (the first compile was static by design):
this is the line to show, role first_use.
"""

from __future__ import annotations

from typing import Any

from ..records.origin import Origin
from ..torch_compat.cache import guard_root, walk
from .files import FileResolver
from .locations import locs_in_comment, split_guard_text


def origin_of_guard_part(
    text: str, role: str, resolver: FileResolver | None = None
) -> Origin | None:
    """The user line in a (non shape-env) guard's verbose code part, e.g. TENSOR_MATCH."""
    _, comment = split_guard_text(text)
    locs = locs_in_comment(comment) if comment else []
    return (resolver or FileResolver()).origin(locs[0], role) if locs else None


def first_uses(entry: Any, code: Any = None) -> dict[str, Origin] | None:
    """Tensor source (L['x']) -> where Dynamo first used it, from the entry's TENSOR_MATCH guards.

    A TENSOR_MATCH size mismatch has no creating line (the first compile was static by design);
    this is the line to show, role first_use. None where the guard tree cannot be read.
    """
    root = guard_root(entry)
    if root is None:
        return None
    resolver = FileResolver([getattr(code, "co_filename", "")])
    out: dict[str, Origin] = {}
    try:
        for source, guard in walk(root):
            if source is None or source in out or type(guard).__name__ != "TENSOR_MATCH":
                continue
            for part in guard.verbose_code_parts():
                origin = origin_of_guard_part(part, "first_use", resolver)
                if origin is not None:
                    out[source] = origin
                    break
    except Exception:  # noqa: BLE001 - private tree API
        return None
    return out
