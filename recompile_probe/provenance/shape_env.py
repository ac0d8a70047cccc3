"""A compile's ShapeEnv read into origins, and a final guard mapped back to its lines.

Everything comes from what Dynamo already keeps in-process, read once per compile, never per call:

* the compile's ShapeEnv (captured in a backend, or by ``capture_hook`` around any backend):
  ``guards`` as ``ShapeGuard(expr, sloc)``, ``replacements`` / ``replacements_slocs`` (unification
  and specialization to constants), ``var_to_range_sloc`` (who set each bound),
  ``var_to_sources`` (which inputs a symbol stands for; two sources = duck sizing) and
  ``specialization_stacks`` (full user stacks of specializations);
* the cache entry's guard tree: each leaf guard's verbose code part ends in a comment naming the
  user line (for TENSOR_MATCH: where the tensor was first used);
* ``torch._dynamo.utils.graph_break_reasons``: each graph break with its full user stack.

Every hook is private: each is feature-detected, and what this torch cannot say is ``None``
(n/a), never a guessed line. Dynamo prints user paths shortened (``shorten_filename`` cuts the
prefix shared with torch's own directory, and one more character); the full path is recovered
only when exactly one candidate file (the traced code objects' files, loaded modules, linecache)
shortens to the same text, otherwise the short path is kept with ``file_exact`` False.

Mapping a FINAL shape guard (``5 <= L['x'].size()[0]``) back to its lines: Dynamo simplifies, so
the final guard is credited (its comment) to one SLoc while other lines constrained the same
symbols (a ``> 4`` check folded into a range credited to the line that unified two sizes). For
each final guard we report the credited lines AND every ShapeGuard or replacement whose symbols,
after unification, lie within the guard's symbols ("contributing"); see ``attribute``. What
cannot be mapped: guards on strides that Dynamo itself marks "unknown source" (no symbol is
behind them), and any text that names no known source: those get no origin.

No torch import: the ShapeEnv comes from capture.py.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from ..reasons.parse import DUCK_MARK
from ..reasons.text import strip_local_scope, tensor_of
from ..records.origin import Origin, Specialization
from .files import FileResolver, frame_origin, innermost_user_frame
from .locations import locs_in_comment, parse_user_loc, split_guard_text
from .origin import FIRST_USE_MARK, DuckSizing, GuardAttribution, ShapeGuardOrigin

# the range guard Dynamo writes per symbol: "lo <= src", "lo <= src <= hi" or "src <= hi"
_RANGE = re.compile(r"^(?:-?\d+ <= (?P<a>.+?)(?: <= -?\d+)?|(?P<b>.+?) <= -?\d+)$")
_INTEGER = re.compile(r"^-?\d+$")


def _name(source: Any) -> str:
    name = getattr(source, "name", None)
    if callable(name):
        name = name()
    return str(name) if name is not None else str(source)


def _sloc_role(sloc: Any, default: str) -> str:
    framework = getattr(sloc, "framework_loc", None)
    return "first_use" if isinstance(framework, str) and FIRST_USE_MARK in framework else default


def _number(value: Any) -> int | float | None:
    if getattr(value, "is_number", False):
        try:
            return int(value) if getattr(value, "is_integer", False) else float(value)
        except (TypeError, ValueError):
            return None
    return None


@dataclass(frozen=True)
class _Constraint:
    """A ShapeGuard or replacement, reduced to what attribution needs."""

    symbols: frozenset  # free symbols as written
    roots: frozenset  # the same after unification (constants drop out)
    origin: Origin
    #: bound (a guard on one symbol), unify (relates symbols: an Eq guard, a replacement by
    #: another symbol) or specialize (a replacement by a constant, its Eq guard)
    kind: str


@dataclass(frozen=True)
class CompileOrigins:
    """Every origin one compile's ShapeEnv knows, as plain data (the ShapeEnv is not kept)."""

    compile_id: str | None
    guards: tuple[ShapeGuardOrigin, ...]
    specializations: tuple[Specialization, ...]
    duck_sizing: tuple[DuckSizing, ...]
    # for attribute(): source name (and its L[...]-less form) -> symbol; symbol -> roots; the
    # SLoc text -> its Origin; constraints in creation order
    _source_symbol: dict = field(default_factory=dict, repr=False, compare=False)
    _roots: dict = field(default_factory=dict, repr=False, compare=False)
    _slocs: dict = field(default_factory=dict, repr=False, compare=False)
    _constraints: tuple = field(default=(), repr=False, compare=False)
    _resolver: Any = field(default=None, repr=False, compare=False)
    _source_order: tuple | None = field(default=None, repr=False, compare=False)

    def sources_in(self, guard_code: str) -> tuple[str, ...]:
        """Known sources named in a guard's code, as the ShapeEnv names them (L['x']...), in the
        order they appear; the longest name wins where two overlap."""
        order = self._source_order
        if order is None:
            order = tuple(sorted(self._source_symbol, key=len, reverse=True))
            object.__setattr__(self, "_source_order", order)
        spans: list[tuple[int, int, str]] = []
        for text in order:
            start = guard_code.find(text)
            while start >= 0:
                end = start + len(text)
                before = guard_code[start - 1] if start else " "
                after = guard_code[end] if end < len(guard_code) else " "
                whole = not (before.isalnum() or before in "_.]'\"") and not (
                    (text[-1].isalnum() or text[-1] == "_") and (after.isalnum() or after in "_.[(")
                )
                if whole and not any(s < end and start < e for s, e, _ in spans):
                    spans.append((start, end, self._source_symbol[text][1]))
                start = guard_code.find(text, start + 1)
        return tuple(dict.fromkeys(name for _, _, name in sorted(spans)))

    def _folded_kinds(self, code: str) -> frozenset[str]:
        """Which constraints Dynamo may have folded into a final guard of this shape.

        Dynamo writes three kinds of shape guard: a value range per symbol (``5 <= src``, every
        bound and unification of the symbol folded in), an input equality per extra source
        (``src == other``: made by unification; ``src == 3``: by specialization) and the issued
        guards themselves, each credited to its own creating line (nothing folded in).
        """
        match = _RANGE.match(code)
        if match is not None and (match.group("a") or match.group("b")) in self._source_symbol:
            return frozenset({"bound", "unify", "specialize"})
        left, eq, right = code.partition(" == ")
        if eq and left.strip() in self._source_symbol:
            right = right.strip()
            if _INTEGER.match(right):
                return frozenset({"specialize"})
            if self.sources_in(right):
                return frozenset({"unify"})
        return frozenset()

    def attribute(self, text: str, first_uses: dict[str, Origin] | None = None) -> GuardAttribution:
        """The lines behind one guard text of this compile's cache entry.

        ``text`` is a shape-env guard's verbose code part (the epilogue lambda guard's
        ``verbose_code_parts()``) or a recompile reason's failing guard with its comment; without
        the comment only contributing lines can be found. ``first_uses`` (from ``first_uses``)
        gives duck-sized sources the line where their tensor was first used.
        """
        code, comment = split_guard_text(text)
        sources = self.sources_in(code)
        symbols = frozenset(self._source_symbol[s][0] for s in sources if s in self._source_symbol)
        roots = frozenset().union(*(self._roots.get(s, frozenset({s})) for s in symbols))
        credited = self._credited(comment)
        kinds = self._folded_kinds(code)
        contributing: list[Origin] = []
        seen: set[tuple[str, int]] = set()
        if symbols and kinds:
            for c in self._constraints:
                if (
                    c.kind in kinds
                    and c.roots <= roots
                    and (c.symbols | c.roots) & (symbols | roots)
                ):
                    key = (c.origin.file, c.origin.line)
                    if key not in seen:
                        seen.add(key)
                        contributing.append(c.origin)
        duck = None
        if comment.startswith(DUCK_MARK):
            for d in self.duck_sizing:
                if {d.source, d.same_as} <= set(sources):
                    origin = d.origin
                    if origin is None and first_uses:
                        origin = first_uses.get(tensor_of(d.source))
                        if origin is not None:
                            d = DuckSizing(d.source, d.same_as, d.size, origin)
                    duck = d
                    break
        return GuardAttribution(code, sources, tuple(credited), tuple(contributing), duck)

    def _credited(self, comment: str) -> list[Origin]:
        if not comment or comment.startswith(DUCK_MARK):
            return []
        hit = self._slocs.get(comment)
        if hit is not None:
            return [hit]
        # a range guard: "<lower sloc> and <upper sloc>"
        start = comment.find(" and ")
        while start >= 0:
            lower, upper = self._slocs.get(comment[:start]), self._slocs.get(comment[start + 5 :])
            if lower is not None and upper is not None:
                return (
                    [lower]
                    if (lower.file, lower.line) == (upper.file, upper.line)
                    else [lower, upper]
                )
            start = comment.find(" and ", start + 1)
        resolver = self._resolver or FileResolver()
        out = [resolver.origin(loc, "created") for loc in locs_in_comment(comment)]
        return [o for o in out if o is not None]


