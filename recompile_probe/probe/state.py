"""The program's own Python state, as the target and its driver reach it: captured when the target
is loaded, compared after the eager reference, and put back before every run.

A target may change itself when called: transformers' classifiers set ``config.problem_type`` on
their first forward with labels, ``generate()`` keeps a cache on the model. Dynamo guards on that
state, so a compiled run that starts after the eager reference (or after another strategy) sees a
program that has already been called once and misses the program's own recompile. Putting the
state back makes each run start where the program starts.

What is captured: the attributes (``__dict__``) of every object reachable from the target and the
driver, through bound methods, closures, the module globals their code names, nn.Module children
and attribute values, with a shallow copy of each list, dict and set they hold. Tensors are left
alone (their values are not Python state, and copying them would cost the model's size); objects
without a ``__dict__`` (``__slots__``) and library functions are not walked.
"""

from __future__ import annotations

import os
import sys
import sysconfig
import types
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

#: how far and how much is walked: enough for a model's modules and configs, bounded on anything
_DEPTH = 12
_OBJECTS = 50_000
_SHOWN = 4  #: changes named in a note; the rest counted

#: nn.Module's registries of children, parameters and buffers: their entries read as attributes
_REGISTRIES = frozenset({"_modules", "_parameters", "_buffers"})
_PRIMITIVES = (int, float, complex, str, bytes, bool, type(None))
_CONTAINERS = (list, dict, set)
_LIBRARY_DIRS = tuple(
    os.path.realpath(p)
    for p in {sysconfig.get_paths()[k] for k in ("stdlib", "platstdlib", "purelib", "platlib")}
)


@dataclass(frozen=True)
class StateChange:
    """An attribute the program's calls changed: added, removed, rebound or its container's
    contents changed."""

    path: str  #: e.g. ``model.config.problem_type``
    before: str  #: short repr; "unset" where the attribute did not exist
    after: str

    def text(self) -> str:
        return f"{self.path} ({self.before} → {self.after})"


class ProgramState:
    """The state reachable from ``roots`` ((name, object) pairs) as it was when captured."""

    def __init__(self, roots: Iterable[tuple[str, Any]]) -> None:
        self._attrs: list[tuple[str, Any, dict[str, Any]]] = []  # (path, obj, vars copy)
        self._contents: list[tuple[str, Any, Any]] = []  # (path, container, shallow copy)
        self._walk(list(roots))

    def changes(self) -> list[StateChange]:
        """What differs from the captured state, data only: a function or method put on an
        object (a driver's ``model.forward = fn``) is put back but not reported."""
        found: list[StateChange] = []
        for path, obj, saved in self._attrs:
            now = _vars(obj)
            if now is None:
                continue
            for key in saved.keys() | now.keys():
                old, new = saved.get(key, _UNSET), now.get(key, _UNSET)
                if _same(old, new) or _callable(old) or _callable(new):
                    continue
                found.append(StateChange(f"{path}.{key}", _short(old), _short(new)))
        for path, container, saved in self._contents:
            if not _same_contents(container, saved):
                found.append(StateChange(path, _short(saved), _short(container)))
        return found

    def restore(self) -> None:
        """Every captured attribute and container content back as it was (the same objects)."""
        for _, container, saved in self._contents:
            if _same_contents(container, saved):
                continue
            if isinstance(container, dict):
                container.clear()
                container.update(saved)
            elif isinstance(container, list):
                container[:] = saved
            else:
                container.clear()
                container.update(saved)
        for _, obj, saved in self._attrs:
            now = _vars(obj)
            if now is None:
                continue
            # the dict itself, not setattr: nn.Module.__setattr__ would register, a property
            # would run code; the captured entries are what the object held
            for key in [k for k in now if k not in saved]:
                del now[key]
            for key, value in saved.items():
                if now.get(key, _UNSET) is not value:
                    now[key] = value

    def _walk(self, roots: list[tuple[str, Any]]) -> None:
        seen: set[int] = set()
        # (path, object, depth, how its items are named: "{path}[key]", or "{prefix}.key" for
        # an nn.Module's own registries, so that a child reads model.bert.encoder)
        queue: list[tuple[str, Any, int, str | None]] = [(n, o, 0, None) for n, o in roots]
        while queue and len(seen) < _OBJECTS:
            path, obj, depth, prefix = queue.pop(0)
            if id(obj) in seen or depth > _DEPTH or _leaf(obj):
                continue
            seen.add(id(obj))
            if isinstance(obj, _CONTAINERS):
                self._contents.append((path, obj, _copy(obj)))
                queue.extend(
                    (f"{prefix}.{k}" if prefix else f"{path}[{_key(k)}]", v, depth + 1, None)
                    for k, v in _items(obj)
                )
                continue
            if isinstance(obj, (types.FunctionType, types.MethodType)):
                queue.extend((p, v, depth + 1, None) for p, v in _function_refs(path, obj))
                continue
            attrs = _vars(obj)
            if attrs is None:
                continue
            self._attrs.append((path, obj, dict(attrs)))
            for key, value in attrs.items():
                own = path if key in _REGISTRIES else None
                queue.append((f"{path}.{key}", value, depth + 1, own))


