"""Dynamo's compile ids, parsed in one place. No torch.

A compile id is ``frame/attempt`` (``3/1``: the second compile of frame 3), or with compiled
autograd ``!graph/frame/attempt`` (``!0/3/1``) or ``!graph`` alone (torch/_guards.py
``CompileId.__str__``). The frame of an id is everything before its last ``/``, so compiled
autograd's frames (``!0/3``) form their own space, as tlparse groups them.
"""

from __future__ import annotations


def frame_of(compile_id: str | None) -> str | None:
    """ "3/1" -> "3"; "!0/3/1" -> "!0/3"; None for None or an id with no attempt ("!0")."""
    if not compile_id or "/" not in compile_id:
        return None
    return compile_id.rsplit("/", 1)[0]


def sort_key(compile_id: str | None) -> tuple[int, ...]:
    """Creation order: "0/2" before "0/10", plain ids before compiled autograd's, unknown last."""
    if not compile_id:
        return (1 << 30,)
    text = compile_id[1:] if compile_id.startswith("!") else compile_id
    try:
        parts = tuple(int(p) for p in text.split("/"))
    except ValueError:
        return (1 << 30,)
    return (1, *parts) if compile_id.startswith("!") else (0, *parts)


def compile_key(compile_id: str | None, resets: int = 0) -> str:
    """A compile's key within its process: its id, and the resets before it where there were
    any ("0/0" before the first reset, "0/0@1" after it): ids repeat after a reset."""
    text = compile_id or ""
    return text if not resets else f"{text}@{resets}"