def _guard_kind(free: frozenset, role: str) -> str:
    return "specialize" if role == "specialized" else "unify" if len(free) > 1 else "bound"


def extract(
    compile_id: str | None, shape_env: Any, traced_code: tuple = ()
) -> CompileOrigins | None:
    """One compile's ShapeEnv (and the code objects it traced) -> CompileOrigins; None when this
    torch's ShapeEnv is not the one we know."""
    try:
        return _extract(compile_id, shape_env, traced_code)
    except Exception:  # noqa: BLE001 - private structures; unreadable means n/a
        return None


def _extract(compile_id: str | None, env: Any, traced_code: tuple) -> CompileOrigins | None:
    shape_guards = getattr(env, "guards", None)
    var_to_sources = getattr(env, "var_to_sources", None)
    if shape_guards is None or var_to_sources is None:
        return None
    replacements = dict(getattr(env, "replacements", None) or {})
    replacement_slocs = dict(getattr(env, "replacements_slocs", None) or {})
    range_slocs = dict(getattr(env, "var_to_range_sloc", None) or {})
    stacks = dict(getattr(env, "specialization_stacks", None) or {})
    values = getattr(env, "backed_var_to_val", None)
    if values is None:
        values = getattr(env, "var_to_val", None) or {}
    resolver = FileResolver(getattr(c, "co_filename", "") for c in traced_code)

    source_names = {sym: tuple(_name(s) for s in srcs) for sym, srcs in var_to_sources.items()}
    source_symbol: dict[str, tuple[Any, str]] = {}
    for sym, names in source_names.items():
        for name in names:
            source_symbol.setdefault(name, (sym, name))
            source_symbol.setdefault(strip_local_scope(name), (sym, name))

    root_memo: dict[Any, frozenset] = {}

    def roots(sym: Any, depth: int = 0) -> frozenset:
        if sym in root_memo:
            return root_memo[sym]
        target = replacements.get(sym)
        if target is None or depth > 64:
            out = frozenset({sym})
        elif _number(target) is not None:
            out = frozenset()
        else:
            out = frozenset().union(*(roots(s, depth + 1) for s in target.free_symbols))
        root_memo[sym] = out
        return out

    def origin_of(sloc: Any, role: str) -> Origin | None:
        return resolver.origin(
            parse_user_loc(getattr(sloc, "maybe_user_loc", None)), _sloc_role(sloc, role)
        )

    slocs: dict[str, Origin] = {}
    for bounds in range_slocs.values():
        for sloc in (getattr(bounds, "lower", None), getattr(bounds, "upper", None)):
            origin = origin_of(sloc, "created") if sloc is not None else None
            if origin is not None:
                slocs.setdefault(str(sloc), origin)

    constraints: list[_Constraint] = []
    guard_records: list[ShapeGuardOrigin] = []
    for guard in list(shape_guards):
        expr = guard.expr
        free = frozenset(expr.free_symbols)
        role = "created"
        args = getattr(expr, "args", ())
        if type(expr).__name__ == "Equality" and len(args) == 2 and len(free) == 1:
            sym = next(iter(free))
            constant = [a for a in args if _number(a) is not None]
            if constant and _number(replacements.get(sym)) == _number(constant[0]):
                role = "specialized"
        origin = origin_of(guard.sloc, role)
        if origin is not None:
            slocs[str(guard.sloc)] = origin
            constraints.append(
                _Constraint(
                    free,
                    frozenset().union(*(roots(s) for s in free)),
                    origin,
                    _guard_kind(free, role),
                )
            )
        guard_records.append(
            ShapeGuardOrigin(
                str(expr),
                tuple(source_names[s][0] for s in sorted(free, key=str) if source_names.get(s)),
                origin,
            )
        )

    specializations: list[Specialization] = []
    for sym, target in replacements.items():
        sloc = replacement_slocs.get(sym)
        value = _number(target)
        role = "specialized" if value is not None else "created"
        origin = origin_of(sloc, role) if sloc is not None else None
        names = source_names.get(sym, ())
        if value is not None and names:
            # the full user stack Dynamo kept for this source beats the shortened SLoc path
            stack = next((stacks[s] for s in var_to_sources.get(sym, ()) if s in stacks), None)
            frame = innermost_user_frame(stack) if stack else None
            exact = frame_origin(frame, "specialized") if frame is not None else None
            specializations.append(Specialization(names[0], value, None, exact or origin, names))
            origin = exact or origin
        if origin is not None:
            slocs[str(sloc)] = origin
            constraints.append(
                _Constraint(
                    frozenset({sym}),
                    roots(sym),
                    origin,
                    "specialize" if value is not None else "unify",
                )
            )

    duck: list[DuckSizing] = []
    for sym, names in source_names.items():
        if len(names) > 1 and roots(sym):
            size = _number(values.get(sym)) if hasattr(values, "get") else None
            whole = int(size) if size is not None and size == int(size) else None
            duck.extend(DuckSizing(name, names[0], whole) for name in names[1:])

    root_map = {sym: roots(sym) for sym in source_names}
    return CompileOrigins(
        compile_id,
        tuple(guard_records),
        tuple(specializations),
        tuple(duck),
        source_symbol,
        root_map,
        slocs,
        tuple(constraints),
        resolver,
    )
