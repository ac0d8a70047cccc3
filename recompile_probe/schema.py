"""JSON Schemas (draft 2020-12) of the scenario file and of every JSON document the tool writes.
No torch.

The scenario schema is built from the validator's own key tables (``scenario.TOP_KEYS``,
``strategies.CUSTOM_KEYS``, ``inputs.TENSOR_KEYS``, ``budgets.KEYS``, the built-in strategies,
targets, marks, fills and dtypes), so a key the validator accepts appears here with its
description and no second edit; this module only says what type each key holds. The report
schemas are built from model.py's dataclasses: their fields, their types (``X | None`` -> null
allowed) and their ``#:`` comments. The copies shipped in ``recompile_probe/schemas/`` are written
by ``python -m recompile_probe.schema`` (``make schemas``); a test keeps them equal to these.

Report schemas allow fields they do not list (readers ignore fields they do not know, so a newer
report still validates); ``strict=True`` refuses them, which the tests use to prove every field
the tool writes is described here.
"""

from __future__ import annotations

import collections.abc
import dataclasses
import inspect
import json
import re
import sys
import types
import typing
from pathlib import Path
from typing import Any, Callable, Mapping

DIALECT = "https://json-schema.org/draft/2020-12/schema"

#: identifiers as the validator accepts them (ASCII: JSON Schema patterns are ECMA-262 regexes)
_IDENT = r"[A-Za-z_][A-Za-z0-9_]*"
#: an argument path: 0, input_ids, past_key_values.key_cache[*], batch["pixel_values"] (sizes.py)
_PATH = ("^\\s*(?:\\d+|" + _IDENT + ")(?:\\." + _IDENT + "|\\[-?\\d+\\]|\\[\\*\\]"
         "|\\[\"[^\"']*\"\\]|\\['[^\"']*'\\])*\\s*$")  # no \" escapes: invalid in ECMA u-mode
_NUMBER = r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?"


# --- the scenario ---------------------------------------------------------------------------------

def _keyed(table: Mapping[str, str], types_: Mapping[str, dict]) -> dict[str, dict]:
    """One property per key of a validator table: its description from the table, its type from
    here (a key this module does not know yet is described and accepts any value)."""
    return {key: {"description": text, **types_.get(key, {})} for key, text in table.items()}


def _enum_help(title: str, items: Mapping[str, str]) -> str:
    return title + "\n" + "\n".join(f"- {name}: {text}" for name, text in items.items())


