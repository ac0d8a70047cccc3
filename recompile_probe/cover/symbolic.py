"""The entries' guards as conditions on the size symbols, decided over a whole range.

What an entry demands of the sizes lives in two places (../shared/notes/dynamo-facts.md,
"Deciding coverage from guards"): each TENSOR_MATCH's static sizes and strides (an int admits
only that value), and the shape-env guards in the root's epilogue, Python over
``L['x'].size()[i]``. Both are read into sympy over the range's symbols; a dim no symbol moves is
the template's constant, a contiguous tensor's stride the product of the sizes after it.

Bounds and equalities of one symbol at a time solve as intervals, so an entry's served set is a
box and the range's unserved set is exact over any range. Conditions that tie two symbols, or use
floor division and modulo (reshapes), are decided by z3 where it is installed (``pip install
recompile-probe[proof]``); otherwise the caller enumerates. Guards that are not about sizes
(types, ids, global state, marks) are taken as the same at every size: the caller checks that
with a real guard evaluation at a witness point of each entry and at sampled points, and drops
the symbolic answer where they disagree.
"""

from __future__ import annotations

import ast
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import sympy

from ..reasons.text import epilogue_kind, strip_comment
from ..records.run import SHAPE_ENV
from ..sizes.ranges import Box, Cells, Ranges, inside, merge
from ..torch_compat import cache
from .inputs import Template


class Untranslatable(Exception):
    """A size condition this reader cannot put into symbols."""


@dataclass(frozen=True)
class EntryConditions:
    conditions: tuple[Any, ...]  #: sympy booleans over the range's symbols
    #: floor, mod or a tie between two symbols: intervals alone cannot decide it
    needs_solver: bool


_MATCH = re.compile(r"size=\[(?P<size>[^\]]*)\], stride=\[(?P<stride>[^\]]*)\]")


def conditions(
    entry: Any,
    template: Template,
    f_locals: Mapping[str, Any],
    symbols: Mapping[str, sympy.Symbol],
    f_globals: Mapping[str, Any] | None = None,
) -> EntryConditions:
    """What this entry demands of the sizes; raises Untranslatable. ``f_globals``: the frame's
    globals, where a guard reads a global's size (a model held by the module)."""
    root = cache.guard_root(entry)
    if root is None:
        raise Untranslatable("the entry's guard tree is not readable")
    reader = _Reader(template, f_locals, symbols, f_globals or {})
    out: list[Any] = []
    for source, guard in cache.walk(root):
        if type(guard).__name__ != "TENSOR_MATCH" or source is None:
            continue
        for part in guard.verbose_code_parts():
            found = _MATCH.search(part)
            if found is not None:
                out.extend(reader.tensor_match(source, found["size"], found["stride"]))
    for guard in cache.epilogue_guards(root):
        parts = list(guard.verbose_code_parts())
        if epilogue_kind(parts) != SHAPE_ENV:
            continue
        for part in parts:
            condition = reader.expression(strip_comment(part))
            if condition is not None:
                out.append(condition)
    kept = tuple(c for c in out if c is not sympy.true)
    needs = reader.needs_solver or any(len(c.free_symbols) > 1 for c in kept)
    return EntryConditions(kept, needs)


