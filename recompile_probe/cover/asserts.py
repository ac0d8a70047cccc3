"""Served sizes whose graph raises: the runtime assertions a compile left in its graph.

An entry can accept a size its graph cannot run: ``mark_unbacked`` entries guard only ``0 <= B``,
and a reshape then asserts ``Ne(B // 2, 0)`` when the graph runs, so B = 0, 1 and every odd B are
served, and the call fails. Each compile's deferred runtime asserts (captured with the ShapeEnv,
provenance/capture.py) are read over the range's symbols and evaluated at served sizes, for the
entry Dynamo would run there.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import sympy

from ..provenance.capture import RuntimeAsserts
from ..torch_compat import cache
from .guards import Evaluator


@dataclass(frozen=True)
class _Assert:
    expr: Any  #: over the graph's symbols
    names: dict  #: graph symbol -> range symbol name (the others are constants)
    constants: dict  #: graph symbol -> its size at the template's call
    text: str  #: the assertion in the range's symbols, e.g. "Ne(B//2, 0)"

    def holds(self, sizes: Mapping[str, int]) -> bool | None:
        fast = _python(self.expr)
        if fast is not None:
            values = {s: sizes[n] for s, n in self.names.items()}
            values.update(self.constants)
            try:
                return bool(fast(values))
            except ZeroDivisionError:  # the graph's assertion divides by zero: it fails
                return False
            except Exception:  # noqa: BLE001 - not plain integers after all: ask sympy
                pass
        values = {s: sympy.Integer(sizes[n]) for s, n in self.names.items()}
        values.update({s: sympy.Integer(v) for s, v in self.constants.items()})
        try:
            found = self.expr.xreplace(values)
        except Exception:  # noqa: BLE001 - a division by zero in the assertion: it fails
            return False
        if found is sympy.true:
            return True
        if found is sympy.false:
            return False
        return None


def read(
    entries: Sequence[Any],
    asserts_of: Callable[[str | None], RuntimeAsserts | None],
    evaluator: Evaluator,
    names: Sequence[str],
) -> list[list[_Assert]] | None:
    """Per entry (in Dynamo's order) its assertions over the range; None where no compile of
    the frame was captured (the user's own backend)."""
    f_locals = evaluator.locals_at(evaluator.base)
    out: list[list[_Assert]] = []
    seen_any = False
    for entry in entries:
        found = asserts_of(cache.entry_compile_id(entry))
        if found is None:
            out.append([])
            continue
        seen_any = True
        out.append(
            [
                a
                for a in (
                    _translate(e, found.dims, evaluator, names, f_locals) for e in found.exprs
                )
                if a
            ]
        )
    return out if seen_any else None


def _translate(
    expr: Any,
    dims: Mapping[Any, tuple[str, int]],
    evaluator: Evaluator,
    names: Sequence[str],
    f_locals: Mapping[str, Any] | None,
) -> _Assert | None:
    mapped: dict[Any, str] = {}
    constants: dict[Any, int] = {}
    for symbol in expr.free_symbols:
        where = dims.get(symbol)
        if where is None:
            return None  # a symbol of no input (an .item() value): not a size condition
        name = evaluator.template.sources.get(where)
        if name is not None and name in names:
            mapped[symbol] = name
        elif f_locals is not None:
            try:
                tensor = eval(where[0], {"__builtins__": {}}, {"L": f_locals})  # Dynamo's source
                constants[symbol] = int(tensor.shape[where[1]])
            except Exception:  # noqa: BLE001
                return None
        else:
            return None
    if not mapped:
        return None
    text = str(expr.xreplace({s: sympy.Symbol(n) for s, n in mapped.items()}))
    return _Assert(expr, mapped, constants, text)


def failures(
    per_entry: list[list[_Assert]],
    evaluator: Evaluator,
    points: Sequence[tuple[int, ...]],
    names: Sequence[str],
) -> dict[tuple[int, ...], str]:
    """point -> the first assertion that fails there, for the entry that serves it."""
    out: dict[tuple[int, ...], str] = {}
    if not any(per_entry):
        return out
    for point in points:
        sizes = dict(zip(names, point))
        index = evaluator.serving(sizes)
        if index is None or index < 0 or not per_entry[index]:
            continue
        for item in per_entry[index]:
            if item.holds(sizes) is False:
                out[point] = item.text
                break
    return out


_RELATIONS: dict[str, Callable[[Any, Any], bool]] = {
    "Equality": lambda a, b: a == b,
    "Unequality": lambda a, b: a != b,
    "StrictLessThan": lambda a, b: a < b,
    "LessThan": lambda a, b: a <= b,
    "StrictGreaterThan": lambda a, b: a > b,
    "GreaterThan": lambda a, b: a >= b,
}


@functools.cache
def _python(expr: Any) -> Callable[[Mapping[Any, int]], Any] | None:
    """The assertion as a Python closure over integer sizes (microseconds a point, where sympy's
    substitution takes a hundred); None where it holds a function this does not know."""
    name = type(expr).__name__
    if expr.is_Integer:
        value = int(expr)
        return lambda env: value
    if expr.is_Symbol:
        return lambda env: env[expr]
    if expr is sympy.true or expr is sympy.false:
        truth = bool(expr)
        return lambda env: truth
    parts = [_python(a) for a in expr.args]
    if any(p is None for p in parts):
        return None
    args: list[Callable[[Mapping[Any, int]], Any]] = [p for p in parts if p is not None]
    if name == "Add":
        return lambda env: sum(a(env) for a in args)
    if name == "Mul":
        return lambda env: functools.reduce(lambda x, y: x * y, (a(env) for a in args), 1)
    if name == "Pow" and expr.args[1].is_Integer and int(expr.args[1]) >= 0:
        return lambda env: args[0](env) ** int(expr.args[1])
    if name == "FloorDiv":
        return lambda env: args[0](env) // args[1](env)
    if name in ("Mod", "PythonMod"):
        return lambda env: args[0](env) % args[1](env)
    if name in _RELATIONS:
        relation = _RELATIONS[name]
        return lambda env: relation(args[0](env), args[1](env))
    if name == "And":
        return lambda env: all(a(env) for a in args)
    if name == "Or":
        return lambda env: any(a(env) for a in args)
    if name == "Not":
        return lambda env: not args[0](env)
    return None
