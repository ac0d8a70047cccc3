"""Resolve a scenario's target to a plain callable plus an argument factory (imports torch).

A user target is ``package.module:fn`` or ``path/to/file.py:fn``. A file is imported once per
process as a module (registered in sys.modules), so module-level state such as an nn.Linear lives
across calls and strategies. A target that is already torch.compile'd is unwrapped for the
strategies and kept as is for the ``as_is`` strategy.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import inspect
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

from ..errors import TargetError, did_you_mean
from ..scenario.builtin_targets import BUILTIN_TARGETS
from ..scenario.inputs import spec_refs
from ..scenario.model import Scenario
from ..sizes.paths import DimRef, FrameArgs, dynamo_source, frame_source
from ..sizes.paths import resolve as resolve_path
from ..sizes.points import BATCH, Point
from . import inputs
from .inputs import Inputs

_FILE_MODULES: dict[Path, ModuleType] = {}


@dataclass
class LoadedTarget:
    name: str
    fn: Callable  #: the plain callable each strategy compiles
    compiled: Callable | None  #: the user's own torch.compile'd object, for `as_is`
    #: the inputs at one point; None for a driver scenario (the driver makes them)
    make_inputs: Callable[[Point], Inputs] | None
    dims: tuple[DimRef, ...]
    #: plain names of the positional parameters, and of the **kwargs parameter if any
    param_names: list[str | None] = field(default_factory=list)
    var_keyword: str | None = None
    #: driver(fn, **sizes) -> result, when the scenario drives a program
    driver: Callable[..., Any] | None = None
    #: checks each call a driver makes against ``dims`` (see DriverDims); None without a driver
    driver_dims: DriverDims | None = None
    driver_name: str | None = None  #: the scenario's ``driver:`` as written
    #: how the compiled frame names its arguments (None: not a Python function's frame)
    frame: FrameArgs | None = None

    def drive(self, fn: Callable, point: Point, options: Mapping[str, Any] | None = None) -> Any:
        """One point through the driver: ``driver(fn, **sizes, **options)``."""
        assert self.driver is not None, "only a driven target's points are driven"
        return self.driver(fn, **point.to_dict(), **(options or {}))

    def source_of(self, path: Any) -> str | None:
        """The source Dynamo names this argument path by, e.g. ``L['kwargs']['input_ids']``."""
        if self.frame is not None:
            return frame_source(path, self.frame)
        return dynamo_source(path, self.param_names, self.var_keyword)

    def make_args(self, batch_size: int) -> tuple:
        """The positional arguments at batch size ``batch_size`` (a batch-only scenario)."""
        assert self.make_inputs is not None
        return self.make_inputs(Point.batch(batch_size))[0]

    @property
    def batch_dims(self) -> dict[int, tuple[int, ...]]:
        return {
            r.path.head: r.dims
            for r in self.dims
            if r.symbol == BATCH and isinstance(r.path.head, int) and not r.path.steps
        }

    def sources(self, symbols: Any = None, inputs: Inputs | None = None) -> list[tuple[str, int]]:
        """(Dynamo source, dim) of the dims that follow ``symbols`` (all: None), e.g.
        [("L['x']", 0), ("L['values']", 0)]. Paths with ``[*]`` need ``inputs`` to expand; a
        driver's expand to what they named in any call of the eager reference."""
        out: list[tuple[str, int]] = []
        for i, ref in enumerate(self.dims):
            if symbols is not None and ref.symbol not in symbols:
                continue
            seen = self.driver_dims.paths.get(i) if self.driver_dims is not None else None
            paths = (
                [p for p, _ in resolve_path(ref.path, inputs[0], inputs[1], self.param_names)]
                if inputs is not None
                else seen
                if seen
                else [ref.path]
            )
            for path in paths:
                source = self.source_of(path)
                if source is not None:
                    out.extend((source, d) for d in ref.dims)
        return out

    def dim_sources(self) -> list[tuple[str, int, str]]:
        """(Dynamo source, dim, symbol) of every dim a symbol moves (``[*]`` paths left out)."""
        out: list[tuple[str, int, str]] = []
        for ref in self.dims:
            source = self.source_of(ref.path)
            if source is not None:
                out.extend((source, d, ref.symbol) for d in ref.dims)
        return out

    def symbol_of(
        self, source: str | None, dim: int | None, inputs: Inputs | None = None
    ) -> str | None:
        """The symbol whose dim a guard names (L['x'], 0) -> "B"; None if none or ambiguous."""
        if source is None or dim is None:
            return None
        found = set()
        for ref in self.dims:
            paths = (
                [ref.path]
                if inputs is None
                else [p for p, _ in resolve_path(ref.path, inputs[0], inputs[1], self.param_names)]
            )
            if dim in ref.dims and any(self.source_of(p) == source for p in paths):
                found.add(ref.symbol)
        return found.pop() if len(found) == 1 else None


