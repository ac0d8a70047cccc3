"""Graph breaks with the user line they happened at, from Dynamo's own list."""

from __future__ import annotations

from ..records.origin import GraphBreakSite
from ..torch_compat.dynamo import graph_break_reasons
from .files import frame_origin, innermost_user_frame


def graph_break_mark() -> int | None:
    """Where Dynamo's graph-break list ends now: pass it to ``graph_breaks`` later."""
    reasons = graph_break_reasons()
    return None if reasons is None else len(reasons)


def breaks_since(since: int | None) -> int | None:
    """How many graph breaks Dynamo listed since ``since`` (a mark); None where it keeps no list.
    The list is Dynamo's own (a program clearing ``counters`` leaves it alone); a reset empties
    it, so a mark beyond its end counts from the start."""
    reasons = graph_break_reasons()
    if reasons is None:
        return None
    start = since or 0
    return len(reasons) - (start if start <= len(reasons) else 0)


def graph_breaks(since: int | None = 0) -> list[GraphBreakSite] | None:
    """Graph breaks recorded since ``since`` (a mark), grouped by (reason, user line), in order.

    Dynamo clears the list on reset: a mark beyond its end counts from the start. None where
    this torch keeps no such list.
    """
    reasons = graph_break_reasons()
    if reasons is None:
        return None
    start = since or 0
    if start > len(reasons):
        start = 0
    groups: dict[tuple, list] = {}
    for item in list(reasons)[start:]:
        text = str(getattr(item, "reason", ""))
        stack = list(getattr(item, "user_stack", None) or ())
        frame = innermost_user_frame(stack)
        origin = frame_origin(frame, "graph_break") if frame is not None else None
        key = (text, None if origin is None else (origin.file, origin.line))
        if key in groups:
            groups[key][2] += 1
        else:
            groups[key] = [text, origin, 1]
    return [GraphBreakSite(text, origin, count) for text, origin, count in groups.values()]