def scenario_schema() -> dict[str, Any]:
    """The scenario YAML file (what ``scenario.load`` accepts, as far as structure goes: whether
    a file or a callable exists, a symbol is used in a shape, or a budget names a sequence of
    the file is for the validator)."""
    from . import budgets, inputs, model, scenario, strategies
    from .sizes import SYMBOL
    from .targets.registry import BUILTIN_TARGETS

    symbol = SYMBOL.pattern
    builtins = list(strategies.BUILTINS)
    marks = list(strategies.MARKS)
    names = [*builtins, "all"]
    dtypes = [*inputs.DTYPES, *(f"torch.{d}" for d in inputs.DTYPES)]
    fills = list(inputs.FILLS)
    fill_call = (r"^\s*(?:" + "|".join(map(re.escape, fills)) + r"|randint\s*\(\s*[-+]?\d+\s*,"
                 r"\s*[-+]?\d+\s*\)|full\s*\(\s*" + _NUMBER + r"\s*\))\s*$")
    run_docs = _field_docs(model.Run)
    size = {"type": "integer", "minimum": 0}
    dims = {"anyOf": [{"type": "integer"}, {"type": "array", "minItems": 1,
                                            "items": {"type": "integer"}}],
            "description": "A dim index, or a list of them."}
    callable_ = {"type": "string", "pattern": r"^\s*.+:" + _IDENT + r"\s*$",
                 "description": "file.py:fn (relative to the scenario file) or package.module:fn."}

    budget_types: dict[str, dict] = {key: {"type": "integer", "minimum": 0}
                                     for key in budgets.MAX_KEYS}
    budget_types.update(outputs_match={"type": "boolean"},
                        status={"type": "string", "enum": list(model.STATUSES)})
    budget_help = {
        **{key: f"Fail when the run's {field} exceeds this. {field}: {run_docs.get(field, '')}"
           .strip() for key, field in budgets.MAX_KEYS.items()},
        **{key: f"Fail unless the run's {key} is this. {key}: {run_docs.get(key, '')}".strip()
           for key in budgets.EXACT_KEYS},
    }
    budget_props = _keyed({k: budget_help.get(k, k) for k in budgets.KEYS}, budget_types)

    defs: dict[str, Any] = {
        "strategy_name": {
            "type": "string",
            "description": _enum_help("A built-in strategy (\"all\": every known one), or a "
                                      "name from custom_strategies.",
                                      {n: s.description for n, s in strategies.BUILTINS.items()}),
            "anyOf": [{"enum": names}, {"type": "string"}],
        },
        "argument": {
            "description": "A tensor spec, or a plain value passed as is ({value: ...} for a "
                           "mapping).",
            "anyOf": [{"$ref": "#/$defs/tensor"},
                      {"type": "object", "properties": {"value": {}}, "required": ["value"],
                       "additionalProperties": False},
                      {"not": {"type": "object"}}],
        },
        "tensor": {
            "type": "object",
            "description": "A tensor argument, made deterministically per (seed, point).",
            "properties": _keyed(inputs.TENSOR_KEYS, {
                "shape": {"type": "array", "items": {"anyOf": [
                    {"type": "integer", "minimum": 0},
                    {"type": "string", "pattern": symbol}]}},
                "dtype": {"type": "string", "enum": dtypes},
                "device": {"type": "string"},
                "fill": {"type": "string", "anyOf": [{"enum": fills}, {"pattern": fill_call}]},
                "low": {"type": "integer"},
                "high": {"type": "integer"},
                "value": {"type": ["number", "boolean"]},
                "requires_grad": {"type": "boolean"},
            }),
            "required": ["shape"],
            "additionalProperties": False,
        },
        "argument_dims": {
            "type": "object",
            "description": "argument (positional index, keyword, or path such as "
                           "cache.keys[*] or batch[\"pixel_values\"]) -> dims",
            "propertyNames": {"pattern": _PATH},
            "additionalProperties": dims,
        },
        "point": {
            "type": "object",
            "description": "Every size symbol of the scenario -> its size at this call.",
            "minProperties": 1,
            "propertyNames": {"pattern": symbol},
            "additionalProperties": size,
        },
        "sequence_list": {
            "type": "array",
            "description": "Batch sizes, or points {SYMBOL: size}, one per call.",
            "minItems": 1,
            "items": {"anyOf": [size, {"$ref": "#/$defs/point"}]},
        },
        "sequence": {
            "anyOf": [
                {"$ref": "#/$defs/sequence_list"},
                {"type": "object", "description": "Every combination, the last symbol varying "
                                                  "fastest.",
                 "properties": {"grid": {
                     "type": "object", "minProperties": 1,
                     "description": "SYMBOL -> its sizes (one size holds it fixed).",
                     "propertyNames": {"pattern": symbol},
                     "additionalProperties": {"anyOf": [size, {"type": "array", "minItems": 1,
                                                               "items": size}]}}},
                 "required": ["grid"], "additionalProperties": False},
            ],
        },
        "backend": {
            "type": "object",
            "properties": _keyed(scenario.BACKEND_KEYS, {
                "name": {"type": "string", "enum": list(scenario.BACKENDS)},
                "mode": {"type": ["string", "null"]},
                "options": {"type": ["object", "null"]},
            }),
            "required": ["name"],
            "additionalProperties": False,
        },
        "compile": {
            "type": "object",
            "description": "torch.compile keyword arguments; dynamic and backend are set by "
                           "each strategy and by `backend:`.",
            "properties": _keyed(scenario.COMPILE_KEYS, {
                "fullgraph": {"type": "boolean"},
                "mode": {"type": ["string", "null"]},
                "options": {"type": ["object", "null"]},
                "recompile_limit": {"type": "integer"},
                "disable": {"type": "boolean"},
            }),
            "additionalProperties": False,
        },
        "custom_strategy": {
            "type": "object",
            "properties": _keyed(strategies.CUSTOM_KEYS, {
                "extends": {"type": "string", "anyOf": [{"enum": builtins}, {"type": "string"}]},
                "description": {"type": ["string", "null"]},
                "dynamic": {"type": ["boolean", "null"]},
                "mark": {"anyOf": [
                    {"type": "null"},
                    {"type": "string", "enum": marks},
                    {"type": "object", "minProperties": 1, "propertyNames": {"pattern": symbol},
                     "additionalProperties": {"enum": [*marks, None]}}]},
                "mark_options": {"type": "object"},
                "config": {"type": "object", "propertyNames": {"pattern": r"^torch\..*\."}},
                "stance": {"type": ["string", "null"]},
                "compile": {"type": "object"},
                "marks": {"type": "array", "items": {"$ref": "#/$defs/location_mark"}},
            }),
            "additionalProperties": False,
        },
        "location_mark": {
            "type": "object",
            "description": "One mark on one dim of one argument.",
            "properties": _keyed(strategies.LOCATION_MARK_KEYS, {
                "argument": {"anyOf": [{"type": "integer", "minimum": 0},
                                       {"type": "string", "pattern": _PATH}]},
                "dim": {"type": "integer", "minimum": 0},
                "kind": {"type": "string", "enum": marks},
            }),
            "required": list(strategies.LOCATION_MARK_KEYS),
            "additionalProperties": False,
        },
        "mark_kind": {
            "description": _enum_help("Marks:", {k: ".".join(v) for k, v in
                                                 strategies.MARKS.items()}),
            "enum": marks,
        },
        "tolerance": {
            "type": "object",
            "properties": _keyed(scenario.TOLERANCE_KEYS, {
                k: {"type": "number"} for k in scenario.TOLERANCE_KEYS}),
            "required": list(scenario.TOLERANCE_KEYS),
            "additionalProperties": False,
        },
        "budgets": {
            "type": "object",
            "description": "Budgets, or sequence name (or \"*\") -> budgets.",
            "properties": budget_props,
            "additionalProperties": {"$ref": "#/$defs/sequence_budgets"},
        },
        "sequence_budgets": {
            "type": "object",
            "properties": budget_props,
            "additionalProperties": False,
        },
    }
    defs["custom_strategy"]["properties"]["mark"]["description"] += "\n" + \
        defs["mark_kind"]["description"]
    defs["tensor"]["properties"]["fill"]["description"] += "\n" + \
        _enum_help("Fills:", inputs.FILLS)

    top = _keyed(scenario.TOP_KEYS, {
        "name": {"type": "string", "pattern": r"\S"},
        "description": {"type": "string"},
        "target": {"type": "string", "anyOf": [
            {"enum": list(BUILTIN_TARGETS)},
            {"pattern": r"^\s*.+:" + _IDENT + r"\s*$"}]},
        "params": {"type": "object"},
        "inputs": {"anyOf": [
            {"type": "array", "minItems": 1, "items": {"$ref": "#/$defs/argument"}},
            {"type": "object", "minProperties": 1, "propertyNames": {"pattern": f"^{_IDENT}$"},
             "additionalProperties": {"$ref": "#/$defs/argument"}}]},
        "factory": callable_,
        "driver": callable_,
        "dims": {"type": "object", "minProperties": 1, "propertyNames": {"pattern": symbol},
                 "additionalProperties": {"$ref": "#/$defs/argument_dims"}},
        "batch_dims": {"$ref": "#/$defs/argument_dims"},
        "sequences": {"anyOf": [
            {"$ref": "#/$defs/sequence_list"},
            {"type": "object", "minProperties": 1,
             "additionalProperties": {"$ref": "#/$defs/sequence"}}]},
        "backend": {"anyOf": [{"type": "string", "enum": list(scenario.BACKENDS)},
                              {"$ref": "#/$defs/backend"}]},
        "compile": {"$ref": "#/$defs/compile"},
        "strategies": {"anyOf": [
            {"$ref": "#/$defs/strategy_name"},
            {"type": "array", "minItems": 1, "items": {"$ref": "#/$defs/strategy_name"}}]},
        "custom_strategies": {"type": "object",
                              "propertyNames": {"not": {"enum": builtins}},
                              "additionalProperties": {"$ref": "#/$defs/custom_strategy"}},
        "seed": {"type": "integer"},
        "repeats": {"type": "integer", "minimum": 0},
        "tolerance": {"$ref": "#/$defs/tolerance"},
        "expect": {"type": "object", "additionalProperties": {"$ref": "#/$defs/budgets"}},
    })
    user_inputs = ("inputs", "factory", "driver")
    rules: list[dict[str, Any]] = [
        {   # a built-in target makes its own inputs and takes only its own params
            "if": {"required": ["target"], "properties": {"target": {"enum": list(BUILTIN_TARGETS)}}},
            "then": {"not": {"anyOf": [{"required": [k]} for k in (*user_inputs, "dims",
                                                                   "batch_dims")]}},
            "else": {"oneOf": [{"required": [k]} for k in user_inputs],
                     "properties": {"params": {"maxProperties": 0}}},
        },
        {   # with inputs, dims come from the shapes; a factory or driver declares them
            "if": {"required": ["inputs"]},
            "then": {"not": {"anyOf": [{"required": ["dims"]}, {"required": ["batch_dims"]}]}},
        },
        {
            "if": {"anyOf": [{"required": ["factory"]}, {"required": ["driver"]}]},
            "then": {"oneOf": [{"required": ["dims"]}, {"required": ["batch_dims"]}]},
        },
        {   # without custom strategies the names are known: a misspelt one is an error
            "if": {"not": {"required": ["custom_strategies"]}},
            "then": {"properties": {
                "strategies": {"anyOf": [{"enum": names},
                                         {"type": "array", "items": {"enum": names}}]},
                "expect": {"propertyNames": {"enum": ["*", *builtins]}}}},
        },
    ]
    for target in BUILTIN_TARGETS.values():
        rules.append({
            "if": {"required": ["target"], "properties": {"target": {"const": target.name}}},
            "then": {"properties": {"params": {
                "properties": {key: _param(value) for key, value in target.params.items()},
                "additionalProperties": False}}},
        })
    return {
        "$schema": DIALECT,
        "title": "recompile-probe scenario",
        "description": "A scenario file of recompile-probe: a target, the sizes it is called "
                       "with, and the strategies to compare (README, \"Scenarios\").",
        "type": "object",
        "properties": top,
        "required": ["target", "sequences"],
        "additionalProperties": False,
        "allOf": rules,
        "$defs": defs,
    }


