"""Specialization strategies as data, the built-in presets, and how one is applied.

A strategy is four knobs: torch.compile kwargs, a mark applied to the batch dims of every tensor
input before each call (in eager code, as the vLLM fix does), config patches, and a stance. A
scenario can define its own from the same fields (``custom_strategies``). Importing this module
does not import torch; ``applied`` and ``missing_features`` do.
"""

from __future__ import annotations

import contextlib
import importlib
import inspect
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any, Callable, Iterator, Mapping, Sequence

#: mark kind -> (module, function). mark_unbacked is not re-exported from torch._dynamo.
MARKS: Mapping[str, tuple[str, str]] = MappingProxyType({
    "dynamic": ("torch._dynamo", "mark_dynamic"),
    "maybe_dynamic": ("torch._dynamo", "maybe_mark_dynamic"),
    "unbacked": ("torch._dynamo.decorators", "mark_unbacked"),
    "static": ("torch._dynamo", "mark_static"),
})

#: Placeholder in a config value, filled with the batch dims as Dynamo sources: "L['x']:0,...".
BATCH_SOURCES = "{batch_sources}"


@dataclass(frozen=True)
class LocationMark:
    """One mark on one dim of one argument, whatever size symbol moves it: the unit `suggest`
    searches over, and what a `marks:` entry of a custom strategy holds."""

    #: where the tensor is, written as in `dims:` (0, "input_ids", "cache.keys[*]")
    argument: int | str
    dim: int
    kind: str  #: a ``MARKS`` key

    def as_dict(self) -> dict[str, Any]:
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
        return ", ".join(parts)

    def plan(self, acting: Sequence[str]) -> dict[str, tuple[str, dict[str, Any]]]:
        """symbol -> (mark kind, mark options) for what this strategy marks; ``acting`` are the
        symbols a one-kind mark applies to (those that vary in the sequence)."""
        if self.mark is None:
            return {}
        kinds = {s: self.mark for s in acting} if isinstance(self.mark, str) else \
            {s: k for s, k in self.mark.items() if k is not None}
        per_symbol = options_per_symbol(self.mark_options)
        return {s: (k, dict(self.mark_options.get(s, {})) if per_symbol
                    else dict(self.mark_options)) for s, k in kinds.items()}

    @property
    def mark_kinds(self) -> tuple[str, ...]:
        kinds = [] if self.mark is None else [self.mark] if isinstance(self.mark, str) \
            else list(self.mark.values())
        kinds += [m.kind for m in self.marks]
        return tuple(dict.fromkeys(k for k in kinds if k is not None))


def options_per_symbol(options: Mapping[str, Any]) -> bool:
    """``{B: {hint_override: 8}}`` rather than ``{hint_override: 8}``."""
    from .sizes import is_symbol

    return bool(options) and all(is_symbol(k) and isinstance(v, Mapping)
                                 for k, v in options.items())


BUILTINS: Mapping[str, Strategy] = MappingProxyType({s.name: s for s in (
    Strategy("default", "torch.compile defaults: static first, automatic dynamic after a size "
             "change (B=1 is still specialized)."),
    Strategy("static", "dynamic=False: every new batch size compiles again.", dynamic=False),
    Strategy("dynamic_true", "dynamic=True: symbolic sizes from the first call, but sizes 0 and 1 "
             "are specialized.", dynamic=True),
    Strategy("mark_dynamic", "torch._dynamo.mark_dynamic on the batch dims before each call "
             "(backed: B=1 still specializes).", mark="dynamic"),
    Strategy("maybe_mark_dynamic", "torch._dynamo.maybe_mark_dynamic on the batch dims (a hint "
             "that may be specialized away).", mark="maybe_dynamic"),
    Strategy("mark_unbacked", "torch._dynamo.decorators.mark_unbacked on the batch dims before "
             "each call, in eager code (the vLLM fix): no 0/1 specialization.", mark="unbacked"),
    Strategy("unbacked_sources", "torch.compiler.config.unbacked_sources names the batch dims; "
             "no tensor is marked.",
             config={"torch.compiler.config.unbacked_sources": BATCH_SOURCES}),
    Strategy("backed_size_oblivious", "mark_dynamic plus backed_size_oblivious: backed sizes "
             "reasoned about as if >= 2.", mark="dynamic",
             config={"torch.fx.experimental._config.backed_size_oblivious": True}),
    Strategy("auto_unbacked", "automatic dynamic marks changed dims unbacked "
             "(automatic_dynamic_shapes_mark_as='unbacked').",
             config={"torch._dynamo.config.automatic_dynamic_shapes_mark_as": "unbacked"}),
    Strategy("as_is", "the target exactly as decorated by its own torch.compile(...).",
             as_is=True),
)})

