"""Applying a strategy to one run: its marks, config patches, stance and compile kwargs.

torch is imported only when a run applies a strategy (the functions below), never at import.
"""

from __future__ import annotations

import contextlib
import copy
import importlib
import inspect
import weakref
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from ..sizes.paths import DimRef, Path, parse_path, resolve
from ..sizes.points import BATCH
from .model import (
    BATCH_SOURCES,
    MARKS,
    LocationMark,
    Strategy,
    filled,
    options_per_symbol,
)


def _resolve(dotted: str) -> tuple[Any, str]:
    module_name, _, attr = dotted.rpartition(".")
    return importlib.import_module(module_name), attr


def missing_features(strategy: Strategy, *, target_is_compiled: bool = False) -> str | None:
    """Why the installed torch (or the target) cannot run this strategy; None when it can."""
    if strategy.as_is:
        return (
            None
            if target_is_compiled
            else ("the target is not torch.compile'd, so there is no decoration to run as is")
        )
    from ..torch_compat import knobs
    from ..torch_compat.compile_keywords import spec_keyword

    for kind, options in _kinds_and_options(strategy):
        module_name, fn_name = MARKS[kind]
        try:
            fn = getattr(importlib.import_module(module_name), fn_name)
        except (ImportError, AttributeError):
            return f"{module_name}.{fn_name} does not exist in this torch"
        params = inspect.signature(fn).parameters
        unknown = [k for k in options if k not in params]
        if unknown:
            return f"{fn_name}() in this torch has no option {', '.join(unknown)}" + (
                knobs.release_of(f"{fn_name}:{unknown[0]}")
            )
    for key in strategy.compile:
        if (why := knobs.compile_keyword_missing(key)) is not None:
            return why
    if strategy.shapes_spec and (spec_keyword() is None or not knobs.shapes_spec_types()):
        return (
            "torch.compile in this torch takes no ShapesSpec (dynamic_shapes= from torch 2.14, "
            "shapes_spec= on torch 2.13)"
        )
    for dotted in strategy.config:
        try:
            module, attr = _resolve(dotted)
        except ImportError:
            return f"config module for {dotted} does not exist in this torch"
        if not hasattr(module, attr):
            return f"config {dotted} does not exist in this torch" + knobs.release_of(dotted)
        from ..torch_compat.knobs import knob_not_honoured

        why = knob_not_honoured(dotted)
        if why is not None:
            return why
    if strategy.stance:
        from ..torch_compat.stance import set_stance_missing

        if (why := set_stance_missing()) is not None:
            return why
    if strategy.guard_collectives:
        from ..torch_compat.collectives import guard_collectives_missing

        why = guard_collectives_missing()
        if why is not None:
            return why
    return None


#: What an inherited torch.compiler.config.static_sources overrides (measured on torch 2.15,
#: and as its docstring says): automatic dynamic, dynamic=True, dynamic_sources, unbacked_sources
#: and maybe_mark_dynamic; not mark_dynamic, mark_unbacked, nor a shapes spec.
STATIC_SOURCES = "torch.compiler.config.static_sources"
STATIC_SOURCES_ENV = "TORCH_COMPILE_STATIC_SOURCES"


def inherited_overrides(
    strategy: Strategy,
    sources: Callable[[], list[tuple[str, int]]],
    environ: Mapping[str, str],
) -> list[str]:
    """Notes for the inherited settings (in force before the strategy applies its own) that
    override what this strategy does to the dims ``sources`` of its varying symbols: its counts
    are then the setting's, not the strategy's."""
    from ..torch_compat.settings import static_matches, value_of

    value = value_of(STATIC_SOURCES)
    if not isinstance(value, str) or not value or STATIC_SOURCES in strategy.config:
        return []
    held = static_matches(value, sources())
    if not held or strategy.as_is:
        return []
    kinds = set(strategy.mark_kinds)
    sources_config = [
        k for k in strategy.config if k.endswith(("dynamic_sources", "unbacked_sources"))
    ]
    automatic = (
        strategy.dynamic is None and not kinds and not strategy.shapes_spec and not sources_config
    )
    what = [
        *(["dynamic=True"] if strategy.dynamic is True else []),
        *(k.rsplit(".", 1)[-1] for k in sources_config),
        *(["maybe_mark_dynamic"] if "maybe_dynamic" in kinds else []),
        *(["automatic dynamic shapes"] if automatic else []),
    ]
    if not what:
        return []
    origin = (
        f"{STATIC_SOURCES_ENV}={value!r} (inherited from the environment)"
        if environ.get(STATIC_SOURCES_ENV) == value
        else f"{STATIC_SOURCES}={value!r} (inherited: set before the run)"
    )
    dims = ", ".join(f"{s}:{d}" for s, d in held)
    return [
        f"overridden: {origin} holds {dims} static over this strategy's "
        f"{' and '.join(what)}; these counts are that setting's, not the strategy's "
        "(--clean-env runs without inherited compile settings)"
    ]