class _Reader:
    def __init__(
        self,
        template: Template,
        f_locals: Mapping[str, Any],
        symbols: Mapping[str, sympy.Symbol],
        f_globals: Mapping[str, Any],
    ) -> None:
        self.template, self.f_locals, self.symbols = template, f_locals, symbols
        self.f_globals = f_globals
        self.needs_solver = False

    def _tensor(self, source: str) -> Any:
        try:  # Dynamo's own source, over the frame's locals (L) and globals (G)
            return eval(source, {"__builtins__": {}}, {"L": self.f_locals, "G": self.f_globals})
        except Exception as exc:  # noqa: BLE001
            raise Untranslatable(
                f"{source} could not be evaluated over the frame's locals (L) and globals (G): "
                f"{type(exc).__name__}: {exc}"
            ) from exc

    def size(self, source: str, dim: int) -> Any:
        symbol = self.template.sources.get((source, dim))
        if symbol is not None and symbol in self.symbols:
            return self.symbols[symbol]
        return sympy.Integer(int(self._tensor(source).shape[dim]))

    def stride(self, source: str, dim: int) -> Any:
        tensor = self._tensor(source)
        if not tensor.is_contiguous():
            if any((source, d) in self.template.sources for d in range(tensor.dim())):
                raise Untranslatable(f"{source} is not contiguous")
            return sympy.Integer(int(tensor.stride(dim)))
        return sympy.Mul(*(self.size(source, d) for d in range(dim + 1, tensor.dim())))

    def tensor_match(self, source: str, sizes: str, strides: str) -> list[Any]:
        out = []
        for kind, text in (("size", sizes), ("stride", strides)):
            for dim, item in enumerate(t.strip() for t in text.split(",") if t.strip()):
                if item == "None":
                    continue
                value = self.size(source, dim) if kind == "size" else self.stride(source, dim)
                if kind == "stride" and not value.free_symbols:
                    continue  # a constant stride: the template's layout, the same everywhere
                out.append(sympy.Eq(value, int(item)))
        return out

    def expression(self, code: str) -> Any:
        """A shape guard's Python as a sympy boolean; None where it reads no size."""
        try:
            tree = ast.parse(code, mode="eval").body
        except SyntaxError as exc:
            raise Untranslatable(code) from exc
        if not any(
            isinstance(n, ast.Attribute) and n.attr in ("size", "stride", "storage_offset")
            for n in ast.walk(tree)
        ):
            return None
        return self._bool(tree)

    def _bool(self, node: ast.AST) -> Any:
        if isinstance(node, ast.BoolOp):
            items = [self._bool(v) for v in node.values]
            return sympy.And(*items) if isinstance(node.op, ast.And) else sympy.Or(*items)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            return sympy.Not(self._bool(node.operand))
        if isinstance(node, ast.Compare):
            left = self._int(node.left)
            parts = []
            for op, right_node in zip(node.ops, node.comparators):
                right = self._int(right_node)
                parts.append(_RELATIONS[type(op)](left, right))
                left = right
            return sympy.And(*parts)
        raise Untranslatable(ast.unparse(node))

    def _int(self, node: ast.AST) -> Any:
        if isinstance(node, ast.Constant) and isinstance(node.value, int):
            return sympy.Integer(node.value)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            return -self._int(node.operand)
        if isinstance(node, ast.BinOp):
            a, b = self._int(node.left), self._int(node.right)
            if isinstance(node.op, ast.Add):
                return a + b
            if isinstance(node.op, ast.Sub):
                return a - b
            if isinstance(node.op, ast.Mult):
                return a * b
            if isinstance(node.op, (ast.FloorDiv, ast.Mod)):
                self.needs_solver = True
                op = _FloorDiv if isinstance(node.op, ast.FloorDiv) else _Mod
                return op(a, b)
        if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Call):
            call = node.value
            if isinstance(call.func, ast.Attribute) and not call.args:
                index = node.slice
                if isinstance(index, ast.Constant) and isinstance(index.value, int):
                    source = ast.unparse(call.func.value)
                    if call.func.attr == "size":
                        return self.size(source, index.value)
                    if call.func.attr == "stride":
                        return self.stride(source, index.value)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            if node.func.attr == "storage_offset" and not node.args:
                return sympy.Integer(0)  # empty tensors start at offset 0, as the template's did
        raise Untranslatable(ast.unparse(node))


