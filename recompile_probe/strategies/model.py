"""A strategy as data: how the target is compiled and how its inputs are marked. No torch.

A strategy is a few knobs: torch.compile kwargs, a mark applied to the dims of the varying size
symbols before each call (in eager code, as the vLLM fix does) or to single dims (``marks``),
config patches, and a stance. The built-ins are in builtins.py; a scenario's
``custom_strategies`` (scenario/strategies.py) are built from the same fields. apply.py applies
one (torch); advice.py writes the code, environment and YAML one stands for.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from ..sizes.points import is_symbol

#: mark kind -> (module, function). mark_unbacked is not re-exported from torch._dynamo.
MARKS: Mapping[str, tuple[str, str]] = MappingProxyType(
    {
        "dynamic": ("torch._dynamo", "mark_dynamic"),
        "maybe_dynamic": ("torch._dynamo", "maybe_mark_dynamic"),
        "unbacked": ("torch._dynamo.decorators", "mark_unbacked"),
        "static": ("torch._dynamo", "mark_static"),
    }
)

#: Placeholder in a config value, filled with the batch dims as Dynamo sources: "L['x']:0,...".
BATCH_SOURCES = "{batch_sources}"

#: Placeholders in a mark option, filled per size symbol when the run marks it: the symbol's
#: name (a ``shape_id`` shared by every dim it moves), and the smallest and largest size the
#: scenario's sequences give it (a range the compiler may assume).
SYMBOL = "{symbol}"
SYMBOL_MIN = "{min}"
SYMBOL_MAX = "{max}"
PLACEHOLDERS = (SYMBOL, SYMBOL_MIN, SYMBOL_MAX)


@dataclass(frozen=True)
class LocationMark:
    """One mark on one dim of one argument, whatever size symbol moves it: the unit `suggest`
    searches over, and what a `marks:` entry of a custom strategy holds."""

    #: where the tensor is, written as in `dims:` (0, "input_ids", "cache.keys[*]")
    argument: int | str
    dim: int
    kind: str  #: a ``MARKS`` key

    def to_dict(self) -> dict[str, Any]:
        return {"argument": self.argument, "dim": self.dim, "kind": self.kind}


@dataclass(frozen=True)
class Strategy:
    """How the target is compiled and how its inputs are marked."""

    name: str
    description: str
    #: torch.compile(dynamic=...): None (automatic), True or False.
    dynamic: bool | None = None
    #: Mark applied before every call (see ``MARKS``): one kind for every size symbol that varies
    #: in the sequence, or ``{symbol: kind}`` per symbol (a symbol left out stays unmarked).
    mark: str | Mapping[str, str] | None = None
    #: Keyword options for the mark function (hint_override, min, max, strict, ...), or
    #: ``{symbol: {option: value}}`` per symbol.
    mark_options: Mapping[str, Any] = field(default_factory=dict)
    #: Dotted config attribute -> value, patched for the run and restored after it.
    config: Mapping[str, Any] = field(default_factory=dict)
    #: torch.compiler.set_stance(...) for the run.
    stance: str | None = None
    #: Extra torch.compile kwargs (on top of the scenario's ``compile``).
    compile: Mapping[str, Any] = field(default_factory=dict)
    #: Run the target exactly as the user decorated it (it must already be torch.compile'd).
    as_is: bool = False
    #: Marks on single (argument, dim) pairs, on top of ``mark``: the form `suggest` writes.
    marks: tuple[LocationMark, ...] = ()
    #: Keyword arguments for the scenario's driver (``driver(fn, **sizes, **driver_options)``):
    #: a change to the program, e.g. {"cache_implementation": "static"}.
    driver_options: Mapping[str, Any] = field(default_factory=dict)
    #: Compile with a declarative shapes spec (torch.fx.experimental.dynamic_spec.ShapesSpec)
    #: built from the scenario: one ShapeVar per varying size symbol, with the symbol's smallest
    #: and largest size in the scenario as its range, on the dims it moves. torch.compile takes it
    #: as ``dynamic_shapes=`` or ``shapes_spec=``, whichever the release has.
    shapes_spec: bool = False
    #: torch.compiler.set_enable_guard_collectives(True) for the run: every rank all-gathers
    #: whether its guards passed before each compiled call, and all recompile if one missed
    #: (only in a distributed scenario: it needs a process group)
    guard_collectives: bool = False

    def summary(self) -> str:
        """The knobs in one line, e.g. for `recompile-probe strategies`."""
        parts = []
        if self.as_is:
            return "the target's own torch.compile decoration"
        parts.append(f"dynamic={self.dynamic}")
        if isinstance(self.mark, str):
            opts = "".join(f", {k}={v!r}" for k, v in self.mark_options.items())
            parts.append(f"{MARKS[self.mark][1]}(t, dim{opts})")
        elif self.mark:
            for symbol, (kind, options) in self.plan(list(self.mark)).items():
                opts = "".join(f", {k}={v!r}" for k, v in options.items())
                parts.append(f"{symbol}: {MARKS[kind][1]}(t, dim{opts})")
        for m in self.marks:
            parts.append(f"{MARKS[m.kind][1]}({m.argument}, {m.dim})")
        for key, value in self.config.items():
            parts.append(f"{key.rsplit('.', 1)[-1]}={value!r}")
        if self.stance:
            parts.append(f"stance={self.stance}")
        for key, value in self.compile.items():
            parts.append(f"{key}={value!r}")
        for key, value in self.driver_options.items():
            parts.append(f"driver {key}={value!r}")
        if self.shapes_spec:
            parts.append("shapes spec: ShapeVar(symbol, min, max) per varying symbol")
        if self.guard_collectives:
            parts.append("set_enable_guard_collectives(True)")
        return ", ".join(parts)

    def plan(self, acting: Sequence[str]) -> dict[str, tuple[str, dict[str, Any]]]:
        """symbol -> (mark kind, mark options) for what this strategy marks; ``acting`` are the
        symbols a one-kind mark applies to (those that vary in the sequence)."""
        if self.mark is None:
            return {}
        kinds = (
            {s: self.mark for s in acting}
            if isinstance(self.mark, str)
            else {s: k for s, k in self.mark.items() if k is not None}
        )
        per_symbol = options_per_symbol(self.mark_options)
        return {
            s: (k, dict(self.mark_options.get(s, {})) if per_symbol else dict(self.mark_options))
            for s, k in kinds.items()
        }

    @property
    def mark_kinds(self) -> tuple[str, ...]:
        kinds = (
            []
            if self.mark is None
            else [self.mark]
            if isinstance(self.mark, str)
            else list(self.mark.values())
        )
        kinds += [m.kind for m in self.marks]
        return tuple(dict.fromkeys(k for k in kinds if k is not None))


def options_per_symbol(options: Mapping[str, Any]) -> bool:
    """``{B: {hint_override: 8}}`` rather than ``{hint_override: 8}``."""
    return bool(options) and all(
        is_symbol(k) and isinstance(v, Mapping) for k, v in options.items()
    )


def filled(
    options: Mapping[str, Any], symbol: str, ranges: Mapping[str, tuple[int, int]]
) -> dict[str, Any]:
    """Mark options with the placeholders (``{symbol}``, ``{min}``, ``{max}``) replaced; an
    option whose range is unknown is left out."""
    out: dict[str, Any] = {}
    for key, value in options.items():
        if value == SYMBOL:
            out[key] = symbol
        elif value in (SYMBOL_MIN, SYMBOL_MAX):
            if symbol in ranges:
                out[key] = ranges[symbol][0 if value == SYMBOL_MIN else 1]
        else:
            out[key] = value
    return out


def symbol_ranges(points: Mapping[str, Sequence[Any]]) -> dict[str, tuple[int, int]]:
    """symbol -> (smallest, largest size) over every point of every sequence: the range a
    scenario gives each symbol."""
    seen: dict[str, list[int]] = {}
    for sequence in points.values():
        for point in sequence:
            for symbol, size in point.items:
                seen.setdefault(symbol, []).append(size)
    return {symbol: (min(sizes), max(sizes)) for symbol, sizes in seen.items()}
