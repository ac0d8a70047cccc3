"""JSON Schemas of records, generated from their dataclasses: fields, types (``X | None`` ->
null allowed) and their ``#:`` comments. No torch.

Report schemas allow fields they do not list (readers ignore fields they do not know, so a newer
report still validates); ``strict=True`` refuses them, which the tests use to prove every field
the tool writes is described here.
"""

from __future__ import annotations

import collections.abc
import dataclasses
import inspect
import re
import types
import typing
from collections.abc import Mapping
from typing import Any

DIALECT = "https://json-schema.org/draft/2020-12/schema"


def field_docs(cls: type) -> dict[str, str]:
    """field -> its ``#:`` comment (the lines above it and the one after it on its line)."""
    try:
        lines = inspect.getsource(cls).splitlines()
    except (OSError, TypeError):  # no source (a frozen build): schemas without descriptions
        return {}
    names = {f.name for f in dataclasses.fields(cls)}
    docs: dict[str, str] = {}
    pending: list[str] = []
    last: str | None = None  # the field just above, when it had a comment on its own line
    for line in lines[1:]:
        stripped = line.strip()
        if stripped.startswith("#:"):
            pending.append(stripped[2:].strip())
            continue
        match = re.match(r"^    (\w+)\s*:", line)
        if match and match.group(1) in names:
            inline = line.split("#:", 1)[1].strip() if "#:" in line else ""
            if pending and inline and last is not None:
                # a comment between two commented fields continues the one above it
                docs[last] = " ".join([docs[last], *pending])
                pending = []
            text = " ".join([*pending, inline]).strip()
            if text:
                docs[match.group(1)] = text
            last = match.group(1) if inline else None
        else:
            last = None
        pending = []
    return docs


def _json_words(text: str) -> str:
    """Comments are written for Python readers; a schema is read by JSON ones."""
    text = re.sub(r"\bNone\b", "null", text.replace("``", "`"))
    return re.sub(r"\b(True|False)\b", lambda m: m.group(1).lower(), text)


def _class_doc(cls: type) -> str | None:
    doc = inspect.getdoc(cls)
    if not doc or doc.startswith(f"{cls.__name__}("):  # dataclasses' generated signature
        return None
    return _json_words(" ".join(doc.split("\n\n")[0].split()))


class Builder:
    """Turns dataclasses into ``$defs`` entries, recursively."""

    def __init__(
        self,
        strict: bool,
        enums: Mapping[tuple[str, str], tuple] | None = None,
        extra: Mapping[str, Mapping[str, dict]] | None = None,
    ) -> None:
        self.strict, self.enums, self.extra = strict, enums or {}, extra or {}
        self.defs: dict[str, Any] = {}

    def ref(self, cls: type) -> dict[str, Any]:
        name = cls.__name__
        if name not in self.defs:
            self.defs[name] = {}  # reserved first: a record may refer back to itself
            self.defs[name] = self.record(cls)
        return {"$ref": f"#/$defs/{name}"}

    def record(self, cls: type, only: tuple[str, ...] | None = None) -> dict[str, Any]:
        """The object a record is written as: every field, or ``only`` these (a hand-written
        ``to_dict`` that leaves some out)."""
        hints = typing.get_type_hints(cls)
        docs = field_docs(cls)
        props: dict[str, Any] = {}
        required = []
        fields = {f.name: f for f in dataclasses.fields(cls)}
        for f in (fields[name] for name in only) if only is not None else fields.values():
            schema = self.type(hints[f.name])
            values = self.enums.get((cls.__name__, f.name))
            if values is not None:
                nullable = "null" in _types_of(schema)
                schema = {**schema, "enum": [*values, *([None] if nullable else [])]}
            if f.name in docs:
                schema = {"description": _json_words(docs[f.name]), **schema}
            props[f.name] = schema
            if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
                required.append(f.name)
        props.update(self.extra.get(cls.__name__, {}))
        out: dict[str, Any] = {"type": "object"}
        doc = _class_doc(cls)
        if doc:
            out["description"] = doc
        out.update(properties=props, required=required)
        if self.strict:
            out["additionalProperties"] = False
        return out

    def type(self, hint: Any) -> dict[str, Any]:
        if hint is Any or hint is object:
            return {}
        if hint is type(None):
            return {"type": "null"}
        simple = {bool: "boolean", int: "integer", float: "number", str: "string"}
        if hint in simple:
            return {"type": simple[hint]}
        if isinstance(hint, type) and dataclasses.is_dataclass(hint):
            return self.ref(hint)
        origin, args = typing.get_origin(hint), typing.get_args(hint)
        if origin in (typing.Union, types.UnionType):
            members = [self.type(a) for a in args]
            if all(set(m) == {"type"} for m in members):
                kinds = [t for m in members for t in _types_of(m)]
                return {"type": kinds[0] if len(kinds) == 1 else kinds}
            return {"anyOf": members}
        if hint in (dict, Mapping) or origin in (dict, collections.abc.Mapping):
            out: dict[str, Any] = {"type": "object"}
            if len(args) == 2 and args[1] is not Any:
                out["additionalProperties"] = self.type(args[1])
            return out
        if hint in (tuple, list) or origin in (tuple, list):
            if origin is tuple and args and (len(args) != 2 or args[1] is not Ellipsis):
                items = [self.type(a) for a in args]
                return {
                    "type": "array",
                    "prefixItems": items,
                    "minItems": len(items),
                    "maxItems": len(items),
                }
            return {"type": "array", **({"items": self.type(args[0])} if args else {})}
        raise TypeError(f"no JSON Schema for {hint!r}")


def _types_of(schema: Mapping[str, Any]) -> list[str]:
    kinds = schema.get("type", [])
    return [kinds] if isinstance(kinds, str) else list(kinds)


def report_enums() -> dict[tuple[str, str], tuple]:
    from ..reasons.kinds import KINDS
    from ..records.run import EVENTS, STATUSES
    from ..scenario.keys import KEYS

    return {
        ("Run", "status"): STATUSES,
        ("Call", "event"): EVENTS,
        ("CompileEvent", "reason_kind"): KINDS,
        ("Violation", "budget"): KEYS,
        ("Recompile", "reason_kind"): KINDS,
        ("ReasonDetail", "kind"): KINDS,
        ("RankParting", "reason_kind"): KINDS,
        ("RankParting", "event"): ("compile", "recompile", "failed"),
    }


def document(
    title: str, description: str, body: dict[str, Any], builder: Builder
) -> dict[str, Any]:
    out = {"$schema": DIALECT, "title": title, "description": description, **body}
    if builder.defs:
        out["$defs"] = dict(sorted(builder.defs.items()))
    return out


def version() -> dict[str, Any]:
    from ..records.report import SCHEMA_VERSION

    return {
        "const": SCHEMA_VERSION,
        "description": "The version of this format: fields are added without changing it, "
        "never renamed.",
    }


def report_body(builder: Builder) -> dict[str, Any]:
    from ..records.report import Report

    body = builder.record(Report)
    body["properties"] = {
        "schema_version": version(),
        **{k: v for k, v in body["properties"].items() if k != "schema_version"},
    }
    body["required"] = ["schema_version", *body["required"]]
    return body
