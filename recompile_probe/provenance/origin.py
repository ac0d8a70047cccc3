"""What provenance/ builds around a user line (records.origin.Origin): the shape guards, duck
sizings and attributions of a compile, and an origin in words. No torch.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from ..records.origin import Origin, StackFrame

#: Dynamo's framework text on the SLoc of a size's default lower bound (2 <= size): the line is
#: where the value was first used, the bound itself comes from 0/1 specialization.
FIRST_USE_MARK = "user code shown is first use of this value"


@dataclass(frozen=True)
class ShapeGuardOrigin:
    """One ShapeGuard of a compile's ShapeEnv, in the order Dynamo added them."""

    expr: str  #: sympy text, as Dynamo's logs and TORCHDYNAMO_EXTENDED_DEBUG_GUARD_ADDED name it
    sources: tuple[str, ...]  #: the first source of each symbol in expr
    origin: Origin | None


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


# --- in words -------------------------------------------------------------------------------------

_ROLE_NOTE = {
    "first_use": " (first use)",
    "specialized": " (specialized here)",
    "graph_break": " (graph break)",
}


def from_stack(frames: tuple[StackFrame, ...]) -> Origin | None:
    """The origin of a guard whose only evidence is Dynamo's user stack: its innermost frame
    (the line that made the guard), role ``created``, the whole stack kept."""
    if not frames:
        return None
    inner = frames[-1]
    return Origin(inner.file, inner.line, inner.function, inner.code, "created", stack=frames)


def with_stacks(
    found: tuple[Origin | None, ...], stacks: tuple[Origin | None, ...] | None
) -> tuple[Origin | None, ...]:
    """Origins (one per failing guard line) with the user stack Dynamo wrote for each line
    (``stacks``: origins made by ``from_stack``, or None per line): an origin keeps its own line
    and role and gains the stack; a line without one takes the stack's."""
    if not stacks or not any(s and s.stack for s in stacks):
        return found
    out: list[Origin | None] = list(found) + [None] * max(len(stacks) - len(found), 0)
    for i, stack in enumerate(stacks):
        if not stack or not stack.stack:
            continue
        own = out[i]
        out[i] = stack if own is None else replace(own, stack=stack.stack)
    return tuple(out)


def called_from(origin: Origin | None) -> list[str]:
    """The other frames of an origin's stack, outermost first, each as ``called from
    file.py:16 in outer `return helper(y, n)```: the callers of the guard's own line ([] where
    there is no stack, or it has the guard's frame alone)."""
    if origin is None:
        return []
    here = (_base(origin.file), origin.line)
    out = []
    for f in origin.stack:
        if (_base(f.file), f.line) == here:
            continue
        code = f" `{f.code}`" if f.code else ""
        out.append(f"called from {_base(f.file)}:{f.line} in {f.function}{code}")
    return out


def _base(path: object) -> str:
    return str(path or "?").replace("\\", "/").rsplit("/", 1)[-1]


def at(origin: Origin | None) -> str:
    """``at file.py:23 `code``` for an origin (role noted unless it created the guard); '' when
    there is none."""
    if origin is None:
        return ""
    code = f" `{origin.code}`" if origin.code else ""
    return f"at {_base(origin.file)}:{origin.line}{code}{_ROLE_NOTE.get(origin.role or '', '')}"


def at_with_callers(origin: Origin | None) -> str:
    """``at()``, then its stack's callers (``called_from``) on the same line; '' when none."""
    return "; ".join(part for part in (at(origin), *called_from(origin)) if part)