class _FloorDiv(sympy.Function):
    """Python's ``//``, kept unevaluated until both sides are numbers (z3 reads it)."""

    @classmethod
    def eval(cls, a: Any, b: Any) -> Any:
        if a.is_Integer and b.is_Integer:
            return sympy.nan if b == 0 else sympy.Integer(int(a) // int(b))
        return None


class _Mod(sympy.Function):
    @classmethod
    def eval(cls, a: Any, b: Any) -> Any:
        if a.is_Integer and b.is_Integer:
            return sympy.nan if b == 0 else sympy.Integer(int(a) % int(b))
        return None


_RELATIONS: dict[type, Any] = {
    ast.Eq: sympy.Eq,
    ast.NotEq: sympy.Ne,
    ast.Lt: sympy.Lt,
    ast.LtE: sympy.Le,
    ast.Gt: sympy.Gt,
    ast.GtE: sympy.Ge,
}


# --- deciding ------------------------------------------------------------------------------------


def boxes_of(entry: EntryConditions, ranges: Ranges, symbols: Mapping[str, Any]) -> list[Box]:
    """The boxes an entry serves, where its conditions are one symbol each, without floor or
    mod (``needs_solver`` False)."""
    if any(c is sympy.false for c in entry.conditions):
        return []
    per_symbol: list[list[tuple[int, int]]] = []
    for name, (lo, hi) in ranges.items():
        s = symbols[name]
        allowed = [(lo, hi)]
        for condition in entry.conditions:
            if s in condition.free_symbols:
                allowed = _intersect(allowed, _runs(condition, s, lo, hi))
        if not allowed:
            return []
        per_symbol.append(allowed)
    out: list[Box] = [()]
    for runs in per_symbol:
        out = [(*box, run) for box in out for run in runs]
    return out


def _runs(condition: Any, s: Any, lo: int, hi: int) -> list[tuple[int, int]]:
    """The integer runs of [lo, hi] where a one-symbol condition holds."""
    if isinstance(condition, sympy.And):
        found = [(lo, hi)]
        for part in condition.args:
            found = _intersect(found, _runs(part, s, lo, hi))
        return found
    if isinstance(condition, sympy.Or):
        return _union([r for part in condition.args for r in _runs(part, s, lo, hi)])
    if isinstance(condition, sympy.Not):
        return _complement(_runs(condition.args[0], s, lo, hi), lo, hi)
    linear = _linear(condition, s, lo, hi)
    if linear is not None:
        return linear
    try:
        return _integer_runs(sympy.solveset(condition, s, sympy.Interval(lo, hi)))
    except Untranslatable:
        raise
    except Exception as exc:  # noqa: BLE001 - sympy's own "not implemented"
        raise Untranslatable(str(condition)) from exc


def _linear(condition: Any, s: Any, lo: int, hi: int) -> list[tuple[int, int]] | None:
    """``a*s + b REL 0`` with integer a, b, solved without sympy's solver (most guards are
    ``2 <= s``, ``s == 8``, ``s <= 512``); None for anything else."""
    if not isinstance(condition, sympy.core.relational.Relational):
        return None
    poly = sympy.expand(condition.lhs - condition.rhs)
    a, b = poly.coeff(s, 1), poly.subs(s, 0)
    if not (a.is_Integer and b.is_Integer) or sympy.expand(poly - a * s - b) != 0:
        return None
    a, b = int(a), int(b)
    op = condition.rel_op
    if a == 0:
        holds = {"==": b == 0, "!=": b != 0, "<": b < 0, "<=": b <= 0, ">": b > 0, ">=": b >= 0}
        return [(lo, hi)] if holds[op] else []
    if op in ("==", "!="):
        root = -b // a if (-b) % a == 0 else None
        if op == "==":
            return [(root, root)] if root is not None and lo <= root <= hi else []
        return _complement([(root, root)] if root is not None else [], lo, hi)
    # a*s + b < 0  <=>  s < -b/a (a > 0) or s > -b/a (a < 0); integers only
    if a < 0:
        a, b = -a, -b
        op = {"<": ">", "<=": ">=", ">": "<", ">=": "<="}[op]
    if op == "<":  # a*s < -b
        top = (-b - 1) // a
        return [(lo, min(hi, top))] if lo <= min(hi, top) else []
    if op == "<=":
        top = (-b) // a
        return [(lo, min(hi, top))] if lo <= min(hi, top) else []
    if op == ">":  # a*s > -b
        bottom = (-b) // a + 1
        return [(max(lo, bottom), hi)] if max(lo, bottom) <= hi else []
    bottom = -((b) // a)  # a*s >= -b  <=>  s >= ceil(-b / a)
    return [(max(lo, bottom), hi)] if max(lo, bottom) <= hi else []


def _intersect(a: list[tuple[int, int]], b: list[tuple[int, int]]) -> list[tuple[int, int]]:
    out = []
    for lo1, hi1 in a:
        for lo2, hi2 in b:
            lo, hi = max(lo1, lo2), min(hi1, hi2)
            if lo <= hi:
                out.append((lo, hi))
    return _union(out)


def _union(runs: list[tuple[int, int]]) -> list[tuple[int, int]]:
    merged: list[tuple[int, int]] = []
    for lo, hi in sorted(runs):
        if merged and lo <= merged[-1][1] + 1:
            merged[-1] = (merged[-1][0], max(hi, merged[-1][1]))
        else:
            merged.append((lo, hi))
    return merged


def _complement(runs: list[tuple[int, int]], lo: int, hi: int) -> list[tuple[int, int]]:
    out, at = [], lo
    for a, b in _union(runs):
        if a > at:
            out.append((at, min(a - 1, hi)))
        at = max(at, b + 1)
    if at <= hi:
        out.append((at, hi))
    return [(a, b) for a, b in out if a <= b]


def _integer_runs(found: Any) -> list[tuple[int, int]]:
    """A sympy set of reals -> the inclusive runs of integers in it."""
    if found is sympy.S.EmptySet:
        return []
    parts = found.args if isinstance(found, sympy.Union) else (found,)
    runs: list[tuple[int, int]] = []
    for part in parts:
        if isinstance(part, sympy.FiniteSet):
            runs.extend((int(v), int(v)) for v in part if v.is_integer)
        elif isinstance(part, sympy.Interval):
            lo = int(math.ceil(part.start)) + (1 if part.left_open and part.start.is_integer else 0)
            hi = int(math.floor(part.end)) - (1 if part.right_open and part.end.is_integer else 0)
            if lo <= hi:
                runs.append((lo, hi))
        else:
            raise Untranslatable(f"a set sympy did not reduce: {part}")
    runs.sort()
    merged: list[tuple[int, int]] = []
    for lo, hi in runs:
        if merged and lo <= merged[-1][1] + 1:
            merged[-1] = (merged[-1][0], max(hi, merged[-1][1]))
        else:
            merged.append((lo, hi))
    return merged


@dataclass(frozen=True)
class Decision:
    served: list[Box]
    unserved: list[Box]
    counterexample: tuple[int, ...] | None
    complete: bool = True  #: the box lists hold the whole range (not cut at a limit)


def by_intervals(served_boxes: Sequence[Box], ranges: Ranges) -> Decision:
    """The union of every entry's boxes against the range, exactly."""
    cells = Cells.of(ranges, served_boxes)
    served: list[Box] = []
    unserved: list[Box] = []
    for cell in cells.all():
        (served if any(inside(b, cell) for b in served_boxes) else unserved).append(cell)
    unserved_boxes = merge(unserved)
    first = tuple(lo for lo, _ in unserved_boxes[0]) if unserved_boxes else None
    return Decision(merge(served), unserved_boxes, first)


# --- z3, where installed ------------------------------------------------------------------------


def z3_available() -> bool:
    try:
        import z3  # noqa: F401
    except ImportError:
        return False
    return True


#: box lists longer than this are cut (a parity set over 2**40 sizes has 2**39 runs)
MAX_BOXES = 4096
#: runs z3 lists one by one over a range too large to enumerate (each costs a binary search)
Z3_BOXES = 64


def by_z3(
    entries: Sequence[EntryConditions],
    ranges: Ranges,
    symbols: Mapping[str, Any],
    runs: bool = True,
) -> Decision:
    """The smallest unserved point decided by z3, and with ``runs`` (one symbol) the served and
    unserved runs found by z3 too, up to ``Z3_BOXES`` of them; without, the lists are left to
    the caller (``complete`` False)."""
    import z3

    names = list(ranges)
    ints = {name: z3.Int(name) for name in names}
    alternatives = []
    for entry in entries:
        side: list[Any] = []  # each division's "divisor > 0", for this entry's guards only
        parts = [_z3(c, ints, symbols, side) for c in entry.conditions]
        alternatives.append(z3.And(*parts, *side))
    served = z3.Or(*alternatives) if alternatives else z3.BoolVal(False)
    bounds = [z3.And(ints[n] >= lo, ints[n] <= hi) for n, (lo, hi) in ranges.items()]
    first = _smallest(z3.And(*bounds, z3.Not(served)), names, ints, ranges)
    if len(names) != 1 or not runs:
        box = None if first is None else tuple((v, v) for v in first)
        return Decision([], [box] if box else [], first, complete=first is None)
    name = names[0]
    lo, hi = ranges[name]
    x = ints[name]
    runs_served: list[Box] = []
    runs_unserved: list[Box] = []
    at, state = lo, _holds_at(served, x, lo)
    complete = True
    while at <= hi:
        if len(runs_served) + len(runs_unserved) >= Z3_BOXES:
            complete = False
            break
        flip = _smallest(
            z3.And(x > at, x <= hi, z3.Not(served) if state else served), names, ints, ranges
        )
        end = hi if flip is None else flip[0] - 1
        (runs_served if state else runs_unserved).append(((at, end),))
        if flip is None:
            break
        at, state = flip[0], not state
    return Decision(runs_served, runs_unserved, first, complete=complete)


def _holds_at(formula: Any, x: Any, value: int) -> bool:
    import z3

    solver = z3.Solver()
    solver.add(x == value, z3.Not(formula))
    return solver.check() == z3.unsat


def _smallest(
    formula: Any, names: list[str], ints: Mapping[str, Any], ranges: Ranges
) -> tuple[int, ...] | None:
    """The lexicographically smallest point satisfying ``formula``: each symbol in turn by
    binary search, the earlier ones fixed."""
    import z3

    solver = z3.Solver()
    solver.add(formula)
    if solver.check() != z3.sat:
        return None
    fixed: list[int] = []
    for name in names:
        lo, hi = ranges[name]
        x = ints[name]
        while lo < hi:
            mid = (lo + hi) // 2
            solver.push()
            solver.add(x >= lo, x <= mid)
            ok = solver.check() == z3.sat
            solver.pop()
            lo, hi = (lo, mid) if ok else (mid + 1, hi)
        solver.add(x == lo)
        fixed.append(lo)
    return tuple(fixed)


def _z3(expr: Any, ints: Mapping[str, Any], symbols: Mapping[str, Any], side: list[Any]) -> Any:
    import z3

    by_symbol = {symbols[n]: ints[n] for n in ints}

    def go(e: Any) -> Any:
        if e is sympy.true:
            return z3.BoolVal(True)
        if e is sympy.false:
            return z3.BoolVal(False)
        if e.is_Integer:
            return z3.IntVal(int(e))
        if e.is_Symbol:
            return by_symbol[e]
        args = [go(a) for a in e.args]
        if isinstance(e, sympy.Add):
            return z3.Sum(*args)
        if isinstance(e, sympy.Mul):
            out = args[0]
            for a in args[1:]:
                out = out * a
            return out
        if isinstance(e, sympy.Pow) and e.args[1].is_Integer and int(e.args[1]) > 0:
            out = args[0]
            for _ in range(int(e.args[1]) - 1):
                out = out * args[0]
            return out
        if isinstance(e, (_FloorDiv, _Mod)):
            # Python's // and % equal z3's for a positive divisor; a zero divisor makes the
            # guard raise, which Dynamo counts as failing
            a, b = args
            side.append(b > 0)
            return a / b if isinstance(e, _FloorDiv) else a % b
        relations = {
            sympy.Eq: lambda a, b: a == b,
            sympy.Ne: lambda a, b: a != b,
            sympy.Lt: lambda a, b: a < b,
            sympy.Le: lambda a, b: a <= b,
            sympy.Gt: lambda a, b: a > b,
            sympy.Ge: lambda a, b: a >= b,
        }
        for kind, make in relations.items():
            if isinstance(e, kind):
                return make(*args)
        if isinstance(e, sympy.And):
            return z3.And(*args)
        if isinstance(e, sympy.Or):
            return z3.Or(*args)
        if isinstance(e, sympy.Not):
            return z3.Not(*args)
        raise Untranslatable(str(e))

    return go(expr)
