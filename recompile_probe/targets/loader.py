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
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any, Callable, Mapping

from ..errors import TargetError
from ..scenario import Scenario, suggest
from . import registry

_FILE_MODULES: dict[Path, ModuleType] = {}


@dataclass
class LoadedTarget:
    name: str
    fn: Callable  #: the plain callable each strategy compiles
    compiled: Callable | None  #: the user's own torch.compile'd object, for `as_is`
    make_args: Callable[[int], tuple]
    batch_dims: Mapping[int, tuple[int, ...]]
    #: Dynamo source name of each positional argument (e.g. "L['x']"), None where unknown
    arg_names: list[str | None] = field(default_factory=list)

    def batch_sources(self) -> list[tuple[str, int]]:
        """(Dynamo source, dim) of every batch dim, e.g. [("L['x']", 0), ("L['values']", 0)]."""
        return [(name, d) for i, dims in sorted(self.batch_dims.items())
                if i < len(self.arg_names) and (name := self.arg_names[i]) for d in dims]


def load(scenario: Scenario) -> LoadedTarget:
    from .. import inputs

    builtin = registry.BUILTIN_TARGETS.get(scenario.target)
    if builtin is not None:
        from . import logprobs

        fn, specs = getattr(logprobs, builtin.maker)(scenario.params)
        dims = {i: s.batch_dims for i, s in enumerate(specs) if s.batch_dims}
        return LoadedTarget(scenario.target, fn, None, inputs.spec_factory(specs, scenario.seed),
                            dims, source_names(fn, len(specs)))
    obj = resolve(scenario, scenario.target, "target")
    fn, compiled = unwrap(obj)
    if not callable(fn):
        raise scenario.error("target", f"{scenario.target!r} is not callable "
                             f"(it is {type(fn).__name__})")
    if scenario.factory:
        factory = resolve(scenario, scenario.factory, "factory")
        if not callable(factory):
            raise scenario.error("factory", f"{scenario.factory!r} is not callable")
        make_args = inputs.user_factory(factory, scenario.seed, scenario.batch_dims)
        nargs = max(scenario.batch_dims, default=-1) + 1  # batch_dims may be {}
    else:
        assert scenario.inputs is not None
        make_args = inputs.spec_factory(scenario.inputs, scenario.seed)
        nargs = len(scenario.inputs)
    return LoadedTarget(scenario.target, fn, compiled, make_args, scenario.batch_dims,
                        source_names(fn, nargs))


def resolve(scenario: Scenario, spec: str, key: str) -> Any:
    where, _, attr = spec.rpartition(":")
    module = _import_file(scenario, where, key) if where.endswith(".py") else \
        _import_module(scenario, where, key)
    try:
        return getattr(module, attr)
    except AttributeError:
        names = [n for n in dir(module) if not n.startswith("_")]
        raise scenario.error(key, f"{where} has no attribute {attr!r}",
                             suggest(attr, names)) from None


def _import_failed(scenario: Scenario, key: str, what: str, exc: BaseException) -> TargetError:
    first = (str(exc).strip().splitlines() or [""])[0]
    err = scenario.error(key, f"importing {what} failed: {type(exc).__name__}: {first}",
                         "Run the import by hand (python -c 'import ...') to see the traceback, "
                         "or pass --debug.")
    return TargetError(err.message, err.remedy)


def _import_file(scenario: Scenario, where: str, key: str) -> ModuleType:
    path = Path(where)
    path = (path if path.is_absolute() else scenario.base_dir / path).resolve()
    if path in _FILE_MODULES:
        return _FILE_MODULES[path]
    if not path.is_file():
        raise scenario.error(key, f"file {where!r} does not exist (looked for {path})",
                             "Paths in a scenario are relative to the scenario file.")
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
            raise scenario.error(key, f"cannot import module {name!r}: no module named "
                                 f"{exc.name!r}", "Install it, or run from the directory that "
                                 "holds it (the scenario's folder and the current directory are "
                                 "on the import path).") from None
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


def source_names(fn: Callable, nargs: int) -> list[str | None]:
    """How Dynamo names each positional argument in guards: L['x'], or L['args'][i] for *args."""
    try:
        target = fn.forward if hasattr(fn, "forward") and not inspect.isfunction(fn) else fn
        params = list(inspect.signature(target).parameters.values())
    except (TypeError, ValueError):
        return [None] * nargs
    names: list[str | None] = []
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    varargs = next((p for p in params if p.kind == p.VAR_POSITIONAL), None)
    for i in range(nargs):
        if i < len(positional):
            names.append(f"L['{positional[i].name}']")
        elif varargs is not None:
            names.append(f"L['{varargs.name}'][{i - len(positional)}]")
        else:
            names.append(None)
    return names