#: Keys a scenario's ``custom_strategies`` entry may use -> what they hold (schema.py reads it).
CUSTOM_KEYS: Mapping[str, str] = MappingProxyType({
    "extends": "A built-in or earlier custom strategy whose fields this one starts from.",
    "description": "Shown in tables and reports (default: a summary of the knobs).",
    "dynamic": "torch.compile(dynamic=...): null (automatic), true or false.",
    "mark": "Mark applied before every call to the dims of every varying size symbol (dynamic, "
            "maybe_dynamic, unbacked, static), or {SYMBOL: kind} per symbol (a symbol left out "
            "stays unmarked).",
    "mark_options": "Keyword arguments of the mark function (hint_override, min, max, strict, "
                    "...), or {SYMBOL: {option: value}} per symbol.",
    "config": "Dotted torch config attribute -> value, patched for the run; the value "
              "{batch_sources} expands to the marked dims as Dynamo sources.",
    "stance": "torch.compiler.set_stance(...) for the run.",
    "compile": "Extra torch.compile keyword arguments.",
    "marks": "Marks on single dims, on top of `mark`: a list of {argument: PATH, dim: N, kind: "
             "dynamic|unbacked|...}, PATH written as in `dims:` (what `suggest --write` adds).",
})


def custom(name: str, spec: Mapping[str, Any], known: Mapping[str, Strategy]) -> Strategy:
    """A strategy from a scenario's ``custom_strategies`` entry (validated by the scenario)."""
    base = known[spec["extends"]] if "extends" in spec else Strategy(name, "")
    changes: dict[str, Any] = {"name": name}
    for key in list(CUSTOM_KEYS)[1:]:
        if key in spec:
            value = spec[key]
            if key in ("config", "compile") or (key == "mark_options" and options_per_symbol(
                    base.mark_options) == options_per_symbol(value)):
                value = {**getattr(base, key), **value}
            changes[key] = value
    if "marks" in spec:
        changes["marks"] = (*base.marks, *(LocationMark(m["argument"], m["dim"], m["kind"])
                                           for m in spec["marks"]))
    if "description" not in spec:
        changes["description"] = f"custom: {replace(base, **changes).summary()}"
    return replace(base, **changes)