def _param(default: Any) -> dict[str, Any]:
    """A built-in target's parameter, typed by its default (as the validator checks it)."""
    if isinstance(default, bool):
        return {"type": "boolean", "default": default}
    if isinstance(default, int):
        return {"type": "integer", "minimum": 1, "default": default}
    if isinstance(default, float):
        return {"type": "number", "default": default}
    if isinstance(default, str):
        return {"type": "string", "default": default}
    return {"default": default}


# --- reports: generated from the dataclasses ------------------------------------------------------

def _field_docs(cls: type) -> dict[str, str]:
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


class _Builder:
    """Turns dataclasses into ``$defs`` entries, recursively."""

    def __init__(self, strict: bool, enums: Mapping[tuple[str, str], tuple] | None = None,
                 extra: Mapping[str, Mapping[str, dict]] | None = None) -> None:
        self.strict, self.enums, self.extra = strict, enums or {}, extra or {}
        self.hints = _typed_dicts()
        self.defs: dict[str, Any] = {}

    def ref(self, cls: type) -> dict[str, Any]:
        name = cls.__name__
        if name not in self.defs:
            self.defs[name] = {}  # reserved first: a record may refer back to itself
            self.defs[name] = self.record(cls)
        return {"$ref": f"#/$defs/{name}"}

    def record(self, cls: type, only: tuple[str, ...] | None = None) -> dict[str, Any]:
        """The object a record is written as: every field, or ``only`` these (a hand-written
        ``as_dict`` that leaves some out)."""
        hints = typing.get_type_hints(cls)
        docs = _field_docs(cls)
        props: dict[str, Any] = {}
        required = []
        fields = {f.name: f for f in dataclasses.fields(cls)}
        for f in (fields[name] for name in only) if only is not None else fields.values():
            schema = self.type(self.hints.get((cls.__name__, f.name), hints[f.name]))
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
        if dataclasses.is_dataclass(hint):
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
                return {"type": "array", "prefixItems": items, "minItems": len(items),
                        "maxItems": len(items)}
            return {"type": "array", **({"items": self.type(args[0])} if args else {})}
        raise TypeError(f"no JSON Schema for {hint!r}")