def _function_refs(path: str, fn: Any) -> list[tuple[str, Any]]:
    """What a user function reaches: its bound object, what it wraps, its closure and the module
    globals its code names. Library functions are not followed: their globals are a library's."""
    refs: list[tuple[str, Any]] = []
    if isinstance(fn, types.MethodType):
        return [(f"{path}.__self__", fn.__self__), (path, fn.__func__)]
    wrapped = getattr(fn, "__wrapped__", None)
    if wrapped is not None:
        refs.append((path, wrapped))
    if _library(fn.__code__.co_filename):
        return refs
    for cell in fn.__closure__ or ():
        try:
            refs.append((path, cell.cell_contents))
        except ValueError:  # an empty cell
            continue
    names = _code_names(fn.__code__)
    refs.extend((name, fn.__globals__[name]) for name in sorted(names) if name in fn.__globals__)
    return refs


def _code_names(code: types.CodeType) -> set[str]:
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _code_names(const)
    return names


def _library(filename: str) -> bool:
    real = os.path.realpath(filename)
    return filename.startswith("<frozen") or any(real.startswith(d + os.sep) for d in _LIBRARY_DIRS)


def _leaf(obj: Any) -> bool:
    """Not walked: values, modules, classes, builtins and tensors (by type name, so that this
    module needs no torch)."""
    if isinstance(obj, (*_PRIMITIVES, tuple, frozenset, types.ModuleType, type)):
        return True
    if isinstance(obj, (types.BuiltinFunctionType, types.CodeType, types.FrameType)):
        return True
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(obj, torch.Tensor)


def _vars(obj: Any) -> dict[str, Any] | None:
    try:
        attrs = object.__getattribute__(obj, "__dict__")
    except AttributeError:
        return None
    return attrs if type(attrs) is dict else None


def _items(container: Any) -> list[tuple[Any, Any]]:
    if isinstance(container, dict):
        return list(container.items())
    if isinstance(container, list):
        return list(enumerate(container))
    return []  # a set's members are hashable values, not state to walk


def _copy(container: Any) -> Any:
    if isinstance(container, dict):
        return dict(container)
    return list(container) if isinstance(container, list) else set(container)


def _same_contents(container: Any, saved: Any) -> bool:
    if isinstance(container, dict):
        return container.keys() == saved.keys() and all(
            _same(container[k], saved[k]) for k in container
        )
    if isinstance(container, list):
        return len(container) == len(saved) and all(map(_same, container, saved))
    return bool(container == saved)


class _Unset:
    def __repr__(self) -> str:
        return "unset"


_UNSET: Any = _Unset()


def _same(old: Any, new: Any) -> bool:
    if old is new:
        return True
    if isinstance(old, _PRIMITIVES) and type(old) is type(new):
        return bool(old == new)
    return False


def _callable(value: Any) -> bool:
    return isinstance(value, (types.FunctionType, types.MethodType, types.BuiltinFunctionType))


def _short(value: Any, width: int = 40) -> str:
    if isinstance(value, _CONTAINERS):
        text = f"{type(value).__name__} of {len(value)}"
    else:
        try:
            text = repr(value)
        except Exception:  # noqa: BLE001 - a repr that raises still names its type
            text = f"<{type(value).__name__}>"
    return text if len(text) <= width else text[: width - 1] + "…"


def _key(key: Any) -> str:
    return repr(key) if isinstance(key, str) else str(key)


def state_note(changes: list[StateChange]) -> str | None:
    """The run's note on what the program's own calls changed, or None where nothing did."""
    if not changes:
        return None
    named = ", ".join(c.text() for c in changes[:_SHOWN])
    more = f" and {len(changes) - _SHOWN} more" if len(changes) > _SHOWN else ""
    return (
        f"the target changes its own state when called: {named}{more}; every run starts from "
        "the state the program had before its first call (put back after the eager reference "
        "and before each strategy)"
    )


def roots_of(
    target_name: str, target: Any, driver: Callable[..., Any] | None
) -> list[tuple[str, Any]]:
    """The walk's roots, the driver first: the globals its code names (``model``) name what a
    target's bound method reaches. The target is named as the scenario's ``target:`` names it
    (its part after the colon)."""
    roots = [] if driver is None else [("driver", driver)]
    return [*roots, (target_name.rsplit(":", 1)[-1], target)]
