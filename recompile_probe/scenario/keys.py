"""Every key a scenario file may hold: what it means, its JSON type, and the words of its errors.

One entry per key, read by both sides: the validator (load.py and the parsers beside it) accepts
exactly these keys and checks each value's type and bounds (``minimum``, ``exclusiveMinimum``)
against the entry's ``schema``, and the JSON Schema (`recompile-probe schema scenario`) is
assembled from the same entries, ``DEFS`` (the shared shapes the entries refer to) and ``RULES``
(what holds across keys). A key added here is typed, bounded and documented in one place. No
torch.

Longer than the other modules on purpose: it is one table, and a table read in one file is the
point (splitting it by section would scatter the keys a reader compares side by side).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from ..records.run import STATUSES
from ..sizes.paths import PATH_PATTERN
from ..sizes.points import SYMBOL
from ..strategies.builtins import BUILTINS, OPT_IN, RANK_BUILTINS
from ..strategies.model import MARKS
from .builtin_targets import BUILTIN_TARGETS


@dataclass(frozen=True)
class Key:
    help: str  #: what the key holds (editors show it; the schema's description)
    #: the JSON Schema of its value; its "type" is what the validator checks first
    schema: Mapping[str, Any]
    #: the expected value in an error's words: "expected an integer, got a string ('x')"; the
    #: words of a key with a bound state it, as a value out of bounds is refused in them too
    what: str = ""
    #: what to do about a value out of the schema's bounds
    remedy: str = ""


def table(**keys: Key) -> Mapping[str, Key]:
    return MappingProxyType(keys)


# --- vocabularies -----------------------------------------------------------------------------

BACKENDS = ("eager", "aot_eager", "inductor")
#: fill name -> what it makes
FILLS: Mapping[str, str] = MappingProxyType(
    {
        "randn": "normal(0, 1)",
        "rand": "uniform [0, 1)",
        "randint": "randint(low, high)",
        "zeros": "zeros",
        "ones": "ones",
        "arange": "0, 1, 2, ... in shape order",
        "full": "full(value)",
    }
)
DTYPES = (
    "float32",
    "float",
    "float64",
    "double",
    "float16",
    "half",
    "bfloat16",
    "int64",
    "long",
    "int32",
    "int",
    "int16",
    "int8",
    "uint8",
    "bool",
    "complex64",
    "complex128",
)
DTYPE_ALIASES: Mapping[str, str] = MappingProxyType(
    {"float": "float32", "double": "float64", "half": "float16", "long": "int64", "int": "int32"}
)
#: budget key -> the Run field it caps
MAX_KEYS: Mapping[str, str] = MappingProxyType(
    {
        "max_compiles": "compiles",
        "max_recompiles": "recompiles",
        "max_graphs": "graphs",
        "max_guards": "guard_count",
        "max_shape_env_guards": "shape_env_guard_count",
    }
)
#: budget keys that must equal a Run field of the same name
EXACT_KEYS = ("outputs_match", "status")
#: "*": a budget for every strategy, or every sequence
ANY = "*"

#: identifiers as the validator accepts them (ASCII: JSON Schema patterns are ECMA-262 regexes)
_IDENT = r"[A-Za-z_][A-Za-z0-9_]*"
_NUMBER = r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?"
_SIZE = {"type": "integer", "minimum": 0}
_CALLABLE = {"type": "string", "pattern": r"^\s*.+:" + _IDENT + r"\s*$"}
_DIMS = {
    "anyOf": [{"type": "integer"}, {"type": "array", "minItems": 1, "items": {"type": "integer"}}],
    "description": "A dim index, or a list of them.",
}
#: symbol -> [lo, hi]: a `coverage:` range and a `no_recompile_in` budget
_RANGES = {
    "type": "object",
    "minProperties": 1,
    "propertyNames": {"pattern": SYMBOL.pattern},
    "additionalProperties": {"$ref": "#/$defs/size_range"},
}
_MARKS = list(MARKS)
_BUILTIN_NAMES = list(BUILTINS)
_RANK_NAMES = list(RANK_BUILTINS)
_STRATEGY_NAMES = [*_BUILTIN_NAMES, *_RANK_NAMES, "all"]
#: process group backends a distributed scenario may name ("cpu:gloo" is torch's device:backend
#: form); anything else torch.distributed knows is accepted too and tried as written
PG_BACKENDS = ("gloo", "cpu:gloo", "nccl", "mpi")
#: seconds a collective waits for the other ranks by default
DEFAULT_PG_TIMEOUT_S = 60.0
#: the sequence form that gives each rank its own sizes
BY_RANK = "by_rank"


# --- the tables -------------------------------------------------------------------------------

TOP_KEYS = table(
    name=Key(
        "Shown in reports (default: the file name).",
        {"type": "string", "pattern": r"\S"},
        "a string",
    ),
    description=Key("What this scenario checks.", {"type": "string"}, "a string"),
    target=Key(
        "What is compiled: a built-in (see `recompile-probe targets`), package.module:fn "
        "or path/to/file.py:fn (relative to this file).",
        {
            "type": "string",
            "anyOf": [{"enum": list(BUILTIN_TARGETS)}, {"pattern": r"^\s*.+:" + _IDENT + r"\s*$"}],
        },
        "a target name (a string)",
    ),
    params=Key(
        "Parameters of a built-in target (see `recompile-probe targets`).",
        {"type": "object"},
        "a mapping of target parameters",
    ),
    inputs=Key(
        "User targets: a tensor spec or a plain value per positional argument (a list) "
        "or per keyword (a mapping); a dim written as a size symbol (B, S, ...) follows "
        "it.",
        {
            "type": ["array", "object"],
            "anyOf": [
                {"type": "array", "minItems": 1, "items": {"$ref": "#/$defs/argument"}},
                {
                    "type": "object",
                    "minProperties": 1,
                    "propertyNames": {"pattern": f"^{_IDENT}$"},
                    "additionalProperties": {"$ref": "#/$defs/argument"},
                },
            ],
        },
        "a list with one entry per positional argument (or a mapping of keyword -> spec)",
    ),
    factory=Key(
        "Instead of inputs: file.py:fn or module:fn returning the arguments for one "
        "point: make_inputs(batch_size), or make_inputs(B=.., S=..) with several "
        "symbols.",
        _CALLABLE,
        "file.py:fn or module:fn",
    ),
    driver=Key(
        "Instead of inputs: file.py:fn called as fn(compiled_target, **sizes) per point.",
        _CALLABLE,
        "file.py:fn or module:fn",
    ),
    dims=Key(
        "With a factory or driver: size symbol -> argument (index, keyword or path such as "
        "cache.keys[*]) -> the dims that follow it.",
        {
            "type": "object",
            "minProperties": 1,
            "propertyNames": {"pattern": SYMBOL.pattern},
            "additionalProperties": {"$ref": "#/$defs/argument_dims"},
        },
        "a mapping of symbol -> {argument: dims}",
    ),
    batch_dims=Key(
        "With a factory or driver: argument index -> the dims that follow the batch "
        "size (= dims: {B: ...}).",
        {"type": "object", "$ref": "#/$defs/argument_dims"},
        "a mapping of argument (index, keyword or path) -> dims",
    ),
    sequences=Key(
        "name -> the sizes at each call: a list of batch sizes, a list of points "
        "{SYMBOL: size}, or {grid: {SYMBOL: [sizes]}}; or one unnamed list.",
        {
            "type": ["array", "object"],
            "anyOf": [
                {"$ref": "#/$defs/sequence_list"},
                {
                    "type": "object",
                    "minProperties": 1,
                    "additionalProperties": {"$ref": "#/$defs/sequence"},
                },
            ],
        },
        "a mapping of name -> list of sizes or points",
    ),
    backend=Key(
        "eager, aot_eager or inductor; or {name: inductor, mode: ..., options: {...}}.",
        {
            "type": ["string", "object"],
            "anyOf": [{"type": "string", "enum": list(BACKENDS)}, {"$ref": "#/$defs/backend"}],
        },
        "a backend name",
    ),
    compile=Key(
        "Extra torch.compile keyword arguments for every strategy.",
        {"type": "object", "$ref": "#/$defs/compile"},
        "a mapping of torch.compile keyword arguments",
    ),
    strategies=Key(
        'The strategies to compare, in order ("all": every known one); default: '
        f"every built-in but the knob ones ({', '.join(OPT_IN)}), and every custom strategy.",
        {
            "type": ["string", "array"],
            "anyOf": [
                {"$ref": "#/$defs/strategy_name"},
                {"type": "array", "minItems": 1, "items": {"$ref": "#/$defs/strategy_name"}},
            ],
        },
        "a list of strategy names",
    ),
    custom_strategies=Key(
        "name -> your own strategy, from the same fields as the built-ins.",
        {
            "type": "object",
            "propertyNames": {"not": {"enum": _BUILTIN_NAMES}},
            "additionalProperties": {"$ref": "#/$defs/custom_strategy"},
        },
        "a mapping of name -> strategy fields",
    ),
    seed=Key("Inputs are deterministic per (seed, point).", {"type": "integer"}, "an integer"),
    repeats=Key(
        "Calls timed for the steady-state µs/call (0: skip).",
        {"type": "integer", "minimum": 0},
        "0 or more calls to time (an integer)",
    ),
    tolerance=Key(
        "For the comparison with eager (default: torch.testing.assert_close's).",
        {"type": "object", "$ref": "#/$defs/tolerance"},
        "a mapping with rtol and atol",
    ),
    ranks=Key(
        "Run the scenario on this many ranks (2 or more): the tool starts one process per rank, "
        "joins them in a process group (`distributed:`) and runs every strategy on every rank, "
        "each over its own sizes (a sequence's `by_rank:`), to compare the ranks.",
        {"type": "integer", "minimum": 2},
        "2 or more ranks (an integer)",
        "One rank is a single process: drop `ranks:` to run the scenario in one.",
    ),
    distributed=Key(
        "With `ranks:`: the process group the ranks join (backend, timeout_s).",
        {"type": "object", "$ref": "#/$defs/distributed"},
        "a mapping with backend and timeout_s",
    ),
    coverage=Key(
        "Sizes every strategy's cache entries are checked against after its sequence, symbol "
        "-> [lo, hi] inclusive, e.g. {B: [1, 4096]}: decided from the entries' guards "
        "without compiling (docs/coverage.md).",
        _RANGES,
        "a mapping of symbol -> [lo, hi]",
    ),
    expect=Key(
        'Budgets `check` gates on: strategy (or "*") -> budgets, or -> sequence (or '
        '"*") -> budgets.',
        {"type": "object", "additionalProperties": {"$ref": "#/$defs/budgets"}},
        'a mapping of strategy (or "*") -> budgets',
    ),
)

BACKEND_KEYS = table(
    name=Key(
        "eager, aot_eager or inductor.",
        {"type": "string", "enum": list(BACKENDS)},
        "a backend name",
    ),
    mode=Key(
        "torch.compile mode for inductor, e.g. max-autotune.",
        {"type": ["string", "null"]},
        "an inductor mode name",
    ),
    options=Key(
        "inductor options (torch.compile options=...).",
        {"type": ["object", "null"]},
        "a mapping of inductor options",
    ),
)

#: torch.compile kwargs a scenario may set; dynamic and backend belong to strategies and `backend`.
COMPILE_KEYS = table(
    fullgraph=Key(
        "torch.compile(fullgraph=...): a graph break is an error.",
        {"type": "boolean"},
        "true or false",
    ),
    mode=Key("torch.compile(mode=...).", {"type": ["string", "null"]}, "a mode name"),
    options=Key("torch.compile(options=...).", {"type": ["object", "null"]}, "a mapping"),
    recompile_limit=Key(
        "torch._dynamo.config.recompile_limit for the run.", {"type": "integer"}, "an integer"
    ),
    disable=Key("torch.compile(disable=...).", {"type": "boolean"}, "true or false"),
    isolate_recompiles=Key(
        "torch.compile(isolate_recompiles=...): a cache and recompile limit of its own.",
        {"type": "boolean"},
        "true or false",
    ),
    name=Key("torch.compile(name=...).", {"type": ["string", "null"]}, "a string"),
)

DISTRIBUTED_KEYS = table(
    backend=Key(
        "torch.distributed backend: gloo (CPU, the default), cpu:gloo, nccl, ...",
        {"type": "string", "pattern": r"\S"},
        "a process group backend name",
    ),
    timeout_s=Key(
        "Seconds a collective waits for the other ranks before it fails (default "
        f"{DEFAULT_PG_TIMEOUT_S:g}); a rank that makes no progress for twice this plus 60 s "
        "is stopped, and its unfinished runs are reported as a Timeout.",
        {"type": "number", "exclusiveMinimum": 0},
        "a positive number of seconds",
    ),
)

TOLERANCE_KEYS = table(
    rtol=Key("Relative tolerance (torch.testing.assert_close).", {"type": "number"}, "a number"),
    atol=Key("Absolute tolerance (torch.testing.assert_close).", {"type": "number"}, "a number"),
)

#: tensor spec key -> what it holds
TENSOR_KEYS = table(
    shape=Key(
        "Integers and size symbols (B, S, ...): a dim written as a symbol follows its size.",
        {
            "type": "array",
            "items": {"anyOf": [_SIZE, {"type": "string", "pattern": SYMBOL.pattern}]},
        },
        "a list of dims",
    ),
    dtype=Key(
        "A torch dtype name (float32, bfloat16, int64, ...).",
        {"type": "string", "enum": [*DTYPES, *(f"torch.{d}" for d in DTYPES)]},
        "a dtype name",
    ),
    device=Key("Where the tensor is made (default cpu).", {"type": "string"}, "a device name"),
    fill=Key(
        "randn, rand, randint(low, high), zeros, ones, arange or full(value).",
        {
            "type": "string",
            "anyOf": [
                {"enum": list(FILLS)},
                {
                    "pattern": r"^\s*(?:"
                    + "|".join(map(re.escape, FILLS))
                    + r"|randint\s*\(\s*[-+]?\d+\s*,\s*[-+]?\d+\s*\)|full\s*\(\s*"
                    + _NUMBER
                    + r"\s*\))\s*$"
                },
            ],
        },
        f"one of {', '.join(FILLS)}",
    ),
    low=Key("randint's lower bound (inclusive).", {"type": "integer"}, "an integer"),
    high=Key("randint's upper bound (exclusive).", {"type": "integer"}, "an integer"),
    value=Key("full's value.", {"type": ["number", "boolean"]}, "a number"),
    requires_grad=Key("Make the tensor require grad.", {"type": "boolean"}, "true or false"),
)

#: Keys a scenario's ``custom_strategies`` entry may use
CUSTOM_KEYS = table(
    extends=Key(
        "A built-in or earlier custom strategy whose fields this one starts from.",
        {"type": "string", "anyOf": [{"enum": _BUILTIN_NAMES}, {"type": "string"}]},
        "a strategy name",
    ),
    description=Key(
        "Shown in tables and reports (default: a summary of the knobs).",
        {"type": ["string", "null"]},
        "a string",
    ),
    dynamic=Key(
        "torch.compile(dynamic=...): null (automatic), true or false.",
        {"type": ["boolean", "null"]},
        "true, false or null",
    ),
    mark=Key(
        "Mark applied before every call to the dims of every varying size symbol (dynamic, "
        "maybe_dynamic, unbacked, static), or {SYMBOL: kind} per symbol (a symbol left out "
        "stays unmarked).",
        {
            "type": ["string", "object", "null"],
            "anyOf": [
                {"type": "null"},
                {"type": "string", "enum": _MARKS},
                {
                    "type": "object",
                    "minProperties": 1,
                    "propertyNames": {"pattern": SYMBOL.pattern},
                    "additionalProperties": {"enum": [*_MARKS, None]},
                },
            ],
        },
        "a mark kind or {SYMBOL: kind, ...}",
    ),
    mark_options=Key(
        "Keyword arguments of the mark function (hint_override, min, max, strict, "
        "...), or {SYMBOL: {option: value}} per symbol.",
        {"type": "object"},
        "a mapping",
    ),
    config=Key(
        "Dotted torch config attribute -> value, patched for the run; the value "
        "{batch_sources} expands to the marked dims as Dynamo sources.",
        {"type": "object", "propertyNames": {"pattern": r"^torch\..*\."}},
        "a mapping",
    ),
    stance=Key(
        "torch.compiler.set_stance(...) for the run.", {"type": ["string", "null"]}, "a string"
    ),
    compile=Key("Extra torch.compile keyword arguments.", {"type": "object"}, "a mapping"),
    driver_options=Key(
        "Keyword arguments passed to the scenario's driver on every call under this strategy "
        "(and its eager reference), e.g. {cache_implementation: static}: a change to the "
        "program measured like any strategy. Needs a driver.",
        {"type": "object", "propertyNames": {"pattern": r"^[A-Za-z_][A-Za-z0-9_]*$"}},
        "a mapping of keyword -> value",
    ),
    marks=Key(
        "Marks on single dims, on top of `mark`: a list of {argument: PATH, dim: N, kind: "
        "dynamic|unbacked|...}, PATH written as in `dims:` (what `suggest --write` adds).",
        {"type": "array", "items": {"$ref": "#/$defs/location_mark"}},
        "a list of {argument, dim, kind}",
    ),
)

#: Keys of one `marks:` entry.
LOCATION_MARK_KEYS = table(
    argument=Key(
        "The argument: a positional index, a keyword or a path as in `dims:`.",
        {
            "type": ["integer", "string"],
            "anyOf": [
                {"type": "integer", "minimum": 0},
                {"type": "string", "pattern": PATH_PATTERN},
            ],
        },
        "an argument index, keyword or path",
    ),
    dim=Key(
        "The dim of that tensor (0-based).",
        {"type": "integer", "minimum": 0},
        "a dim (a non-negative integer)",
    ),
    kind=Key(
        "The mark: dynamic, maybe_dynamic, unbacked or static.",
        {"type": "string", "enum": _MARKS},
        "a mark kind",
    ),
)

#: budget keys; the schema adds the Run field's own description to each
BUDGET_KEYS = table(
    **{
        key: Key(
            f"Fail when the run's {field} exceeds this.",
            {"type": "integer", "minimum": 0},
            "a non-negative integer",
        )
        for key, field in MAX_KEYS.items()
    },
    outputs_match=Key(
        "Fail unless the run's outputs_match is this.", {"type": "boolean"}, "true or false"
    ),
    status=Key(
        "Fail unless the run's status is this.",
        {"type": "string", "enum": list(STATUSES)},
        f"one of {', '.join(STATUSES)}",
    ),
    ranks_agree=Key(
        "With `ranks:`: true fails unless every rank compiles the same under the strategy "
        "(compiles, recompiles, failed compiles, recompile limit hits, status).",
        {"type": "boolean"},
        "true or false",
    ),
    no_recompile_in=Key(
        "Fail unless every size in this range is served by the run's cache entries, symbol "
        "-> [lo, hi] inclusive, e.g. {B: [1, 4096]}: decided from the guards after the "
        "sequence (docs/coverage.md); checked on samples where nothing stronger holds.",
        _RANGES,
        "a mapping of symbol -> [lo, hi]",
    ),
)
KEYS = tuple(BUDGET_KEYS)
#: budgets whose limit is a size range, judged by the run's coverage
RANGE_KEYS = ("no_recompile_in",)
#: budgets judged across the ranks of a strategy, not on one run
RANK_KEYS = ("ranks_agree",)


# --- what the tables refer to, and what holds across keys ---------------------------------------


def _props(keys: Mapping[str, Key]) -> dict[str, Any]:
    return {name: {"description": key.help, **key.schema} for name, key in keys.items()}


def _listed(title: str, items: Mapping[str, str]) -> str:
    return title + "\n" + "\n".join(f"- {name}: {text}" for name, text in items.items())


def defs() -> dict[str, Any]:
    """The shapes the entries refer to (``$ref: #/$defs/...``)."""
    budgets = _props(BUDGET_KEYS)
    out: dict[str, Any] = {
        "strategy_name": {
            "type": "string",
            "description": _listed(
                'A built-in strategy ("all": every known one), or a name from custom_strategies.',
                {
                    **{n: s.description for n, s in BUILTINS.items()},
                    **{n: f"(with `ranks:`) {s.description}" for n, s in RANK_BUILTINS.items()},
                },
            ),
            "anyOf": [{"enum": _STRATEGY_NAMES}, {"type": "string"}],
        },
        "argument": {
            "description": "A tensor spec, or a plain value passed as is ({value: ...} for a "
            "mapping).",
            "anyOf": [
                {"$ref": "#/$defs/tensor"},
                {
                    "type": "object",
                    "properties": {"value": {}},
                    "required": ["value"],
                    "additionalProperties": False,
                },
                {"not": {"type": "object"}},
            ],
        },
        "tensor": {
            "type": "object",
            "description": "A tensor argument, made deterministically per (seed, point).",
            "properties": _props(TENSOR_KEYS),
            "required": ["shape"],
            "additionalProperties": False,
        },
        "argument_dims": {
            "type": "object",
            "description": "argument (positional index, keyword, or path such as "
            'cache.keys[*] or batch["pixel_values"]) -> dims',
            "propertyNames": {"pattern": PATH_PATTERN},
            "additionalProperties": _DIMS,
        },
        "size_range": {
            "type": "array",
            "description": "[lo, hi]: every size from lo to hi, both included.",
            "minItems": 2,
            "maxItems": 2,
            "items": _SIZE,
        },
        "point": {
            "type": "object",
            "description": "Every size symbol of the scenario -> its size at this call.",
            "minProperties": 1,
            "propertyNames": {"pattern": SYMBOL.pattern},
            "additionalProperties": _SIZE,
        },
        "sequence_list": {
            "type": "array",
            "description": "Batch sizes, or points {SYMBOL: size}, one per call.",
            "minItems": 1,
            "items": {"anyOf": [_SIZE, {"$ref": "#/$defs/point"}]},
        },
        "sequence": {
            "anyOf": [
                {"$ref": "#/$defs/sequence_list"},
                {
                    "type": "object",
                    "description": "With `ranks:`: rank -> that rank's sizes (every rank from 0 "
                    "up), each written as any other sequence.",
                    "properties": {
                        BY_RANK: {
                            "type": "object",
                            "minProperties": 1,
                            "propertyNames": {"pattern": r"^(0|[1-9][0-9]*)$"},
                            "additionalProperties": {
                                "anyOf": [
                                    {"$ref": "#/$defs/sequence_list"},
                                    {"$ref": "#/$defs/sequence_grid"},
                                ]
                            },
                        }
                    },
                    "required": [BY_RANK],
                    "additionalProperties": False,
                },
                {"$ref": "#/$defs/sequence_grid"},
            ],
        },
        "sequence_grid": {
            "type": "object",
            "description": "Every combination, the last symbol varying fastest.",
            "properties": {
                "grid": {
                    "type": "object",
                    "minProperties": 1,
                    "description": "SYMBOL -> its sizes (one size holds it fixed).",
                    "propertyNames": {"pattern": SYMBOL.pattern},
                    "additionalProperties": {
                        "anyOf": [_SIZE, {"type": "array", "minItems": 1, "items": _SIZE}]
                    },
                }
            },
            "required": ["grid"],
            "additionalProperties": False,
        },
        "distributed": {
            "type": "object",
            "description": "The process group of a scenario with `ranks:`.",
            "properties": _props(DISTRIBUTED_KEYS),
            "additionalProperties": False,
        },
        "backend": {
            "type": "object",
            "properties": _props(BACKEND_KEYS),
            "required": ["name"],
            "additionalProperties": False,
        },
        "compile": {
            "type": "object",
            "description": "torch.compile keyword arguments; dynamic and backend are set by "
            "each strategy and by `backend:`. Any other keyword the installed torch.compile "
            "accepts is passed as written.",
            "properties": _props(COMPILE_KEYS),
            "additionalProperties": True,
            "propertyNames": {"not": {"enum": ["dynamic", "backend", "model"]}},
        },
        "custom_strategy": {
            "type": "object",
            "properties": _props(CUSTOM_KEYS),
            "additionalProperties": False,
        },
        "location_mark": {
            "type": "object",
            "description": "One mark on one dim of one argument.",
            "properties": _props(LOCATION_MARK_KEYS),
            "required": list(LOCATION_MARK_KEYS),
            "additionalProperties": False,
        },
        "mark_kind": {
            "description": _listed("Marks:", {k: ".".join(v) for k, v in MARKS.items()}),
            "enum": _MARKS,
        },
        "tolerance": {
            "type": "object",
            "properties": _props(TOLERANCE_KEYS),
            "required": list(TOLERANCE_KEYS),
            "additionalProperties": False,
        },
        "budgets": {
            "type": "object",
            "description": 'Budgets, or sequence name (or "*") -> budgets.',
            "properties": budgets,
            "additionalProperties": {"$ref": "#/$defs/sequence_budgets"},
        },
        "sequence_budgets": {
            "type": "object",
            "properties": budgets,
            "additionalProperties": False,
        },
    }
    out["custom_strategy"]["properties"]["mark"]["description"] += (
        "\n" + out["mark_kind"]["description"]
    )
    out["tensor"]["properties"]["fill"]["description"] += "\n" + _listed("Fills:", FILLS)
    return out


_USER_INPUTS = ("inputs", "factory", "driver")

#: what holds across keys, each as the validator enforces it (load.py, inputs.py), in schema words
RULES: tuple[Mapping[str, Any], ...] = (
    {  # a built-in target makes its own inputs and takes only its own params
        "if": {"required": ["target"], "properties": {"target": {"enum": list(BUILTIN_TARGETS)}}},
        "then": {
            "not": {"anyOf": [{"required": [k]} for k in (*_USER_INPUTS, "dims", "batch_dims")]}
        },
        "else": {
            "oneOf": [{"required": [k]} for k in _USER_INPUTS],
            "properties": {"params": {"maxProperties": 0}},
        },
    },
    {  # with inputs, dims come from the shapes; a factory or driver declares them
        "if": {"required": ["inputs"]},
        "then": {"not": {"anyOf": [{"required": ["dims"]}, {"required": ["batch_dims"]}]}},
    },
    {
        "if": {"anyOf": [{"required": ["factory"]}, {"required": ["driver"]}]},
        "then": {"oneOf": [{"required": ["dims"]}, {"required": ["batch_dims"]}]},
    },
    {  # without custom strategies the names are known: a misspelt one is an error
        "if": {"not": {"required": ["custom_strategies"]}},
        "then": {
            "properties": {
                "strategies": {
                    "anyOf": [
                        {"enum": _STRATEGY_NAMES},
                        {"type": "array", "items": {"enum": _STRATEGY_NAMES}},
                    ]
                },
                "expect": {"propertyNames": {"enum": [ANY, *_BUILTIN_NAMES, *_RANK_NAMES]}},
            }
        },
    },
    *(
        {  # a built-in target's params, typed by their defaults (as the validator checks them)
            "if": {"required": ["target"], "properties": {"target": {"const": target.name}}},
            "then": {
                "properties": {
                    "params": {
                        "properties": {key: target.param_schema(key) for key in target.params},
                        "additionalProperties": False,
                    }
                }
            },
        }
        for target in BUILTIN_TARGETS.values()
    ),
)

JSON_TYPES: Mapping[str, tuple[type, ...]] = MappingProxyType(
    {
        "string": (str,),
        "integer": (int,),
        "number": (int, float),
        "boolean": (bool,),
        "object": (dict,),
        "array": (list,),
        "null": (type(None),),
    }
)


def in_bounds(schema: Mapping[str, Any], value: Any) -> bool:
    """Whether a value of the schema's type keeps its ``minimum`` and ``exclusiveMinimum``."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return True
    low, above = schema.get("minimum"), schema.get("exclusiveMinimum")
    return (low is None or value >= low) and (above is None or value > above)


def python_types(key: Key) -> tuple[type, ...] | None:
    """The Python types the key's JSON type admits (None: the schema states no type)."""
    kinds = key.schema.get("type")
    if kinds is None:
        return None
    names = [kinds] if isinstance(kinds, str) else list(kinds)
    return tuple(t for name in names for t in JSON_TYPES[name])