def _types_of(schema: Mapping[str, Any]) -> list[str]:
    kinds = schema.get("type", [])
    return [kinds] if isinstance(kinds, str) else list(kinds)


def _typed_dicts() -> dict[tuple[str, str], Any]:
    """Fields the records keep as plain dicts, and the record each dict is written from."""
    from .origins import Origin
    from .reasons import ReasonDetail

    origins = tuple[Origin | None, ...] | None
    return {("CompileEvent", "reason_detail"): ReasonDetail | None,
            ("Recompile", "reason_detail"): ReasonDetail | None,
            ("CompileEvent", "reason_origins"): origins, ("Recompile", "reason_origins"): origins,
            ("GuardLine", "origin"): Origin | None, ("GuardLine", "origins"): tuple[Origin, ...],
            ("ReasonCount", "origin"): Origin | None, ("CauseCount", "origin"): Origin | None,
            ("FieldChange", "origin"): Origin | None}


def _report_enums() -> dict[tuple[str, str], tuple]:
    from . import budgets, model, reasons

    return {("Run", "status"): model.STATUSES, ("Call", "event"): model.EVENTS,
            ("CompileEvent", "reason_kind"): reasons.KINDS, ("Violation", "budget"): budgets.KEYS,
            ("Recompile", "reason_kind"): reasons.KINDS, ("ReasonDetail", "kind"): reasons.KINDS}