def _kinds_and_options(strategy: Strategy) -> list[tuple[str, Mapping[str, Any]]]:
    located: list[tuple[str, Mapping[str, Any]]] = [(m.kind, {}) for m in strategy.marks]
    if strategy.mark is None:
        return located
    symbols = (
        list(strategy.mark)
        if isinstance(strategy.mark, Mapping)
        else list(strategy.mark_options)
        if options_per_symbol(strategy.mark_options)
        else ["*"]
    )
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
    from ..torch_compat.stance import stance

    with contextlib.ExitStack() as stack:
        for dotted, value in strategy.config.items():
            if value == BATCH_SOURCES:
                value = sources
            stack.enter_context(patched(dotted, value))
        if strategy.stance:
            stack.enter_context(stance(strategy.stance))
        if strategy.guard_collectives:
            from ..torch_compat.collectives import guard_collectives

            stack.enter_context(guard_collectives())
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

    def __init__(
        self,
        plan: Mapping[str, tuple[str, Mapping[str, Any]]],
        located: Sequence[LocationMark] = (),
    ) -> None:
        # A location mark is a plan entry of its own under a key no symbol can have ("@0").
        plan = {**plan, **{f"@{i}": (m.kind, {}) for i, m in enumerate(located)}}
        self._located = [
            DimRef(f"@{i}", parse_path("marks", m.argument), (m.dim,))
            for i, m in enumerate(located)
        ]
        #: symbol -> (mark function, options)
        self._plan = {
            symbol: (
                getattr(importlib.import_module(MARKS[kind][0]), MARKS[kind][1]),
                dict(options),
            )
            for symbol, (kind, options) in plan.items()
        }
        #: id -> (weak reference, marking attributes before the run's first mark)
        self._saved: dict[int, tuple[Any, dict[str, Any]]] = {}
        #: (argument index or path, dim) pairs marked at least once
        self.marked: set[tuple[int | str, int]] = set()

    def __call__(
        self,
        args: tuple,
        kwargs: Mapping[Any, Any],
        refs: Sequence[Any] | None = None,
        param_names: Sequence[str | None] = (),
    ) -> None:
        """Mark ``refs`` (sizes.DimRef) in these inputs. ``marker(args, {index: dims})`` is the
        batch-only form: positional arguments whose dims follow B."""
        import torch

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
        for tensor in _tensors_under(t):
            if id(tensor) in self._saved and self._saved[id(tensor)][0]() is tensor:
                continue
            attrs = {k: copy.copy(v) for k, v in vars(tensor).items() if _is_marking(k)}
            self._saved[id(tensor)] = (weakref.ref(tensor), attrs)

    def restore(self) -> None:
        for ref, attrs in self._saved.values():
            tensor = ref()
            if tensor is None:  # gone with its marks
                continue
            for name in [k for k in vars(tensor) if _is_marking(k)]:
                delattr(tensor, name)
            for name, value in attrs.items():
                setattr(tensor, name, copy.copy(value))
        self._saved.clear()