def parse_custom(ctx: Any, value: Any, symbols: Sequence[str]) -> dict[str, Strategy]:
    """A scenario's ``custom_strategies:`` (``ctx`` is a spec.Context), validated field by field."""
    from .spec import suggest

    ctx.expect("custom_strategies", value, dict, "a mapping of name -> strategy fields")
    out: dict[str, Strategy] = {}
    kinds = tuple(MARKS)
    for name, spec in value.items():
        key = f"custom_strategies.{name}"
        name = str(name)
        if name in BUILTINS:
            raise ctx.fail(key, f"{name!r} is a built-in strategy",
                           "Give your strategy its own name and `extends: " + name + "`.")
        ctx.expect(key, spec, dict, "a mapping of strategy fields")
        ctx.keys(key, spec, tuple(CUSTOM_KEYS))
        if "extends" in spec:
            known = [*BUILTINS, *out]
            if spec["extends"] not in known:
                raise ctx.fail(f"{key}.extends", f"unknown strategy {spec['extends']!r}",
                               suggest(spec["extends"], known))
        if "dynamic" in spec and spec["dynamic"] is not None:
            ctx.expect(f"{key}.dynamic", spec["dynamic"], bool, "true, false or null")
        mark = spec.get("mark")
        per_symbol = mark.items() if isinstance(mark, dict) else \
            [] if mark is None else [(None, mark)]
        if isinstance(mark, dict) and not mark:
            raise ctx.fail(f"{key}.mark", "expected a mark kind or {SYMBOL: kind, ...}")
        for symbol, kind in per_symbol:
            mkey = f"{key}.mark" if symbol is None else f"{key}.mark.{symbol}"
            if symbol is not None and str(symbol) not in symbols:
                raise ctx.fail(mkey, f"unknown size symbol {str(symbol)!r}",
                               suggest(symbol, symbols) or
                               f"This scenario's symbols: {', '.join(symbols)}.")
            if kind not in kinds and not (symbol is not None and kind is None):
                raise ctx.fail(mkey, f"unknown mark {kind!r}",
                               suggest(kind, kinds) or f"Marks: {', '.join(kinds)}.")
        for sub in ("mark_options", "config", "compile"):
            if sub in spec:
                ctx.expect(f"{key}.{sub}", spec[sub], dict, "a mapping")
        if options_per_symbol(spec.get("mark_options", {})):
            for symbol in spec["mark_options"]:
                if symbol not in symbols:
                    raise ctx.fail(f"{key}.mark_options.{symbol}",
                                   f"unknown size symbol {symbol!r}", suggest(symbol, symbols))
        for dotted in spec.get("config", {}):
            if not str(dotted).startswith("torch.") or "." not in str(dotted)[6:]:
                raise ctx.fail(f"{key}.config.{dotted}", "config keys are dotted torch "
                               "attributes, e.g. torch._dynamo.config.recompile_limit")
        for sub in ("description", "stance"):
            if spec.get(sub) is not None:
                ctx.expect(f"{key}.{sub}", spec[sub], str, "a string")
        if "marks" in spec:
            _check_marks(ctx, f"{key}.marks", spec["marks"])
        out[name] = custom(name, spec, {**BUILTINS, **out})
    return out


#: Keys of one `marks:` entry.
LOCATION_MARK_KEYS: Mapping[str, str] = MappingProxyType({
    "argument": "The argument: a positional index, a keyword or a path as in `dims:`.",
    "dim": "The dim of that tensor (0-based).",
    "kind": "The mark: dynamic, maybe_dynamic, unbacked or static.",
})


def _check_marks(ctx: Any, key: str, value: Any) -> None:
    from .sizes import SizeError, parse_path
    from .spec import suggest

    ctx.expect(key, value, list, "a list of {argument, dim, kind}")
    for i, entry in enumerate(value):
        at = f"{key}[{i}]"
        ctx.expect(at, entry, dict, "a mapping {argument: PATH, dim: N, kind: KIND}")
        ctx.keys(at, entry, LOCATION_MARK_KEYS)
        missing = [k for k in LOCATION_MARK_KEYS if k not in entry]
        if missing:
            raise ctx.fail(at, f"missing {', '.join(missing)}")
        try:
            parse_path(f"{at}.argument", entry["argument"])
        except SizeError as exc:
            raise ctx.fail(exc.key, exc.message, exc.remedy) from None
        if isinstance(entry["dim"], bool) or not isinstance(entry["dim"], int) or entry["dim"] < 0:
            raise ctx.fail(f"{at}.dim", f"expected a dim (a non-negative integer), got "
                           f"{entry['dim']!r}")
        if entry["kind"] not in MARKS:
            raise ctx.fail(f"{at}.kind", f"unknown mark {entry['kind']!r}",
                           suggest(str(entry["kind"]), list(MARKS)) or
                           f"Marks: {', '.join(MARKS)}.")


# --- torch side (lazy imports) --------------------------------------------------------------------

def _resolve(dotted: str) -> tuple[Any, str]:
    module_name, _, attr = dotted.rpartition(".")
    return importlib.import_module(module_name), attr


