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
class StackFrame:
    """One user frame of the stack Dynamo wrote under a failing guard ("User stack trace")."""

    file: str  #: the full path, as Dynamo printed it
    line: int
    function: str
    code: str | None  #: the source line, stripped; None when torch did not print it


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
    #: the user frames that led to the guard, outermost first, where Dynamo wrote them ("User
    #: stack trace": an inlined helper's guard then names its caller's line too); () where it
    #: did not, and then left out of the dict
    stack: tuple[StackFrame, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "file": self.file,
            "line": self.line,
            "function": self.function,
            "code": self.code,
            "role": self.role,
            "file_exact": self.file_exact,
        }
        if self.stack:
            out["stack"] = [dict(vars(f)) for f in self.stack]
        return out

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
        """The first line that created the guard (the one ``origin`` a record keeps), or None."""
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


def from_stack(frames: tuple[dict, ...] | list[dict]) -> dict | None:
    """The origin dict of a guard whose only evidence is Dynamo's user stack: its innermost
    frame (the line that made the guard), role ``created``, the whole stack kept."""
    if not frames:
        return None
    inner = frames[-1]
    return {
        "file": inner["file"],
        "line": inner["line"],
        "function": inner["function"],
        "code": inner.get("code"),
        "role": "created",
        "file_exact": True,
        "stack": [dict(f) for f in frames],
    }


def with_stacks(
    found: tuple[dict | None, ...], stacks: tuple[dict | None, ...] | None
) -> tuple[dict | None, ...]:
    """Origins (one per failing guard line) with the user stack Dynamo wrote for each line
    (``stacks``: origins made by ``from_stack``, or None per line): an origin keeps its own line
    and role and gains the stack; a line without one takes the stack's."""
    if not stacks or not any(s and s.get("stack") for s in stacks):
        return found
    out: list[dict | None] = list(found) + [None] * max(len(stacks) - len(found), 0)
    for i, stack in enumerate(stacks):
        frames = (stack or {}).get("stack")
        if not stack or not frames:
            continue
        own = out[i]
        out[i] = dict(stack) if own is None else {**own, "stack": list(frames)}
    return tuple(out)


def called_from(origin: dict | None) -> list[str]:
    """The other frames of an origin's stack, outermost first, each as ``called from
    file.py:16 in outer `return helper(y, n)```: the callers of the guard's own line ([] where
    there is no stack, or it has the guard's frame alone)."""
    here = (_base((origin or {}).get("file")), (origin or {}).get("line"))
    frames = (origin or {}).get("stack") or ()
    callers = [f for f in frames if (_base(f.get("file")), f.get("line")) != here]
    out = []
    for f in callers:
        code = f" `{f['code']}`" if f.get("code") else ""
        out.append(
            f"called from {_base(f.get('file'))}:{f.get('line')} in {f.get('function')}{code}"
        )
    return out


def _base(path: object) -> str:
    return str(path or "?").replace("\\", "/").rsplit("/", 1)[-1]


def at(origin: dict | None) -> str:
    """``at file.py:23 `code``` for an origin dict (role noted unless it created the guard);
    '' when there is none."""
    if not origin:
        return ""
    name = str(origin.get("file") or "?").replace("\\", "/").rsplit("/", 1)[-1]
    code = f" `{origin['code']}`" if origin.get("code") else ""
    return f"at {name}:{origin.get('line')}{code}{_ROLE_NOTE.get(origin.get('role') or '', '')}"


def at_with_callers(origin: dict | None) -> str:
    """``at()``, then its stack's callers (``called_from``) on the same line; '' when none."""
    return "; ".join(part for part in (at(origin), *called_from(origin)) if part)