def _document(title: str, description: str, body: dict[str, Any],
              builder: _Builder) -> dict[str, Any]:
    out = {"$schema": DIALECT, "title": title, "description": description, **body}
    if builder.defs:
        out["$defs"] = dict(sorted(builder.defs.items()))
    return out


def _version() -> dict[str, Any]:
    from .model import SCHEMA_VERSION

    return {"const": SCHEMA_VERSION,
            "description": "The version of this format: fields are added without changing it, "
                           "never renamed."}


def _report_body(builder: _Builder) -> dict[str, Any]:
    from . import model

    body = builder.record(model.Report)
    body["properties"] = {"schema_version": _version(),
                          **{k: v for k, v in body["properties"].items()
                             if k != "schema_version"}}
    body["required"] = ["schema_version", *body["required"]]
    return body


def report_schema(strict: bool = False) -> dict[str, Any]:
    """The JSON report of `run --format json` (and `render --format json`, `--output`)."""
    builder = _Builder(strict, _report_enums())
    body = _report_body(builder)
    return _document("recompile-probe report",
                     "A report of `recompile-probe run --format json` (README, \"JSON report\"). "
                     "Fields are only ever added, never renamed; null is a figure the installed "
                     "torch could not provide.", body, builder)


def check_bundle_schema(strict: bool = False) -> dict[str, Any]:
    """`check --json` (and `--baseline`): one report for one scenario, else a bundle of them."""
    builder = _Builder(strict, _report_enums())
    builder.defs["Report"] = _report_body(builder)
    bundle: dict[str, Any] = {
        "type": "object",
        "properties": {"schema_version": _version(),
                       "reports": {"type": "array", "items": {"$ref": "#/$defs/Report"},
                                   "description": "One report per scenario, in the order "
                                                  "given."},
                       "shard": {"type": "object",
                                 "description": "check --shard K/N: which share of the runs "
                                                "this file holds, for `recompile-probe merge` "
                                                "(index, count, fingerprint, cost, runs, plan, "
                                                "failures)."}},
        "required": ["schema_version", "reports"],
    }
    if strict:
        bundle["additionalProperties"] = False
    builder.defs["Bundle"] = bundle
    return _document("recompile-probe check results",
                     "What `recompile-probe check --json` writes: the report itself for one "
                     "scenario, a bundle of reports for several.",
                     {"oneOf": [{"$ref": "#/$defs/Report"}, {"$ref": "#/$defs/Bundle"}]},
                     builder)