def missing_features(strategy: Strategy, *, target_is_compiled: bool = False) -> str | None:
    """Why the installed torch (or the target) cannot run this strategy; None when it can."""
    if strategy.as_is:
        return None if target_is_compiled else (
            "the target is not torch.compile'd, so there is no decoration to run as is")
    for kind, options in _kinds_and_options(strategy):
        module_name, fn_name = MARKS[kind]
        try:
            fn = getattr(importlib.import_module(module_name), fn_name)
        except (ImportError, AttributeError):
            return f"{module_name}.{fn_name} does not exist in this torch"
        params = inspect.signature(fn).parameters
        unknown = [k for k in options if k not in params]
        if unknown:
            return f"{fn_name}() in this torch has no option {', '.join(unknown)}"
    for dotted in strategy.config:
        try:
            module, attr = _resolve(dotted)
        except ImportError:
            return f"config module for {dotted} does not exist in this torch"
        if not hasattr(module, attr):
            return f"config {dotted} does not exist in this torch"
        from .compat import knob_not_honoured

        why = knob_not_honoured(dotted)
        if why is not None:
            return why
    if strategy.stance:
        import torch

        if not hasattr(torch.compiler, "set_stance"):
            return "torch.compiler.set_stance does not exist in this torch"
    return None


def _kinds_and_options(strategy: Strategy) -> list[tuple[str, Mapping[str, Any]]]:
    located = [(m.kind, {}) for m in strategy.marks]
    if strategy.mark is None:
        return located
    symbols = list(strategy.mark) if isinstance(strategy.mark, Mapping) else \
        list(strategy.mark_options) if options_per_symbol(strategy.mark_options) else ["*"]
    return [*strategy.plan(symbols).values(), *located]


def dim_sources(sources: list[tuple[str, int]]) -> str:
    """Dynamo source names of dims as config wants them, e.g. "L['x']:0,L['values']:0"."""
    return ",".join(f"{name}:{d}" for name, d in dict.fromkeys(sources))


@contextlib.contextmanager
def patched(dotted: str, value: Any) -> Iterator[None]:
    module, attr = _resolve(dotted)
    patch = getattr(module, "patch", None)
    if callable(patch):  # a torch ConfigModule: its own patch restores exactly
        with patch(attr, value):
            yield
        return
    old = getattr(module, attr)
    setattr(module, attr, value)
    try:
        yield
    finally:
        setattr(module, attr, old)


@contextlib.contextmanager
def applied(strategy: Strategy, sources: str) -> Iterator[None]:
    """Config patches and stance for the duration of one run; always restored."""
    import torch

    with contextlib.ExitStack() as stack:
        for dotted, value in strategy.config.items():
            if value == BATCH_SOURCES:
                value = sources
            stack.enter_context(patched(dotted, value))
        if strategy.stance:
            stack.enter_context(torch.compiler.set_stance(strategy.stance))
        yield


def _is_marking(name: str) -> bool:
    # What mark_dynamic / maybe_mark_dynamic / mark_unbacked / mark_static set on a tensor:
    # _dynamo_dynamic_indices, _dynamo_unbacked_indices, _dynamo_hint_overrides, ...,
    # _has_dynamo_dim_marking, _specialize_on (torch/_dynamo/decorators.py).
    return "dynamo" in name or name == "_specialize_on"


def _tensors_under(t: Any) -> list[Any]:
    """The tensor and, for a traceable wrapper subclass (DTensor, ...), the inner tensors that the
    mark functions mark too."""
    out, stack = [], [t]
    while stack:
        current = stack.pop()
        out.append(current)
        flatten = getattr(current, "__tensor_flatten__", None)
        if callable(flatten):
            try:
                attrs, _ = flatten()
            except Exception:  # noqa: BLE001 - a subclass we cannot open: its own marks only
                continue
            stack.extend(getattr(current, a) for a in attrs)
    return out