def marker(
    strategy: Strategy,
    acting: Sequence[str] = ("B",),
    ranges: Mapping[str, tuple[int, int]] | None = None,
) -> Marker | None:
    """A ``Marker`` for the strategy's marks on the ``acting`` symbols, or None for none;
    ``ranges`` (symbol -> smallest, largest size) fill the ``{min}``/``{max}`` placeholders."""
    plan = {
        symbol: (kind, filled(options, symbol, ranges or {}))
        for symbol, (kind, options) in strategy.plan(acting).items()
    }
    return Marker(plan, strategy.marks) if plan or strategy.marks else None


#: marks whose min/max a compile enforces: outside them it raises (mark_dynamic a
#: ConstraintViolationError, mark_unbacked a failed guard on the frame it made; torch 2.13);
#: maybe_mark_dynamic's range only hints, and a size outside it recompiles
_ENFORCED = ("dynamic", "unbacked")


def declared_ranges(
    strategy: Strategy,
    acting: Sequence[str],
    ranges: Mapping[str, tuple[int, int]] | None = None,
) -> dict[str, tuple[int, int]] | None:
    """symbol -> the (min, max) the strategy's marks enforce; None where they declare none."""
    out: dict[str, tuple[int, int]] = {}
    for symbol, (kind, options) in strategy.plan(acting).items():
        if kind not in _ENFORCED:
            continue
        values = filled(options, symbol, ranges or {})
        if "min" in values or "max" in values:
            lo, hi = values.get("min"), values.get("max")
            out[symbol] = (
                int(lo) if isinstance(lo, int) else 0,
                int(hi) if isinstance(hi, int) else 2**63 - 1,
            )
    return out or None


def shapes_spec(
    dims: Sequence[DimRef],
    acting: Sequence[str],
    inputs: tuple[tuple, Mapping[str, Any]] | None,
    param_names: Sequence[str | None],
    ranges: Mapping[str, tuple[int, int]],
) -> dict[str, Any]:
    """``{keyword: ShapesSpec}`` for torch.compile: one ShapeVar per acting symbol (named after
    it, its range the scenario's), on the dims it moves of each top-level tensor argument.

    A spec names parameters, so a dim inside a container (``cache.keys[*]``) or of a driver's
    program cannot be written: ValueError says which."""
    import torch

    from ..torch_compat import knobs
    from ..torch_compat.compile_keywords import spec_keyword

    keyword, types = spec_keyword(), knobs.shapes_spec_types()
    assert keyword is not None and types is not None, "missing_features rules this out"
    shapes_cls, tensor_cls, var_cls = types
    if inputs is None:
        raise ValueError("a shapes spec needs the scenario's inputs (a driver makes its own)")
    args, kwargs = inputs
    variables = {
        s: var_cls(s, min=ranges[s][0], max=ranges[s][1]) if s in ranges else var_cls(s)
        for s in acting
    }
    per_param: dict[str, list[Any]] = {}
    for ref in dims:
        if ref.symbol not in variables:
            continue
        if ref.path.steps:
            raise ValueError(f"a shapes spec names parameters: {ref.path} is inside an argument")
        head = ref.path.head
        name = (
            head
            if isinstance(head, str)
            else (param_names[head] if head < len(param_names) else None)
        )
        value = (
            kwargs.get(head)
            if isinstance(head, str)
            else (args[head] if head < len(args) else None)
        )
        if name is None or not isinstance(value, torch.Tensor):
            continue
        shape = per_param.setdefault(name, [None] * value.dim())
        for d in ref.dims:
            shape[d] = variables[ref.symbol]
    if not per_param:
        raise ValueError("no tensor argument has a dim of the varying symbols to put in a spec")
    spec = shapes_cls({name: tensor_cls(shape) for name, shape in per_param.items()})
    return {keyword: spec}


def compile_kwargs(strategy: Strategy, scenario_compile: Mapping[str, Any]) -> tuple[dict, dict]:
    """(torch.compile kwargs, extra config patches) for this strategy.

    ``recompile_limit`` is a torch.compile kwarg only in recent torch; elsewhere it becomes the
    equivalent config so a scenario works on both.
    """
    from ..torch_compat.knobs import recompile_limit_as_config

    kwargs = {**scenario_compile, **strategy.compile}
    kwargs["dynamic"] = strategy.dynamic
    return kwargs, recompile_limit_as_config(kwargs)