def watch_schema(strict: bool = False) -> dict[str, Any]:
    """`watch --format json` and `summarize --format json` (model.watch_to_json)."""
    from . import model

    builder = _Builder(strict, _report_enums(), extra={
        "CompileEvent": {"pid": {"type": "integer", "description": "watch: the process this "
                                 "compile happened in (compile ids restart in each process)."}},
        "WatchReport": {"totals": {
            "type": "object", "additionalProperties": {"type": "integer"},
            "description": "watch: processes, processes_compiled, functions, compiles, "
                           "recompiles and failed over every process."}},
    })
    body = builder.record(model.WatchReport)
    body["properties"] = {"schema_version": _version(),
                          **{k: v for k, v in body["properties"].items()
                             if k != "schema_version"}}
    body["required"] = ["schema_version", *body["required"]]
    return _document("recompile-probe watch report",
                     "What `recompile-probe watch --format json` and `summarize --format json` "
                     "write.", body, builder)


def explain_schema(strict: bool = False) -> dict[str, Any]:
    """`explain --format json` (explain.to_dict): explanations, costs and the report."""
    from . import explain, model

    builder = _Builder(strict, _report_enums())
    run = builder.record(model.Run)["properties"]
    entry_props = builder.record(model.CacheEntry)["properties"]
    builder.defs["Report"] = _report_body(builder)

    def obj(props: dict[str, Any], description: str) -> dict[str, Any]:
        out = {"type": "object", "description": description, "properties": props,
               "required": list(props)}
        if strict:
            out["additionalProperties"] = False
        return out

    nullable_number = {"type": ["number", "null"]}
    entry = obj({
        **{k: entry_props[k] for k in ("compile_id", "function", "call_index", "batch_size",
                                       "sizes", "guard_count", "leaf_guard_count")},
        "guards_by_kind": {"type": "object", "additionalProperties": {"type": "integer"},
                           "description": "guard kind -> how many, most first"},
        "shape_env_guards": {"type": "array", "items": {"type": "string"},
                             "description": "the symbolic (SHAPE_ENV) guards' text"},
        "guards": entry_props["guards"],
    }, "A cache entry of the run, with its guards counted by kind.")
    explanation = obj({
        **{k: run[k] for k in ("sequence_name", "sequence", "points", "strategy", "compiles",
                               "recompiles", "steady_state_us", "eager_us",
                               "steady_state_noisy", "guard_check_us")},
        "guard_latency_us_cold": {**nullable_number, "description": run["guard_latency_us"].get(
            "description", "")},
        "entries": {"type": "array", "items": {"$ref": "#/$defs/ExplainedEntry"}},
        "diffs": {"type": "array", "items": builder.ref(explain.GuardDiff),
                  "description": "guard diffs between consecutive entries of each frame"},
        "recompile_reasons": {"type": "array", "items": builder.ref(explain.Recompile)},
        "specializations": run["specializations"],
        "graph_breaks": run["graph_breaks"],
    }, "One strategy of one sequence that compiled more than once (or was chosen).")
    cost = obj({
        **{k: run[k] for k in ("sequence_name", "strategy", "compiles", "steady_state_us",
                               "steady_state_min_us", "steady_state_p90_us",
                               "steady_state_noisy", "eager_us", "guard_check_us")},
        "guard_latency_us_cold": {**nullable_number, "description": run["guard_latency_us"].get(
            "description", "")},
    }, "The per-call costs of every run.")
    builder.defs.update(ExplainedEntry=entry, Explanation=explanation, Cost=cost)
    body = obj({
        "schema_version": _version(),
        "explanations": {"type": "array", "items": {"$ref": "#/$defs/Explanation"}},
        "costs": {"type": "array", "items": {"$ref": "#/$defs/Cost"}},
        "notes": {"type": "array", "items": {"type": "string"},
                  "description": "cost notes per sequence (a slow winner, noisy timings)"},
        "report": {"$ref": "#/$defs/Report"},
    }, "")
    body.pop("description")
    return _document("recompile-probe explanation",
                     "What `recompile-probe explain --format json` writes.", body, builder)