class Marker:
    """Marks the dims that follow the strategy's symbols, and undoes every mark afterwards.

    Marks are attributes on the tensor objects, so a factory that hands out the same tensors again
    (memoized, module-level) would carry them into the next strategy. Before a tensor's first mark
    in a run its marking attributes are snapshot (marks the user's own factory set are kept);
    ``restore`` puts them back, whatever the run did.
    """

    def __init__(self, plan: Mapping[str, tuple[str, Mapping[str, Any]]],
                 located: Sequence[LocationMark] = ()) -> None:
        from .sizes import DimRef, parse_path

        # A location mark is a plan entry of its own under a key no symbol can have ("@0").
        plan = {**plan, **{f"@{i}": (m.kind, {}) for i, m in enumerate(located)}}
        self._located = [DimRef(f"@{i}", parse_path("marks", m.argument), (m.dim,))
                         for i, m in enumerate(located)]
        #: symbol -> (mark function, options)
        self._plan = {symbol: (getattr(importlib.import_module(MARKS[kind][0]), MARKS[kind][1]),
                               dict(options)) for symbol, (kind, options) in plan.items()}
        #: id -> (weak reference, marking attributes before the run's first mark)
        self._saved: dict[int, tuple[Any, dict[str, Any]]] = {}
        #: (argument index or path, dim) pairs marked at least once
        self.marked: set[tuple[int | str, int]] = set()

    def __call__(self, args: tuple, kwargs: Mapping[Any, Any], refs: Sequence[Any] | None = None,
                 param_names: Sequence[str | None] = ()) -> None:
        """Mark ``refs`` (sizes.DimRef) in these inputs. ``marker(args, {index: dims})`` is the
        batch-only form: positional arguments whose dims follow B."""
        import torch

        from .sizes import BATCH, DimRef, Path, resolve

        if refs is None:
            refs = [DimRef(BATCH, Path(i), tuple(dims)) for i, dims in kwargs.items()]
            kwargs = {}
        for ref in [*refs, *self._located] if self._located else refs:
            if ref.symbol not in self._plan:
                continue
            mark_fn, options = self._plan[ref.symbol]
            for path, value in resolve(ref.path, args, kwargs, param_names):
                if not isinstance(value, torch.Tensor):
                    continue
                self._snapshot(value)
                where = path.head if isinstance(path.head, int) and not path.steps else str(path)
                for dim in ref.dims:
                    self.marked.add((where, dim))  # before: a mark that raises still counts
                    mark_fn(value, dim, **options)

    def _snapshot(self, t: Any) -> None:
        import copy
        import weakref

        for tensor in _tensors_under(t):
            if id(tensor) in self._saved and self._saved[id(tensor)][0]() is tensor:
                continue
            attrs = {k: copy.copy(v) for k, v in vars(tensor).items() if _is_marking(k)}
            self._saved[id(tensor)] = (weakref.ref(tensor), attrs)

    def restore(self) -> None:
        import copy

        for ref, attrs in self._saved.values():
            tensor = ref()
            if tensor is None:  # gone with its marks
                continue
            for name in [k for k in vars(tensor) if _is_marking(k)]:
                delattr(tensor, name)
            for name, value in attrs.items():
                setattr(tensor, name, copy.copy(value))
        self._saved.clear()


def marker(strategy: Strategy, acting: Sequence[str] = ("B",)) -> Marker | None:
    """A ``Marker`` for the strategy's marks on the ``acting`` symbols, or None for none."""
    plan = strategy.plan(acting)
    return Marker(plan, strategy.marks) if plan or strategy.marks else None


def compile_kwargs(strategy: Strategy, scenario_compile: Mapping[str, Any]) -> tuple[dict, dict]:
    """(torch.compile kwargs, extra config patches) for this strategy.

    ``recompile_limit`` is a torch.compile kwarg only in recent torch; elsewhere it becomes the
    equivalent config so a scenario works on both.
    """
    import torch

    kwargs = {**scenario_compile, **strategy.compile}
    kwargs["dynamic"] = strategy.dynamic
    config: dict[str, Any] = {}
    if "recompile_limit" in kwargs and "recompile_limit" not in inspect.signature(
        torch.compile
    ).parameters:
        limit = kwargs.pop("recompile_limit")
        name = ("recompile_limit" if hasattr(torch._dynamo.config, "recompile_limit")
                else "cache_size_limit")
        config[f"torch._dynamo.config.{name}"] = limit
    return kwargs, config
