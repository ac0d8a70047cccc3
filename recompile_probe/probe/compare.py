"""A compiled output against eager's, structurally: tensors anywhere inside model outputs,
dataclasses, mappings, sequences and the objects that hold them (a transformers cache's layers),
with the path of the first difference.

``torch.testing.assert_close`` alone raises TypeError on a ``CausalLMOutputWithPast`` holding a
``DynamicCache``, which left every real model's outputs "not compared". Here each tensor is
compared with assert_close's semantics (integers and bools exact), plain values with ``==``,
types and functions by qualified name, and anything else is "not compared", named by its type and
path: never a match, never a mismatch.
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import torch

_PLAIN = (bool, int, float, complex, str, bytes, enum.Enum, torch.dtype, torch.device, torch.Size)
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
        if kind != got_kind or kind in ("type", "value") and not _equal(got, value):
            return Comparison(False, f"{where}: {_show(got_kind, got)}, eager {_show(kind, value)}")
        if kind == "unknown":
            unknown = unknown or f"{where} is a {value}"
        elif kind == "tensor":
            try:
                torch.testing.assert_close(got, value, rtol=rtol, atol=atol, equal_nan=True)
            except AssertionError as exc:
                return Comparison(False, f"{where}: {_first(exc)}")
            except Exception as exc:  # noqa: BLE001 - e.g. a tensor subclass assert_close rejects
                unknown = unknown or f"{where} ({type(exc).__name__}: {_first(exc)})"
    extra = next((p for p in have.leaves if p not in want.leaves), None)
    if extra is not None:
        return Comparison(False, f"{_where(extra)}: not in eager's output")
    if unknown is not None or want.unknown:
        return Comparison(None, f"not compared: {unknown or want.unknown}")
    return MATCH


@dataclass(frozen=True)
class Snapshot:
    """A value flattened to its leaves, path -> (kind, value): kind "tensor" (a detached copy
    when taken with ``clone``), "value" (plain, compared with ==), "type" (a container's or an
    object's type, a class or function: compared by qualified name), "unknown" (its type name).
    Eager's outputs are kept as snapshots because programs mutate what they return: a cache
    grows after the call that returned it."""

    leaves: dict[str, tuple[str, Any]]
    unknown: str | None = None  #: set when the walk gave up (too deep)


def snapshot(value: Any, clone: bool = True) -> Snapshot:
    leaves: dict[str, tuple[str, Any]] = {}
    seen: set[int] = set()
    deep: list[str] = []

    def walk(v: Any, path: str, depth: int) -> None:
        if isinstance(v, torch.Tensor):
            leaves[path] = ("tensor", v.detach().clone() if clone else v)
            return
        if v is None or isinstance(v, _PLAIN):
            leaves[path] = ("value", v)
            return
        if isinstance(v, type) or callable(v) and hasattr(v, "__code__") or hasattr(v, "__func__"):
            leaves[path] = ("type", _name(v))
            return
        if id(v) in seen:
            return
        if depth > _MAX_DEPTH:
            deep.append(f"{path.lstrip('.')} is nested deeper than {_MAX_DEPTH} levels")
            return
        seen.add(id(v))
        leaves[path + "#type"] = ("type", _name(type(v)))
        if isinstance(v, Mapping):
            attrs = dataclasses.is_dataclass(v)
            for k in v:
                walk(
                    v[k],
                    path + (f".{k}" if attrs and isinstance(k, str) else f"[{k!r}]"),
                    depth + 1,
                )
        elif isinstance(v, (list, tuple)):
            for i, x in enumerate(v):
                walk(x, f"{path}[{i}]", depth + 1)
        elif dataclasses.is_dataclass(v):
            for f in dataclasses.fields(v):
                walk(getattr(v, f.name, None), f"{path}.{f.name}", depth + 1)
        elif hasattr(v, "__dict__"):
            for k, x in vars(v).items():
                walk(x, f"{path}.{k}", depth + 1)
        elif _has_own_eq(v):
            leaves[path] = ("value", v)
        else:
            leaves[path] = ("unknown", type(v).__name__)

    walk(value, "", 0)
    return Snapshot(leaves, deep[0] if deep else None)


def _where(path: str) -> str:
    return path.removesuffix("#type").lstrip(".") or "the output"


def _equal(a: Any, b: Any) -> bool:
    try:
        return a is b or bool(a == b) or a != a and b != b  # nan is nan here
    except Exception:  # noqa: BLE001 - an __eq__ that cannot answer: not equal
        return False


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