def suggest_schema(strict: bool = False) -> dict[str, Any]:
    """`suggest --format json` (suggestion.to_json): what was measured and what is recommended."""
    from . import model, reasons, strategies, suggestion as sug

    enums = {**_report_enums(), ("Evaluation", "status"): sug.STATUSES,
             ("MarkChoice", "kind"): tuple(strategies.MARKS),
             ("Unfixable", "reason_kind"): reasons.KINDS}
    builder = _Builder(strict, enums)
    # the records as their as_dict writes them (MarkChoice without name, Evaluation without cost)
    builder.defs["MarkChoice"] = builder.record(sug.MarkChoice, ("argument", "dim", "symbol",
                                                                 "kind"))
    evaluation = tuple(f.name for f in dataclasses.fields(sug.Evaluation) if f.name != "cost")
    builder.defs["Evaluation"] = builder.record(sug.Evaluation, evaluation)
    props = builder.defs["Evaluation"]["properties"]

    def obj(properties: dict[str, Any], description: str = "",
            required: list[str] | None = None) -> dict[str, Any]:
        out: dict[str, Any] = {"type": "object"}
        if description:
            out["description"] = description
        out.update(properties=properties,
                   required=list(properties) if required is None else required)
        if strict:
            out["additionalProperties"] = False
        return out

    def nullable(ref: dict[str, Any]) -> dict[str, Any]:
        return {"anyOf": [ref, {"type": "null"}]}

    builder.defs["Recommendation"] = obj(
        {k: props[k] for k in ("marks", "whole_function", "compiles", "guard_count",
                               "shape_env_guard_count", "steady_state_us", "outputs_match",
                               "checks", "name", "form")},
        "The best candidate (the first of candidates), in short.")
    scenario = builder.record(model.ScenarioRef)
    scenario["properties"].update(
        sequences={"type": "array", "items": {"type": "string"},
                   "description": "the sequences every candidate was measured over"},
        backend={"type": "string"})
    scenario["required"] = list(scenario["properties"])
    builder.defs["SuggestScenario"] = scenario
    suggestion = builder.record(sug.Suggestion)["properties"]
    evaluation_ref = {"$ref": "#/$defs/Evaluation"}
    body = obj({
        "schema_version": {**_version(), "const": sug.SCHEMA_VERSION},
        "tool": builder.ref(model.Tool),
        "environment": builder.ref(model.Environment),
        "scenario": {"$ref": "#/$defs/SuggestScenario"},
        "locations": {"type": "array", "items": builder.ref(sug.Location),
                      "description": "every (argument, dim) whose size varies"},
        "search": suggestion["search"],
        "budget": suggestion["budget"],
        "evaluations": {"type": "integer", "description": "candidates measured"},
        "optimal": suggestion["optimal"],
        "complete": suggestion["complete"],
        "recommendation": {**nullable({"$ref": "#/$defs/Recommendation"}),
                           "description": "null: no candidate ran"},
        "necessity": {"type": "array", "items": builder.ref(sug.Necessity),
                      "description": "per mark of the recommendation, the measured run that "
                                     "shows it is needed"},
        "checks": {**nullable(obj({"with": evaluation_ref, "without": nullable(evaluation_ref),
                                   "verdict": {"type": ["string", "null"]}})),
                   "description": suggestion["checks_with"].get("description", "")},
        "candidates": {**suggestion["candidates"], "items": evaluation_ref},
        "unfixable": {"type": "array", "items": builder.ref(sug.Unfixable),
                      "description": "recompiles no measured marking removed"},
        "change": {**nullable(builder.ref(sug.Change)),
                   "description": "the recommendation as code, environment and YAML"},
        "notes": suggestion["notes"],
    })
    return _document("recompile-probe suggestion",
                     "What `recompile-probe suggest --format json` writes.", body, builder)


#: name -> builder, as `recompile-probe schema NAME` and the shipped files name them
SCHEMAS: dict[str, Callable[[], dict[str, Any]]] = {
    "scenario": scenario_schema,
    "report": report_schema,
    "check": check_bundle_schema,
    "watch": watch_schema,
    "explain": explain_schema,
    "suggest": suggest_schema,
}


def dumps(schema: Mapping[str, Any]) -> str:
    return json.dumps(schema, indent=2, ensure_ascii=False) + "\n"


def shipped_path(name: str) -> Path:
    """The copy shipped in the package (what an editor's modeline can point at)."""
    return Path(__file__).with_name("schemas") / f"{name}.schema.json"


def write_all(folder: Path | None = None) -> list[Path]:
    written = []
    for name, build in SCHEMAS.items():
        path = (folder / f"{name}.schema.json") if folder else shipped_path(name)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(dumps(build()), encoding="utf-8")
        written.append(path)
    return written


if __name__ == "__main__":  # python -m recompile_probe.schema [FOLDER]: regenerate the copies
    for written in write_all(Path(sys.argv[1]) if len(sys.argv) > 1 else None):
        print(written)