def load(scenario: Scenario) -> LoadedTarget:
    target = _load(scenario)
    target.frame = frame_args(target.fn)
    return target


def _load(scenario: Scenario) -> LoadedTarget:
    builtin = BUILTIN_TARGETS.get(scenario.target)
    if builtin is not None:
        from . import logprobs

        fn, specs = getattr(logprobs, builtin.maker)(scenario.params)
        indexed = tuple(enumerate(specs))
        names, var_kw = parameters(fn)
        return LoadedTarget(
            scenario.target,
            fn,
            None,
            inputs.spec_factory(indexed, scenario.seed),
            spec_refs(indexed),
            names,
            var_kw,
        )
    obj = resolve(scenario, scenario.target, "target")
    fn, compiled = unwrap(obj)
    if not callable(fn):
        raise scenario.error(
            "target", f"{scenario.target!r} is not callable (it is {type(fn).__name__})"
        )
    names, var_kw = parameters(fn)
    if scenario.driver:
        driver = resolve(scenario, scenario.driver, "driver")
        if not callable(driver):
            raise scenario.error("driver", f"{scenario.driver!r} is not callable")
        return LoadedTarget(
            scenario.target,
            fn,
            compiled,
            None,
            scenario.dims,
            names,
            var_kw,
            _seeded(driver, scenario.seed, scenario.symbols),
            DriverDims(scenario.dims, names, _error_at(scenario)),
            scenario.driver,
        )
    if scenario.factory:
        factory = resolve(scenario, scenario.factory, "factory")
        if not callable(factory):
            raise scenario.error("factory", f"{scenario.factory!r} is not callable")
        make = inputs.user_factory(
            factory, scenario.seed, scenario.symbols, scenario.dims, names, _error_at(scenario)
        )
    else:
        assert scenario.inputs is not None
        keys = scenario.input_keys or tuple(range(len(scenario.inputs)))
        make = inputs.spec_factory(tuple(zip(keys, scenario.inputs)), scenario.seed)
    return LoadedTarget(scenario.target, fn, compiled, make, scenario.dims, names, var_kw)


def _seeded(driver: Callable[..., Any], seed: int, symbols: tuple[str, ...]) -> Callable[..., Any]:
    """The driver with torch's global RNG seeded per point, as a factory is: a program that draws
    its inputs from it sees the same ones in the eager reference and under every strategy (its
    driver_options, not sizes, leave the seed alone)."""

    def run(fn: Callable, **kwargs: Any) -> Any:
        import torch

        sizes = {k: kwargs[k] for k in symbols if k in kwargs}
        torch.manual_seed(inputs.seed_for(seed, Point.of(sizes)))
        return driver(fn, **kwargs)

    run.__wrapped__ = driver  # type: ignore[attr-defined]  # what the program's state walk follows
    return run


def _error_at(scenario: Scenario) -> Callable[[str, str, str | None], Exception]:
    """Errors about the inputs, at the line of the scenario key they come from."""
    return lambda key, message, remedy: scenario.error(key, message, remedy)


class DriverDims:
    """``dims`` against the calls a driver makes. A path may name nothing in some calls (a cache
    that is None at prefill), so it only has to name something in one call of the sequence;
    a dim past a tensor's rank is an error at once."""

    def __init__(
        self,
        refs: tuple[DimRef, ...],
        names: list[str | None],
        error: Callable[[str, str, str | None], Exception],
    ) -> None:
        self.refs, self.names, self.error = refs, names, error
        self.found: set[int] = set()
        self.last: Inputs | None = None
        #: ref index -> every concrete path it named in some call (``[*]`` expanded), in order
        self.paths: dict[int, list[Any]] = {}

    def __call__(self, args: tuple, kwargs: dict) -> None:
        self.last = (args, kwargs)
        for i, ref in enumerate(self.refs):
            named = [path for path, _ in resolve_path(ref.path, args, kwargs, self.names)]
            if named:
                self.found.add(i)
                known = self.paths.setdefault(i, [])
                known.extend(path for path in named if path not in known)
                inputs.check_dims(self.last, [ref], None, self.names, self.error, driver=True)

    def finish(self) -> None:
        """After the sequence: a path that named nothing in any call is an error."""
        if self.last is None:
            return
        missing = [ref for i, ref in enumerate(self.refs) if i not in self.found]
        inputs.check_dims(self.last, missing, None, self.names, self.error, driver=True)


