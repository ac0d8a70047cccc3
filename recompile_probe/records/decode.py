"""Records back from their JSON form, driven by the dataclasses' own type hints. No torch.

One reader for every nested record (a watch report's functions, processes, events and rank
figures), so that a field added to a record is read back without a second edit here. Unknown keys
are ignored (newer writers add some); a missing key with a default takes it; lists come back as
the tuples the records hold, so a record equals its round trip.
"""

from __future__ import annotations

import dataclasses
import functools
import types
import typing
from typing import Any

from ..errors import ReportError


@functools.cache
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def build(cls: type, data: Any, where: str) -> Any:
    """``cls`` (a dataclass) from ``data`` (its ``encode.data`` form, through JSON)."""
    if not isinstance(data, dict):
        raise ReportError(f"{where}: expected an object, got {type(data).__name__}")
    hints = _hints(cls)
    kwargs = {}
    for f in dataclasses.fields(cls):
        if f.name in data:
            kwargs[f.name] = _value(hints[f.name], data[f.name], f"{where}.{f.name}")
        elif f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
            raise ReportError(f"{where}: missing field {f.name!r}")
    return cls(**kwargs)


def _value(hint: Any, value: Any, where: str) -> Any:
    if value is None:
        return None
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        options = [a for a in typing.get_args(hint) if a is not type(None)]
        # the records' unions are "X | None": the one other member decides
        return _value(options[0], value, where) if len(options) == 1 else value
    if dataclasses.is_dataclass(hint) and isinstance(hint, type):
        return build(hint, value, where)
    if origin is tuple and isinstance(value, (list, tuple)):  # JSON, or encode.data() itself
        args = typing.get_args(hint)
        item = args[0] if len(args) == 2 and args[1] is Ellipsis else Any
        return tuple(_value(item, v, f"{where}[{i}]") for i, v in enumerate(value))
    if origin is dict and isinstance(value, dict):
        _, item = typing.get_args(hint) or (Any, Any)
        return {k: _value(item, v, f"{where}.{k}") for k, v in value.items()}
    return value
