"""A compiled output against eager's, structurally: tensors anywhere inside model outputs,
dataclasses, mappings, sequences and the objects that hold them (a transformers cache's layers),
with the path of the first difference.

``torch.testing.assert_close`` alone raises TypeError on a ``CausalLMOutputWithPast`` holding a
``DynamicCache``, which left every real model's outputs "not compared". Here each tensor is
compared with assert_close's semantics (integers and bools exact), floats with the same
tolerances, plain values with ``==``, types and functions by qualified name, Python objects by
their attributes, and anything else is "not compared", named by its type and path: never a
match, never a mismatch.
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import torch

_PLAIN = (bool, int, str, bytes, enum.Enum, torch.dtype, torch.device, torch.Size)
_MAX_DEPTH = 32


@dataclass(frozen=True)
class Comparison:
    """``match``: True equal, False a difference, None not compared (something could not be)."""

    match: bool | None
    #: where and why: "logits: Tensor-likes are not close! ...", or "not compared:
    #: past_key_values.layers[0].fn is a Foo"; None when everything matched
    detail: str | None = None


MATCH = Comparison(True)


def compare(actual: Any, expected: Any, rtol: float | None, atol: float | None) -> Comparison:
    """``expected`` may be a ``Snapshot`` (eager's output as it was when its call returned)."""
    want = expected if isinstance(expected, Snapshot) else snapshot(expected, clone=False)
    have = snapshot(actual, clone=False)
    unknown: str | None = None
    for path, (kind, value) in want.leaves.items():
        where = _where(path)
        if path not in have.leaves:
            return Comparison(False, f"{where}: only in eager's output")
        got_kind, got = have.leaves[path]
        if "unknown" in (kind, got_kind):
            unknown = unknown or f"{where} is a {value if kind == 'unknown' else got}"
            continue
        if kind != got_kind:
            return Comparison(False, f"{where}: {_show(got_kind, got)}, eager {_show(kind, value)}")
        if kind in ("type", "value"):
            same = _equal(got, value)
            if same is None:
                unknown = unknown or f"{where}: {type(value).__name__}.__eq__ cannot answer"
            elif not same:
                return Comparison(False, f"{where}: {_show(kind, got)}, eager {_show(kind, value)}")
        elif kind in ("tensor", "number"):
            try:
                torch.testing.assert_close(got, value, rtol=rtol, atol=atol, equal_nan=True)
            except AssertionError as exc:
                return Comparison(False, f"{where}: {_first(exc)}")
            except Exception as exc:  # noqa: BLE001 - e.g. a tensor subclass assert_close rejects
                unknown = unknown or f"{where} ({type(exc).__name__}: {_first(exc)})"
    extra = next((p for p in have.leaves if p not in want.leaves), None)
    if extra is not None:
        return Comparison(False, f"{_where(extra)}: not in eager's output")
    if unknown is not None or want.unknown or have.unknown:
        return Comparison(None, f"not compared: {unknown or want.unknown or have.unknown}")
    return MATCH


@dataclass(frozen=True)
class Snapshot:
    """A value flattened to its leaves, path -> (kind, value): kind "tensor" (a detached copy
    when taken with ``clone``; numpy arrays become tensors), "number" (a float or complex,
    compared with the tolerances), "value" (plain, compared with ==), "type" (a container's or
    an object's type, a class or function: compared by qualified name), "unknown" (its type
    name). Eager's outputs are kept as snapshots because programs mutate what they return: a
    cache grows after the call that returned it."""

    leaves: dict[str, tuple[str, Any]]
    unknown: str | None = None  #: set when the walk gave up (too deep)


#: Py_TPFLAGS_HEAPTYPE: a class defined in Python (or a C extension's heap type), whose state is
#: walked through its __dict__ and __slots__ when it has any there; an object whose state they do
#: not show (functools.partial, a lock: their fields live in C) is compared by its own ==, or
#: not compared
_HEAPTYPE = 1 << 9


def snapshot(value: Any, clone: bool = True) -> Snapshot:
    leaves: dict[str, tuple[str, Any]] = {}
    clones: dict[int, Any] = {}  # a tensor reached by two paths is copied once
    path_ids: set[int] = set()  # the objects above this one: a cycle, not an alias
    deep: list[str] = []

    def tensor(t: torch.Tensor) -> Any:
        if not clone:
            return t
        if id(t) not in clones:
            clones[id(t)] = t.detach().clone()
        return clones[id(t)]

    def walk(v: Any, path: str, depth: int) -> None:
        if isinstance(v, torch.Tensor):
            leaves[path] = ("tensor", tensor(v))
            return
        if isinstance(v, (float, complex)) and not isinstance(v, bool):
            leaves[path] = ("number", v)
            return
        if v is None or isinstance(v, _PLAIN):
            leaves[path] = ("value", v)
            return
        if isinstance(v, type) or callable(v) and hasattr(v, "__code__") or hasattr(v, "__func__"):
            leaves[path] = ("type", _name(v))
            return
        if _is_numpy(v):
            try:
                leaves[path] = ("tensor", torch.as_tensor(v).clone())
            except Exception:  # noqa: BLE001 - an object array: numpy's own ==
                leaves[path] = ("unknown", type(v).__name__)
            return
        if id(v) in path_ids:
            return
        if depth > _MAX_DEPTH:
            deep.append(f"{path.lstrip('.')} is nested deeper than {_MAX_DEPTH} levels")
            return
        path_ids.add(id(v))
        try:
            children(v, path, depth)
        except Exception as exc:  # noqa: BLE001 - an object that cannot be read: not compared
            leaves[path + "#error"] = ("unknown", f"{type(v).__name__} ({type(exc).__name__})")
        finally:
            path_ids.discard(id(v))

    def children(v: Any, path: str, depth: int) -> None:
        leaves[path + "#type"] = ("type", _name(type(v)))
        if isinstance(v, Mapping):
            attrs = dataclasses.is_dataclass(v)
            for k in v:
                step = f".{k}" if attrs and isinstance(k, str) else f"[{k!r}]"
                walk(v[k], path + step, depth + 1)
        elif isinstance(v, (list, tuple)):
            for i, x in enumerate(v):
                walk(x, f"{path}[{i}]", depth + 1)
        elif dataclasses.is_dataclass(v):
            for f in dataclasses.fields(v):
                walk(getattr(v, f.name, None), f"{path}.{f.name}", depth + 1)
        elif type(v).__flags__ & _HEAPTYPE and (state := _state(v)):
            for k, x in state:
                walk(x, f"{path}.{k}", depth + 1)
        elif _has_own_eq(v):
            leaves[path] = ("value", v)
        else:
            leaves[path] = ("unknown", type(v).__name__)

    walk(value, "", 0)
    return Snapshot(leaves, deep[0] if deep else None)


def _state(v: Any) -> list[tuple[str, Any]]:
    """A Python object's attributes: its __dict__, then the __slots__ that are set."""
    out = list(vars(v).items()) if hasattr(v, "__dict__") else []
    for cls in type(v).__mro__:
        slots = cls.__dict__.get("__slots__", ())
        for name in (slots,) if isinstance(slots, str) else slots:
            if name not in ("__dict__", "__weakref__") and hasattr(v, name):
                out.append((name, getattr(v, name)))
    return out


def _is_numpy(v: Any) -> bool:
    return type(v).__module__ == "numpy" and hasattr(v, "__array__") and hasattr(v, "dtype")


def _where(path: str) -> str:
    return path.removesuffix("#type").removesuffix("#error").lstrip(".") or "the output"


def _equal(a: Any, b: Any) -> bool | None:
    """Equal, different, or None: an __eq__ that cannot answer (raises, or no truth value)."""
    try:
        return a is b or bool(a == b)
    except Exception:  # noqa: BLE001
        return None


def _name(obj: Any) -> str:
    return f"{getattr(obj, '__module__', '')}.{getattr(obj, '__qualname__', repr(obj))}"


def _show(kind: str, value: Any) -> str:
    if kind == "tensor":
        return f"a tensor {tuple(value.shape)}"
    if kind == "type":
        return value.rsplit(".", 1)[-1]
    if kind == "unknown":
        return f"a {value}"
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _has_own_eq(value: Any) -> bool:
    return getattr(type(value), "__eq__", None) is not getattr(object, "__eq__", None)


def _first(exc: BaseException) -> str:
    lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip()]
    return "; ".join(lines[:3]) if lines else type(exc).__name__