def resolve(scenario: Scenario, spec: str, key: str) -> Any:
    where, _, attr = spec.rpartition(":")
    module = (
        _import_file(scenario, where, key)
        if where.endswith(".py")
        else _import_module(scenario, where, key)
    )
    try:
        return getattr(module, attr)
    except AttributeError:
        names = [n for n in dir(module) if not n.startswith("_")]
        raise scenario.error(
            key, f"{where} has no attribute {attr!r}", did_you_mean(attr, names)
        ) from None


def _import_failed(scenario: Scenario, key: str, what: str, exc: BaseException) -> TargetError:
    first = (str(exc).strip().splitlines() or [""])[0]
    err = scenario.error(
        key,
        f"importing {what} failed: {type(exc).__name__}: {first}",
        "Run the import by hand (python -c 'import ...') to see the traceback, or pass --debug.",
    )
    return TargetError(err.message, err.remedy)


def _import_file(scenario: Scenario, where: str, key: str) -> ModuleType:
    path = Path(where)
    path = (path if path.is_absolute() else scenario.base_dir / path).resolve()
    if path in _FILE_MODULES:
        return _FILE_MODULES[path]
    if not path.is_file():
        raise scenario.error(
            key,
            f"file {where!r} does not exist (looked for {path})",
            "Paths in a scenario are relative to the scenario file.",
        )
    digest = hashlib.sha1(str(path).encode()).hexdigest()[:8]
    name = f"_recompile_probe_target_{path.stem}_{digest}"
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    # Let the file import its siblings, as `python file.py` would.
    if str(path.parent) not in sys.path:
        sys.path.append(str(path.parent))
    try:
        spec.loader.exec_module(module)
    except Exception as exc:
        del sys.modules[name]
        raise _import_failed(scenario, key, str(path), exc) from exc
    _FILE_MODULES[path] = module
    return module


def _import_module(scenario: Scenario, name: str, key: str) -> ModuleType:
    for extra in (str(scenario.base_dir), str(Path.cwd())):
        if extra not in sys.path:
            sys.path.append(extra)
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if exc.name and name.startswith(exc.name):
            raise scenario.error(
                key,
                f"cannot import module {name!r}: no module named {exc.name!r}",
                "Install it, or run from the directory that "
                "holds it (the scenario's folder and the current directory are "
                "on the import path).",
            ) from None
        raise _import_failed(scenario, key, name, exc) from exc
    except Exception as exc:
        raise _import_failed(scenario, key, name, exc) from exc


def unwrap(obj: Any) -> tuple[Any, Any | None]:
    """(plain callable, compiled object or None)."""
    import torch

    if isinstance(obj, torch._dynamo.eval_frame.OptimizedModule):
        return obj._orig_mod, obj
    orig = getattr(obj, "_torchdynamo_orig_callable", None)
    if orig is not None:
        return orig, obj
    return obj, None


def frame_args(fn: Any) -> FrameArgs | None:
    """The arguments of the frame Dynamo compiles for ``fn``: a function's own code, a method's
    function with ``self`` bound, a module's ``forward`` (what Dynamo traces for a module)."""
    bound = 0
    if not inspect.isfunction(fn) and not inspect.ismethod(fn) and hasattr(fn, "forward"):
        fn = getattr(type(fn), "forward", None)
        bound = 1
    elif inspect.ismethod(fn):
        fn, bound = fn.__func__, 1
    code = getattr(fn, "__code__", None)
    if code is None or not inspect.isfunction(fn):
        return None
    names = code.co_varnames
    positional = names[: code.co_argcount]
    keyword_only = names[code.co_argcount : code.co_argcount + code.co_kwonlyargcount]
    rest = code.co_argcount + code.co_kwonlyargcount
    var_positional = names[rest] if code.co_flags & inspect.CO_VARARGS else None
    rest += var_positional is not None
    var_keyword = names[rest] if code.co_flags & inspect.CO_VARKEYWORDS else None
    return FrameArgs(tuple(positional), tuple(keyword_only), var_positional, var_keyword, bound)


def parameters(fn: Callable) -> tuple[list[str | None], str | None]:
    """Names Dynamo gives the arguments in guards: the positional parameters (L['x']) and the
    **kwargs parameter (L['kwargs']['input_ids']). A module's forward is what Dynamo traces."""
    try:
        target = fn.forward if hasattr(fn, "forward") and not inspect.isfunction(fn) else fn
        params = list(inspect.signature(target).parameters.values())
    except (TypeError, ValueError):
        return [], None
    positional = [p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    keywords = [p.name for p in params if p.kind == p.KEYWORD_ONLY]
    var_kw = next((p.name for p in params if p.kind == p.VAR_KEYWORD), None)
    return [*positional, *keywords], var_kw
