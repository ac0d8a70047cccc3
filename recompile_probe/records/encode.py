"""Records to their JSON form: ``dataclasses.asdict``, less the fields a record leaves out
while empty. No torch.

A field declared with ``metadata=OMIT_EMPTY`` is written only when it holds something, and one
with ``metadata=OMIT_NONE`` only when it is set, so a record can gain a field without every
report growing an empty one (an origin's ``stack``, a shared code object's functions).
"""

from __future__ import annotations

import dataclasses
from typing import Any

#: ``field(metadata=OMIT_EMPTY)``: left out of the JSON form while falsy
OMIT_EMPTY = {"omit_empty": True}
#: ``field(metadata=OMIT_NONE)``: left out of the JSON form while None
OMIT_NONE = {"omit_none": True}


def data(obj: Any) -> Any:
    """``obj`` (a record, or a container of them) as plain dicts, lists and values."""
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        out: dict[str, Any] = {}
        for f in dataclasses.fields(obj):
            value = getattr(obj, f.name)
            if f.metadata.get("omit_empty") and not value:
                continue
            if f.metadata.get("omit_none") and value is None:
                continue
            out[f.name] = data(value)
        return out
    if isinstance(obj, (list, tuple)):
        return type(obj)(data(v) for v in obj)
    if isinstance(obj, dict):
        return {k: data(v) for k, v in obj.items()}
    return obj
