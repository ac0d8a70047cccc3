"""Dynamo's compile ids, parsed in one place. No torch.

A compile id is ``frame/attempt`` (``3/1``: the second compile of frame 3), or with compiled
autograd ``!graph/frame/attempt`` (``!0/3/1``) or ``!graph`` alone (torch/_guards.py
``CompileId.__str__``). The frame of an id is everything before its last ``/``, so compiled
autograd's frames (``!0/3``) form their own space, as tlparse groups them.

A trace envelope spells the same id as fields (``compiled_autograd_id``, ``frame_id``,
``frame_compile_id``) beside a restart counter (``attempt``: Dynamo restarted the compile, shown
by tlparse as ``[0/0_1]``); ``CompileId`` keeps all four, as tlparse's does.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

_TEXT = re.compile(
    r"^(?:!(?P<autograd>\d+)(?:/(?P<ca_frame>\d+)/(?P<ca_compile>\d+))?"
    r"|(?P<frame>\d+)/(?P<compile>\d+))$"
)


@dataclass(frozen=True)
class CompileId:
    frame_id: int | None
    frame_compile_id: int | None
    compiled_autograd_id: int | None = None
    #: Dynamo's restarts of this compile before the one that finished; not part of the id
    attempt: int = 0

    def __str__(self) -> str:
        """Torch's spelling (what metrics records, recompile reasons and cache entries carry)."""
        frame = (
            f"{self.frame_id}/{self.frame_compile_id}"
            if self.frame_id is not None and self.frame_compile_id is not None
            else ""
        )
        if self.compiled_autograd_id is None:
            return frame
        return f"!{self.compiled_autograd_id}" + (f"/{frame}" if frame else "")

    @property
    def label(self) -> str:
        """tlparse's spelling, the restart counted: ``0/0_1``."""
        return f"{self}_{self.attempt}" if self.attempt else str(self)

    @classmethod
    def from_envelope(cls, envelope: Mapping[str, Any]) -> CompileId | None:
        """The id a TORCH_TRACE envelope carries, None where it carries none."""
        fields = [envelope.get(k) for k in ("frame_id", "frame_compile_id", "compiled_autograd_id")]
        if any(v is not None and not isinstance(v, int) for v in fields):
            return None
        frame, compile_, autograd = fields
        if (frame is None) != (compile_ is None) or (frame is None and autograd is None):
            return None
        attempt = envelope.get("attempt")
        return cls(frame, compile_, autograd, attempt if isinstance(attempt, int) else 0)

    @classmethod
    def parse(cls, text: str | None) -> CompileId | None:
        """``"3/1"``, ``"!0/3/1"``, ``"!0"`` -> the id; None for None or anything else."""
        match = _TEXT.match(text or "")
        if match is None:
            return None
        autograd = match.group("autograd")
        frame, compile_ = (
            match.group("ca_frame", "ca_compile") if autograd else match.group("frame", "compile")
        )
        return cls(
            int(frame) if frame is not None else None,
            int(compile_) if compile_ is not None else None,
            int(autograd) if autograd is not None else None,
        )

    @property
    def frame(self) -> str | None:
        """The frame's id, compiled autograd's own space kept apart: "3", "!0/3"."""
        if self.frame_id is None:
            return None
        prefix = f"!{self.compiled_autograd_id}/" if self.compiled_autograd_id is not None else ""
        return f"{prefix}{self.frame_id}"

    @property
    def order(self) -> tuple[int, ...]:
        """Creation order: plain ids before compiled autograd's, then by number."""
        numbers = tuple(n for n in (self.frame_id, self.frame_compile_id) if n is not None)
        if self.compiled_autograd_id is None:
            return (0, *numbers)
        return (1, self.compiled_autograd_id, *numbers)


def frame_of(compile_id: str | None) -> str | None:
    """ "3/1" -> "3"; "!0/3/1" -> "!0/3"; None for None or an id with no frame ("!0")."""
    parsed = CompileId.parse(compile_id)
    return parsed.frame if parsed is not None else None


def sort_key(compile_id: str | None) -> tuple[int, ...]:
    """Creation order: "0/2" before "0/10", plain ids before compiled autograd's, unknown last."""
    parsed = CompileId.parse(compile_id)
    return parsed.order if parsed is not None else (1 << 30,)


def compile_key(compile_id: str | None, resets: int = 0) -> str:
    """A compile's key within its process: its id, and the resets before it where there were
    any ("0/0" before the first reset, "0/0@1" after it): ids repeat after a reset."""
    text = compile_id or ""
    return text if not resets else f"{text}@{resets}"
