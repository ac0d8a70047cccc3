"""The user line behind each failing guard of a recompile: one rule, whoever holds the evidence.

The probe (after a run), the recorder (as a compile happens) and the trace reader (from a
TORCH_TRACE log) each know different things about a compile. Each offers what it knows through
``Evidence``; ``reason_origins`` applies the same rule to all of them:

1. a tensor property (size, stride, dtype, requires_grad, device) of a source: for a size, the
   user line that forced that size to a constant in the entry's compile (role ``specialized``);
   otherwise where the tensor was first used in that compile (role ``first_use``: a static size
   is static by design, no line created its guard);
2. a shape-env expression or a Python value: the lines that created the guard, from the entry's
   ShapeEnv (role ``created``; ``first_use`` for a static int's constant guard, which no symbol
   is behind; ``specialized`` for an int the compile forced to a constant). Without a ShapeEnv
   (a trace), a value's guard gets the line that specialized that source, where one did;
3. a guard still unattributed whose text carries Dynamo's comment: the user line the comment
   names (role ``created``, or ``first_use`` where Dynamo says the line is a first use).

A guard none of these yields has no origin (None), never a guessed line. No torch.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace
from typing import Any, Protocol

from ..reasons.kinds import KINDS
from ..reasons.parse import parse_line, refine
from ..reasons.text import entry_line, failure_lines
from ..records.origin import Origin
from ..records.reason_detail import ReasonDetail
from .files import FileResolver
from .locations import locs_in_comment, split_guard_text
from .origin import FIRST_USE_MARK

#: failing-guard "what"s that are a property of one tensor (reasons.parse.ReasonDetail.what)
TENSOR_PROPERTIES = ("size", "stride", "dtype", "requires_grad", "device")


class Evidence(Protocol):
    """What one holder knows about the compile that made a cache entry (by its compile id)."""

    def compile_origins(self, compile_id: str | None) -> Any:
        """The compile's ShapeEnv read into origins (shape_env.CompileOrigins), or None."""

    def first_uses(self, compile_id: str | None) -> Mapping[str, Origin] | None:
        """Tensor source (L['x']) -> where that compile first used it; None where unknown."""

    def specializations(self, compile_id: str | None) -> Iterable[tuple[Iterable[str], Origin]]:
        """(sources of the symbol, the user line) of each size or int that compile forced to a
        constant."""

    def resolve(self, path: str, line: int, code: str | None) -> tuple[str, bool]:
        """torch's shortened path -> (full path, True), or (the short path, False)."""


def origin_of(line: str, evidence: Evidence) -> Origin | None:
    """The user line behind one failing guard line ``N/M: guard  # comment`` (module docstring)."""
    compile_id, text = entry_line(line)
    detail = parse_line(line)
    if detail.what in TENSOR_PROPERTIES and detail.source is not None:
        if detail.what == "size" and detail.dim is not None:
            size = f"{detail.source}.size()[{detail.dim}]"
            found = next(
                (
                    o
                    for sources, o in evidence.specializations(compile_id) or ()
                    if size in sources and o is not None
                ),
                None,
            )
            if found is not None:
                return found
        use = (evidence.first_uses(compile_id) or {}).get(detail.source)
        if use is not None:
            return use
    elif detail.what in ("shape-env expression", "value"):
        compiled = evidence.compile_origins(compile_id)
        if compiled is not None:
            attributed = compiled.attribute(text, evidence.first_uses(compile_id))
            if attributed.origin is not None:
                # no symbol behind it (a static int's constant guard): Dynamo's comment names
                # where the value was used, not a line that created a guard
                return (
                    attributed.origin
                    if attributed.sources
                    else replace(attributed.origin, role="first_use")
                )
        elif detail.what == "value" and detail.source is not None:
            # no ShapeEnv (a trace): a specialization of this very source is the line behind
            # its constant guard, as the ShapeEnv would have said
            found = next(
                (
                    o
                    for sources, o in evidence.specializations(compile_id) or ()
                    if detail.source in sources and o is not None
                ),
                None,
            )
            if found is not None:
                return found
    return from_comment(text, evidence)


def from_comment(text: str, evidence: Evidence) -> Origin | None:
    """The user line a guard's trailing comment names, its path made full where it can be."""
    _, comment = split_guard_text(text)
    locs = locs_in_comment(comment) if comment else []
    if not locs:
        return None
    role = "first_use" if FIRST_USE_MARK in comment else "created"
    return FileResolver.origin_with(locs[0], role, evidence.resolve)


def reason_origins(lines: Iterable[str], evidence: Evidence) -> tuple[Origin | None, ...]:
    """One origin (or None) per failing guard line, in order; an unreadable line is None."""
    out: list[Origin | None] = []
    for line in lines:
        try:
            origin = origin_of(line, evidence)
        except Exception:  # noqa: BLE001 - private structures; unreadable means n/a
            origin = None
        out.append(origin)
    return tuple(out)


def refined(
    reason: str | None,
    reason_kind: str | None,
    reason_detail: ReasonDetail | None,
    origins: tuple[Origin | None, ...],
) -> tuple[str | None, ReasonDetail | None]:
    """(kind, detail) once the first failing guard's origin is known: a guard a user line
    specialized is ``user_specialization`` (reasons.parse.refine); any other kind stays."""
    lines = failure_lines(reason)
    first = origins[0] if origins else None
    # a shared code object is told by the closures, which outrank the first guard's line
    if not lines or reason_kind not in KINDS or reason_kind == "shared_code_object":
        return reason_kind, reason_detail
    kind = refine(parse_line(lines[0]), first.role if first else None)
    if kind is None or kind.kind != "user_specialization" or kind.kind == reason_kind:
        return reason_kind, reason_detail
    return kind.kind, replace(reason_detail or kind, kind=kind.kind)


class LiveEvidence:
    """Evidence from the process that compiled: ShapeEnv origins and first uses per compile id,
    each looked up once (``origins`` and ``uses`` are the holder's own lookups)."""

    def __init__(
        self,
        origins: Callable[[str | None], Any],
        uses: Callable[[str | None], Mapping[str, Origin] | None],
    ) -> None:
        self._origins, self._uses = origins, uses
        self._memo: dict[tuple[str, str | None], Any] = {}
        self._resolver = FileResolver()

    def _once(self, what: str, compile_id: str | None, lookup: Callable[[str | None], Any]) -> Any:
        key = (what, compile_id)
        if key not in self._memo:
            try:
                self._memo[key] = lookup(compile_id)
            except Exception:  # noqa: BLE001 - private structures; unreadable means n/a
                self._memo[key] = None
        return self._memo[key]

    def compile_origins(self, compile_id: str | None) -> Any:
        return self._once("origins", compile_id, self._origins)

    def first_uses(self, compile_id: str | None) -> Mapping[str, Origin] | None:
        return self._once("uses", compile_id, self._uses)

    def specializations(self, compile_id: str | None) -> Iterable[tuple[Iterable[str], Origin]]:
        compiled = self.compile_origins(compile_id)
        return [
            (sp.sources, sp.origin)
            for sp in (compiled.specializations if compiled else ())
            if sp.origin is not None
        ]

    def resolve(self, path: str, line: int, code: str | None) -> tuple[str, bool]:
        return self._resolver.resolve(path, line, code)
