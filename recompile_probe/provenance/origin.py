"""The records of provenance: a user line and what it did to a compile. No torch.

An ``Origin`` is a line of the user's code with its role (``ROLES``): it ``created`` a guard,
``specialized`` a size or int to a constant, is where a tensor was first used (``first_use``: a
static size has no creating line), or is where a ``graph_break`` happened. Reports keep origins
as dicts ({file, line, function, code, role, file_exact}); ``Origin.to_dict`` writes them.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

ROLES = ("created", "specialized", "first_use", "graph_break")

#: Dynamo's framework text on the SLoc of a size's default lower bound (2 <= size): the line is
#: where the value was first used, the bound itself comes from 0/1 specialization.
FIRST_USE_MARK = "user code shown is first use of this value"


@dataclass(frozen=True)
class Origin:
    """A line of the user's code and what it did to the compile."""

    file: str  #: full path; torch's shortened path when ``file_exact`` is False
    line: int
    function: str  #: the user's function (a graph-break resume function named after its own)
    code: str | None  #: the source line, stripped; None when torch did not print it
    role: str  #: created | specialized | first_use | graph_break
    #: False: ``file`` is the short path torch printed (no or several candidate files matched)
    file_exact: bool = True

    def to_dict(self) -> dict[str, Any]:
        return {
            "file": self.file,
            "line": self.line,
            "function": self.function,
            "code": self.code,
            "role": self.role,
            "file_exact": self.file_exact,
        }

    def where(self) -> str:
        """``file.py:23`` (the base name; renderers add the code)."""
        return f"{os.path.basename(self.file)}:{self.line}"


@dataclass(frozen=True)
class ShapeGuardOrigin:
    """One ShapeGuard of a compile's ShapeEnv, in the order Dynamo added them."""

    expr: str  #: sympy text, as Dynamo's logs and TORCHDYNAMO_EXTENDED_DEBUG_GUARD_ADDED name it
    sources: tuple[str, ...]  #: the first source of each symbol in expr
    origin: Origin | None


@dataclass(frozen=True)
class Specialization:
    """A dynamic size or int forced to a constant by the user's code (a replacement to a number)."""

    source: str  #: the first source of the symbol, e.g. L['x'].size()[0]
    sources: tuple[str, ...]  #: every source of the symbol (duck-sized ones included)
    value: int | float
    reason: str | None  #: None in-process: Dynamo keeps the reason only in its logs and traces
    origin: Origin | None

    def to_dict(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "value": self.value,
            "reason": self.reason,
            "origin": None if self.origin is None else self.origin.to_dict(),
            "sources": list(self.sources),
        }


@dataclass(frozen=True)
class DuckSizing:
    """``source`` shares ``same_as``'s symbol only because their sizes were equal at compile time.

    The cache entry then carries ``source == same_as`` (Dynamo's comment: "duck sizing added this
    equality"). No line created it: ``origin`` is where ``source``'s tensor was first used
    (role first_use), known only when the cache entry's guards were given, else None."""

    source: str
    same_as: str
    size: int | None
    origin: Origin | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "same_as": self.same_as,
            "size": self.size,
            "origin": None if self.origin is None else self.origin.to_dict(),
        }


@dataclass(frozen=True)
class GuardAttribution:
    """The lines behind one final guard text of a cache entry."""

    text: str  #: the guard, comment stripped
    sources: tuple[str, ...]  #: known sources the guard names (as the ShapeEnv names them)
    credited: tuple[Origin, ...]  #: what Dynamo's own comment names
    #: every ShapeGuard / replacement on the same symbols (after unification), creation order
    contributing: tuple[Origin, ...]
    duck_sizing: DuckSizing | None = None

    @property
    def origins(self) -> tuple[Origin, ...]:
        """Contributing lines first (they made the guard), then credited ones not among them."""
        seen = {(o.file, o.line) for o in self.contributing}
        return self.contributing + tuple(o for o in self.credited if (o.file, o.line) not in seen)

    @property
    def origin(self) -> Origin | None:
        """The first line that created the guard (the issue's single ``origin``), or None."""
        found = self.origins
        if found:
            return found[0]
        return None if self.duck_sizing is None else self.duck_sizing.origin

    def to_dict(self) -> dict[str, Any]:
        origin = self.origin
        return {
            "origin": None if origin is None else origin.to_dict(),
            "origins": [o.to_dict() for o in self.origins],
            "credited": [o.to_dict() for o in self.credited],
            "duck_sizing": None if self.duck_sizing is None else self.duck_sizing.to_dict(),
        }


@dataclass(frozen=True)
class GraphBreak:
    """Graph breaks with the same reason at the same user line, counted."""

    reason: str  #: Dynamo's reason text, whole (its first line is the summary)
    origin: Origin | None  #: innermost user frame, role graph_break
    count: int  #: how many GraphCompileReasons (one per frame that compiled up to the break)
    stack: tuple[Origin, ...] = ()  #: the user frames, outermost first

    def to_dict(self) -> dict[str, Any]:
        return {
            "reason": self.reason,
            "origin": None if self.origin is None else self.origin.to_dict(),
            "count": self.count,
            "stack": [o.to_dict() for o in self.stack],
        }


# --- in words -------------------------------------------------------------------------------------

_ROLE_NOTE = {
    "first_use": " (first use)",
    "specialized": " (specialized here)",
    "graph_break": " (graph break)",
}


def at(origin: dict | None) -> str:
    """``at file.py:23 `code``` for an origin dict (role noted unless it created the guard);
    '' when there is none."""
    if not origin:
        return ""
    name = str(origin.get("file") or "?").replace("\\", "/").rsplit("/", 1)[-1]
    code = f" `{origin['code']}`" if origin.get("code") else ""
    return f"at {name}:{origin.get('line')}{code}{_ROLE_NOTE.get(origin.get('role') or '', '')}"
