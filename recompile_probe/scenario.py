"""Scenario YAML -> a validated, frozen ``Scenario``.

Everything is checked before anything runs, and every error names the file, the line, the key,
what was expected and (for a misspelt key, strategy, target, dtype, ...) the closest valid name.
YAML is read with ``SafeLoader`` only: python tags are refused. No torch import.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Mapping

import yaml

from . import budgets as budgets_mod
from . import strategies as strategies_mod
from .errors import ScenarioError
from .strategies import Strategy
from .targets.registry import BUILTIN_TARGETS

TOP_KEYS = ("name", "description", "target", "params", "inputs", "factory", "batch_dims",
            "sequences", "backend", "compile", "strategies", "custom_strategies", "seed",
            "repeats", "tolerance", "expect")
BACKENDS = ("eager", "aot_eager", "inductor")
BACKEND_KEYS = ("name", "mode", "options")
#: torch.compile kwargs a scenario may set; dynamic and backend belong to strategies and `backend`.
COMPILE_KEYS = ("fullgraph", "mode", "options", "recompile_limit", "disable")
TENSOR_KEYS = ("shape", "dtype", "device", "fill", "low", "high", "value", "requires_grad")
FILLS = ("randn", "rand", "randint", "zeros", "ones", "arange", "full")
DTYPES = ("float32", "float", "float64", "double", "float16", "half", "bfloat16", "int64", "long",
          "int32", "int", "int16", "int8", "uint8", "bool", "complex64", "complex128")
MARK_KINDS = tuple(strategies_mod.MARKS)
BATCH_SYMBOL = "B"
DEFAULT_SCENARIO = "logprobs.yaml"


@dataclass(frozen=True)
class TensorSpec:
    """A tensor argument: dims equal to ``BATCH_SYMBOL`` follow the batch size."""

    shape: tuple[int | str, ...]
    dtype: str = "float32"
    device: str = "cpu"
    fill: str = "randn"
    low: int = 0
    high: int = 10
    value: float = 0.0
    requires_grad: bool = False

    @property
    def batch_dims(self) -> tuple[int, ...]:
        return tuple(i for i, d in enumerate(self.shape) if d == BATCH_SYMBOL)


@dataclass(frozen=True)
class Value:
    """A plain Python argument, passed as is to every call."""

    value: Any


@dataclass(frozen=True)
class Scenario:
    name: str
    path: str | None  #: the YAML file, None when built in code
    target: str
    params: Mapping[str, Any] = field(default_factory=dict)
    inputs: tuple[TensorSpec | Value, ...] | None = None
    factory: str | None = None
    batch_dims: Mapping[int, tuple[int, ...]] = field(default_factory=dict)
    sequences: Mapping[str, tuple[int, ...]] = field(default_factory=dict)
    backend: str = "eager"
    backend_mode: str | None = None
    backend_options: Mapping[str, Any] | None = None
    compile: Mapping[str, Any] = field(default_factory=dict)
    strategies: tuple[str, ...] = tuple(strategies_mod.BUILTINS)
    custom_strategies: Mapping[str, Strategy] = field(default_factory=dict)
    seed: int = 0
    repeats: int = 50  #: calls timed for the steady-state figure (0: skip)
    rtol: float | None = None
    atol: float | None = None
    description: str = ""
    #: the `expect:` section, flattened (see budgets.py)
    budgets: tuple[budgets_mod.Budget, ...] = ()
    #: dotted key ("sequences.rl") -> line, for errors raised after validation
    lines: Mapping[str, int] = field(default_factory=dict, compare=False, repr=False)

    @property
    def base_dir(self) -> Path:
        return Path(self.path).parent if self.path else Path.cwd()

    def line_of(self, key: str) -> int | None:
        return self.lines.get(key)

    def error(self, key: str, message: str, remedy: str | None = None) -> ScenarioError:
        return ScenarioError(message, path=self.path, line=self.line_of(key), key=key,
                             remedy=remedy)

    def strategy(self, name: str) -> Strategy:
        return self.custom_strategies.get(name) or strategies_mod.BUILTINS[name]

    def known_strategies(self) -> list[str]:
        return [*strategies_mod.BUILTINS, *self.custom_strategies]


# --- reading --------------------------------------------------------------------------------------

def default_path() -> Path:
    from importlib.resources import files

    return Path(str(files("recompile_probe.configs").joinpath(DEFAULT_SCENARIO)))


def load(path: str | Path | None = None) -> Scenario:
    """Read and validate a scenario file (the embedded default when ``path`` is None)."""
    path = Path(path) if path is not None else default_path()
    shown = str(path)
    if path.is_dir():
        raise ScenarioError("is a directory, not a scenario file", path=shown,
                            remedy="Pass a .yaml file, e.g. configs/logprobs.yaml.")
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ScenarioError("no such file", path=shown,
                            remedy="Check the path; `recompile-probe run` with no argument runs "
                                   "the built-in logprobs scenario.") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ScenarioError(f"cannot read the file ({exc})", path=shown) from None
    return loads(text, path=shown)


def loads(text: str, path: str | None = None) -> Scenario:
    data, lines = _parse_yaml(text, path)
    return _Validator(data, lines, path).scenario()


def _parse_yaml(text: str, path: str | None) -> tuple[Any, dict[str, int]]:
    loader = yaml.SafeLoader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            raise ScenarioError("the file is empty", path=path,
                                remedy="A scenario needs at least `target:` and `sequences:`.")
        lines: dict[str, int] = {}
        _index_lines(node, "", lines, path)
        data = loader.construct_document(node)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        problem = exc.problem or "invalid YAML"
        if exc.context and exc.context_mark is not None and exc.context_mark is not mark:
            problem += f" ({exc.context} at line {exc.context_mark.line + 1})"
        if "could not determine a constructor" in problem:
            problem = (f"YAML tag {problem.split('tag', 1)[1].strip()} is not allowed "
                       "(scenarios are read with yaml.safe_load: no python tags)")
        raise ScenarioError(problem, path=path, line=mark.line + 1 if mark else None) from None
    except yaml.YAMLError as exc:
        raise ScenarioError(f"invalid YAML ({exc})", path=path) from None
    finally:
        loader.dispose()
    return data, lines


def _index_lines(node: yaml.Node, prefix: str, lines: dict[str, int], path: str | None) -> None:
    lines.setdefault(prefix, node.start_mark.line + 1)
    if isinstance(node, yaml.MappingNode):
        seen: set[str] = set()
        for key_node, value_node in node.value:
            key = str(key_node.value)
            if key in seen:
                raise ScenarioError(f"duplicate key {key!r}", path=path,
                                    line=key_node.start_mark.line + 1, key=_join(prefix, key),
                                    remedy="YAML keeps only the last one: remove one of them.")
            seen.add(key)
            child = _join(prefix, key)
            lines[child] = key_node.start_mark.line + 1
            _index_lines(value_node, child, lines, path)
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            _index_lines(item, f"{prefix}[{i}]", lines, path)


def _join(prefix: str, key: Any) -> str:
    return f"{prefix}.{key}" if prefix else str(key)


def suggest(name: str, choices: Any) -> str | None:
    match = difflib.get_close_matches(str(name), [str(c) for c in choices], n=1, cutoff=0.6)
    return f"Did you mean {match[0]!r}?" if match else None


def _type_name(value: Any) -> str:
    return {dict: "a mapping", list: "a list", str: "a string", bool: "a boolean", int: "an integer",
            float: "a number", type(None): "nothing (null)"}.get(type(value), type(value).__name__)


# --- validation -----------------------------------------------------------------------------------

class _Validator:
    def __init__(self, data: Any, lines: dict[str, int], path: str | None) -> None:
        self.data, self.lines, self.path = data, lines, path

    def fail(self, key: str, message: str, remedy: str | None = None) -> ScenarioError:
        line = self.lines.get(key)
        probe = key
        while line is None and probe:  # fall back to the closest enclosing key with a line
            probe = re.sub(r"(\.[^.\[]*|\[\d+\])$", "", probe)
            line = self.lines.get(probe)
        return ScenarioError(message, path=self.path, line=line, key=key or None, remedy=remedy)

    def expect(self, key: str, value: Any, kind: type | tuple[type, ...], what: str) -> Any:
        # bool is an int in Python; a YAML `true` where a number belongs is a mistake.
        if isinstance(value, bool) and bool not in (kind if isinstance(kind, tuple) else (kind,)):
            raise self.fail(key, f"expected {what}, got a boolean ({value!r})")
        if not isinstance(value, kind):
            raise self.fail(key, f"expected {what}, got {_type_name(value)} ({value!r})")
        return value

    def keys(self, key: str, mapping: Mapping, allowed: tuple[str, ...]) -> None:
        for k in mapping:
            if str(k) not in allowed:
                hint = suggest(k, allowed)
                raise self.fail(_join(key, k), f"unknown key {str(k)!r}",
                                hint or f"Valid keys: {', '.join(allowed)}.")

    def scenario(self) -> Scenario:
        data = self.data
        self.expect("", data, dict, "a mapping of scenario keys (name, target, sequences, ...)")
        self.keys("", data, TOP_KEYS)
        if "target" not in data:
            raise self.fail("", "missing required key 'target'",
                            "Name a built-in (see `recompile-probe targets`), "
                            "package.module:fn or path/to/file.py:fn.")
        target = self.target(data["target"])
        custom = self.custom_strategies(data.get("custom_strategies", {}))
        known = [*strategies_mod.BUILTINS, *custom]
        builtin = BUILTIN_TARGETS.get(target)
        fields: dict[str, Any] = dict(
            name=self.name(data),
            path=self.path,
            target=target,
            description=self.expect("description", data.get("description", ""), str, "a string"),
            params=self.params(data.get("params", {}), builtin),
            sequences=self.sequences(data.get("sequences")),
            compile=self.compile(data.get("compile", {})),
            strategies=self.strategy_list(data.get("strategies"), known, custom),
            custom_strategies=custom,
            seed=self.expect("seed", data.get("seed", 0), int, "an integer"),
            repeats=self.repeats(data.get("repeats", 50)),
            lines=dict(self.lines),
        )
        fields["budgets"] = self.budgets(data.get("expect", {}), known, fields["sequences"])
        fields.update(self.backend(data.get("backend", "eager")))
        fields.update(self.tolerance(data.get("tolerance")))
        fields.update(self.inputs(data, builtin is not None))
        return Scenario(**fields)

    def name(self, data: Mapping) -> str:
        if "name" in data:
            name = self.expect("name", data["name"], str, "a string")
            if not name.strip():
                raise self.fail("name", "expected a non-empty name")
            return name
        return Path(self.path).stem if self.path else "scenario"

    def target(self, value: Any) -> str:
        target = self.expect("target", value, str, "a target name (a string)").strip()
        if ":" in target:
            where, _, attr = target.rpartition(":")
            if not where or not attr.isidentifier():
                raise self.fail("target", f"{target!r} is not of the form module:fn or file.py:fn")
            if where.endswith(".py"):
                file = Path(where) if Path(where).is_absolute() else self.base / where
                if not file.is_file():
                    raise self.fail("target", f"target file {where!r} does not exist "
                                    f"(looked for {file})",
                                    "Paths in a scenario are relative to the scenario file.")
            return target
        if target not in BUILTIN_TARGETS:
            raise self.fail("target", f"unknown built-in target {target!r}",
                            suggest(target, BUILTIN_TARGETS) or
                            f"Built-ins: {', '.join(BUILTIN_TARGETS)}; a user callable is written "
                            "package.module:fn or path/to/file.py:fn.")
        return target

    @property
    def base(self) -> Path:
        return Path(self.path).parent if self.path else Path.cwd()

    def params(self, value: Any, builtin: Any) -> dict[str, Any]:
        params = self.expect("params", value, dict, "a mapping of target parameters")
        if builtin is None:
            if params:
                raise self.fail("params", "params are for built-in targets; a user callable takes "
                                "its arguments from `inputs` or `factory`")
            return {}
        self.keys("params", params, tuple(builtin.params))
        out = dict(builtin.params)
        for key, val in params.items():
            default = builtin.params[key]
            self.expect(f"params.{key}", val, type(default), f"{_type_name(default)}")
            if isinstance(val, int) and val < 1:
                raise self.fail(f"params.{key}", f"expected a positive integer, got {val}")
            out[key] = val
        return out

    def sequences(self, value: Any) -> dict[str, tuple[int, ...]]:
        if value is None:
            raise self.fail("sequences" if "sequences" in self.data else "",
                            "missing required key 'sequences'",
                            "e.g. sequences: {rl: [1, 2, 8]}")
        if isinstance(value, list):  # one unnamed sequence
            value = {"sequence": value}
            self.lines.update({k.replace("sequences", "sequences.sequence", 1): v
                               for k, v in list(self.lines.items()) if k.startswith("sequences[")})
        self.expect("sequences", value, dict, "a mapping of name -> list of batch sizes")
        if not value:
            raise self.fail("sequences", "expected at least one sequence")
        out = {}
        for name, sizes in value.items():
            key = f"sequences.{name}"
            out[str(name)] = self.batch_sizes(key, sizes)
        return out

    def batch_sizes(self, key: str, sizes: Any) -> tuple[int, ...]:
        self.expect(key, sizes, list, "a list of batch sizes, e.g. [1, 2, 8]")
        if not sizes:
            raise self.fail(key, "expected a non-empty list of batch sizes")
        for i, size in enumerate(sizes):
            self.expect(f"{key}[{i}]", size, int, "a batch size (a non-negative integer)")
            if size < 0:
                raise self.fail(f"{key}[{i}]", f"batch sizes cannot be negative, got {size}")
        return tuple(sizes)

    def backend(self, value: Any) -> dict[str, Any]:
        if isinstance(value, dict):
            self.keys("backend", value, BACKEND_KEYS)
            if "name" not in value:
                raise self.fail("backend", "missing 'name' (eager, aot_eager or inductor)")
            name = value["name"]
            key = "backend.name"
        else:
            name, key = value, "backend"
        self.expect(key, name, str, "a backend name")
        if name not in BACKENDS:
            raise self.fail(key, f"unknown backend {name!r}", suggest(name, BACKENDS) or
                            f"Backends: {', '.join(BACKENDS)}.")
        mode = options = None
        if isinstance(value, dict):
            mode = value.get("mode")
            if mode is not None:
                self.expect("backend.mode", mode, str, "an inductor mode name")
            options = value.get("options")
            if options is not None:
                self.expect("backend.options", options, dict, "a mapping of inductor options")
            if name != "inductor" and (mode or options):
                raise self.fail("backend", "mode and options apply to the inductor backend only")
        return {"backend": name, "backend_mode": mode, "backend_options": options}

    def compile(self, value: Any) -> dict[str, Any]:
        self.expect("compile", value, dict, "a mapping of torch.compile keyword arguments")
        for key in value:
            if key in ("dynamic", "backend"):
                raise self.fail(f"compile.{key}", f"{key!r} is set by each strategy and by "
                                "`backend:`, not by `compile:`",
                                "Choose strategies (e.g. dynamic_true) or define one in "
                                "custom_strategies.")
        self.keys("compile", value, COMPILE_KEYS)
        if "fullgraph" in value:
            self.expect("compile.fullgraph", value["fullgraph"], bool, "true or false")
        if "recompile_limit" in value:
            self.expect("compile.recompile_limit", value["recompile_limit"], int, "an integer")
        return dict(value)

    def budgets(self, value: Any, known: list[str],
                sequences: Mapping[str, Any]) -> tuple[budgets_mod.Budget, ...]:
        """expect: {STRATEGY|"*": {BUDGET: limit, SEQUENCE|"*": {BUDGET: limit}}}"""
        self.expect("expect", value, dict, 'a mapping of strategy (or "*") -> budgets')
        out: list[budgets_mod.Budget] = []
        for strategy, spec in value.items():
            key = f"expect.{strategy}"
            strategy = str(strategy)
            if strategy != budgets_mod.ANY and strategy not in known:
                raise self.fail(key, f"unknown strategy {strategy!r}", suggest(strategy, known) or
                                'Budgets apply to a strategy name or "*" (all).')
            self.expect(key, spec, dict, "a mapping of budgets, e.g. {max_recompiles: 0}")
            for name, sub in spec.items():
                name = str(name)
                if name in budgets_mod.KEYS:
                    out.append(self.budget(f"{key}.{name}", strategy, budgets_mod.ANY, name, sub))
                elif name == budgets_mod.ANY or name in sequences:
                    skey = f"{key}.{name}"
                    self.expect(skey, sub, dict, "a mapping of budgets")
                    for bname, limit in sub.items():
                        bname = str(bname)
                        if bname not in budgets_mod.KEYS:
                            raise self.fail(f"{skey}.{bname}", f"unknown budget {bname!r}",
                                            suggest(bname, budgets_mod.KEYS) or
                                            f"Budgets: {', '.join(budgets_mod.KEYS)}.")
                        out.append(self.budget(f"{skey}.{bname}", strategy, name, bname, limit))
                else:
                    choices = [*budgets_mod.KEYS, *sequences]
                    raise self.fail(f"{key}.{name}", f"{name!r} is neither a budget nor a "
                                    "sequence of this scenario", suggest(name, choices) or
                                    f"Budgets: {', '.join(budgets_mod.KEYS)}; sequences: "
                                    f"{', '.join(sequences)}.")
        return tuple(out)

    def budget(self, key: str, strategy: str, sequence: str, name: str,
               limit: Any) -> budgets_mod.Budget:
        if name in budgets_mod.MAX_KEYS:
            self.expect(key, limit, int, "a non-negative integer")
            if limit < 0:
                raise self.fail(key, f"expected a non-negative integer, got {limit}")
        elif name == "outputs_match":
            self.expect(key, limit, bool, "true or false")
        else:
            from .model import STATUSES

            self.expect(key, limit, str, f"one of {', '.join(STATUSES)}")
            if limit not in STATUSES:
                raise self.fail(key, f"unknown status {limit!r}", suggest(limit, STATUSES) or
                                f"Statuses: {', '.join(STATUSES)}.")
        line = self.lines.get(key)
        source = f"{self.path or '<scenario>'}:{line}" if line else self.path
        return budgets_mod.Budget(strategy, sequence, name, limit, source)

    def repeats(self, value: Any) -> int:
        self.expect("repeats", value, int, "an integer")
        if value < 0:
            raise self.fail("repeats", f"expected 0 or more, got {value}")
        return value

    def tolerance(self, value: Any) -> dict[str, Any]:
        if value is None:
            return {}
        self.expect("tolerance", value, dict, "a mapping with rtol and atol")
        self.keys("tolerance", value, ("rtol", "atol"))
        if set(value) != {"rtol", "atol"}:
            raise self.fail("tolerance", "set both rtol and atol (torch.testing.assert_close)")
        for k in value:
            self.expect(f"tolerance.{k}", value[k], (int, float), "a number")
        return {"rtol": float(value["rtol"]), "atol": float(value["atol"])}

    def strategy_list(self, value: Any, known: list[str], custom: Mapping) -> tuple[str, ...]:
        if value is None:
            return (*strategies_mod.BUILTINS, *custom)
        if isinstance(value, str):
            value = [value]
        self.expect("strategies", value, list, "a list of strategy names")
        if not value:
            raise self.fail("strategies", "expected at least one strategy")
        for i, name in enumerate(value):
            self.expect(f"strategies[{i}]", name, str, "a strategy name")

        def unknown(i: int, name: str) -> ScenarioError:
            return self.fail(f"strategies[{i}]", f"unknown strategy {name!r}",
                             suggest(name, known) or f"Strategies: {', '.join(known)}.")

        return choose_strategies(value, known, unknown)

    def custom_strategies(self, value: Any) -> dict[str, Strategy]:
        self.expect("custom_strategies", value, dict, "a mapping of name -> strategy fields")
        out: dict[str, Strategy] = {}
        for name, spec in value.items():
            key = f"custom_strategies.{name}"
            name = str(name)
            if name in strategies_mod.BUILTINS:
                raise self.fail(key, f"{name!r} is a built-in strategy",
                                "Give your strategy its own name and `extends: " + name + "`.")
            self.expect(key, spec, dict, "a mapping of strategy fields")
            self.keys(key, spec, strategies_mod.CUSTOM_KEYS)
            if "extends" in spec:
                known = [*strategies_mod.BUILTINS, *out]
                if spec["extends"] not in known:
                    raise self.fail(f"{key}.extends", f"unknown strategy {spec['extends']!r}",
                                    suggest(spec["extends"], known))
            if "dynamic" in spec and spec["dynamic"] is not None:
                self.expect(f"{key}.dynamic", spec["dynamic"], bool, "true, false or null")
            if spec.get("mark") is not None and spec["mark"] not in MARK_KINDS:
                raise self.fail(f"{key}.mark", f"unknown mark {spec['mark']!r}",
                                suggest(spec["mark"], MARK_KINDS) or
                                f"Marks: {', '.join(MARK_KINDS)}.")
            for sub in ("mark_options", "config", "compile"):
                if sub in spec:
                    self.expect(f"{key}.{sub}", spec[sub], dict, "a mapping")
            for dotted in spec.get("config", {}):
                if not str(dotted).startswith("torch.") or "." not in str(dotted)[6:]:
                    raise self.fail(f"{key}.config.{dotted}", "config keys are dotted torch "
                                    "attributes, e.g. torch._dynamo.config.recompile_limit")
            for sub in ("description", "stance"):
                if spec.get(sub) is not None:
                    self.expect(f"{key}.{sub}", spec[sub], str, "a string")
            out[name] = strategies_mod.custom(name, spec, {**strategies_mod.BUILTINS, **out})
        return out

    def inputs(self, data: Mapping, builtin: bool) -> dict[str, Any]:
        has_inputs, has_factory = "inputs" in data, "factory" in data
        if builtin:
            for key in ("inputs", "factory", "batch_dims"):
                if key in data:
                    raise self.fail(key, f"built-in targets make their own inputs; {key!r} is for "
                                    "user callables", "Use `params:` to size a built-in target.")
            return {}
        if has_inputs == has_factory:
            raise self.fail("inputs" if has_inputs else "target",
                            "a user callable needs exactly one of 'inputs' or 'factory'",
                            "inputs: one tensor spec or value per positional argument; factory: "
                            "file.py:make_inputs returning a tuple for one batch size.")
        if has_factory:
            factory = self.expect("factory", data["factory"], str, "file.py:fn or module:fn")
            where, _, attr = factory.rpartition(":")
            if not where or not attr.isidentifier():
                raise self.fail("factory", f"{factory!r} is not of the form file.py:fn or module:fn")
            if where.endswith(".py") and not (self.base / where).is_file() \
                    and not Path(where).is_file():
                raise self.fail("factory", f"factory file {where!r} does not exist",
                                "Paths in a scenario are relative to the scenario file.")
            if "batch_dims" not in data:
                raise self.fail("factory", "a factory needs 'batch_dims' (argument index -> dims "
                                "that follow the batch size)", "e.g. batch_dims: {0: [0], 1: [0]}")
            return {"factory": factory, "batch_dims": self.batch_dims(data["batch_dims"])}
        if "batch_dims" in data:
            raise self.fail("batch_dims", "with `inputs`, batch dims come from the B in each shape")
        specs = self.expect("inputs", data["inputs"], list, "a list with one entry per argument")
        if not specs:
            raise self.fail("inputs", "expected at least one argument")
        parsed = tuple(self.input(f"inputs[{i}]", spec) for i, spec in enumerate(specs))
        dims = {i: s.batch_dims for i, s in enumerate(parsed)
                if isinstance(s, TensorSpec) and s.batch_dims}
        if not dims:
            raise self.fail("inputs", f"no tensor has a {BATCH_SYMBOL!r} dim, so batch sizes "
                            "change nothing", f"Write {BATCH_SYMBOL} in a shape, e.g. [B, 4096].")
        return {"inputs": parsed, "batch_dims": dims}

    def batch_dims(self, value: Any) -> dict[int, tuple[int, ...]]:
        self.expect("batch_dims", value, dict, "a mapping of argument index -> list of dims")
        out = {}
        for index, dims in value.items():
            key = f"batch_dims.{index}"
            self.expect(key, index, int, "an argument index (an integer)")
            if index < 0:
                raise self.fail(key, f"argument index cannot be negative, got {index}")
            if isinstance(dims, int) and not isinstance(dims, bool):
                dims = [dims]
            self.expect(key, dims, list, "a list of dims")
            for j, d in enumerate(dims):
                self.expect(f"{key}[{j}]", d, int, "a dim index")
            out[index] = tuple(dims)
        # {} is valid: the batch need not be a tensor dim (e.g. a list of B per-request tensors,
        # guarded as len(L['chunks']) == B). The run goes ahead; mark strategies mark nothing.
        return out

    def input(self, key: str, spec: Any) -> TensorSpec | Value:
        if not isinstance(spec, dict):
            return Value(spec)
        if set(spec) == {"value"}:  # explicit plain value, e.g. a dict argument
            return Value(spec["value"])
        self.keys(key, spec, TENSOR_KEYS)
        if "shape" not in spec:
            raise self.fail(key, "a tensor spec needs 'shape', e.g. {shape: [B, 4096]}",
                            "For a plain mapping argument write {value: {...}}.")
        shape = self.expect(f"{key}.shape", spec["shape"], list, "a list of dims")
        for j, dim in enumerate(shape):
            dkey = f"{key}.shape[{j}]"
            if isinstance(dim, str):
                if dim != BATCH_SYMBOL:
                    raise self.fail(dkey, f"unknown dim symbol {dim!r}",
                                    f"Dims are integers or {BATCH_SYMBOL} (the batch size).")
            else:
                self.expect(dkey, dim, int, f"an integer or {BATCH_SYMBOL}")
                if dim < 0:
                    raise self.fail(dkey, f"dims cannot be negative, got {dim}")
        fields: dict[str, Any] = {"shape": tuple(shape)}
        if "dtype" in spec:
            dtype = self.expect(f"{key}.dtype", spec["dtype"], str, "a dtype name")
            dtype = dtype.removeprefix("torch.")
            if dtype not in DTYPES:
                raise self.fail(f"{key}.dtype", f"unknown dtype {spec['dtype']!r}",
                                suggest(dtype, DTYPES) or f"dtypes: {', '.join(DTYPES)}.")
            fields["dtype"] = dtype
        if "device" in spec:
            fields["device"] = self.expect(f"{key}.device", spec["device"], str, "a device name")
        if "fill" in spec:
            fields.update(self.fill(f"{key}.fill", spec["fill"]))
        for k in ("low", "high"):
            if k in spec:
                fields[k] = self.expect(f"{key}.{k}", spec[k], int, "an integer")
        if "value" in spec:
            fields["value"] = self.expect(f"{key}.value", spec["value"], (int, float, bool),
                                          "a number")
        if "requires_grad" in spec:
            fields["requires_grad"] = self.expect(f"{key}.requires_grad", spec["requires_grad"],
                                                  bool, "true or false")
        tensor = TensorSpec(**fields)
        if tensor.fill == "randint" and tensor.low >= tensor.high:
            raise self.fail(key, f"randint needs low < high, got low={tensor.low}, "
                            f"high={tensor.high}")
        return tensor

    def fill(self, key: str, value: Any) -> dict[str, Any]:
        self.expect(key, value, str, f"one of {', '.join(FILLS)}")
        match = re.fullmatch(r"\s*(\w+)\s*(?:\(([^)]*)\))?\s*", value)
        name = match.group(1) if match else value
        if name not in FILLS:
            raise self.fail(key, f"unknown fill {value!r}", suggest(name, FILLS) or
                            f"Fills: {', '.join(FILLS)}.")
        out: dict[str, Any] = {"fill": name}
        args = match.group(2) if match else None
        if args is not None:
            try:
                nums = [float(a) if "." in a else int(a) for a in args.split(",") if a.strip()]
            except ValueError:
                raise self.fail(key, f"cannot read the numbers in {value!r}") from None
            if name == "randint" and len(nums) == 2 and all(isinstance(n, int) for n in nums):
                out.update(low=nums[0], high=nums[1])
            elif name == "full" and len(nums) == 1:
                out["value"] = nums[0]
            else:
                raise self.fail(key, f"{name} takes no such arguments: {value!r}",
                                "Write randint(low, high), full(value), or a bare fill name.")
        return out


def choose_strategies(names: list[str], known: list[str],
                      unknown: Callable[[int, str], Exception]) -> tuple[str, ...]:
    """Names in order, duplicates dropped, "all" expanded; ``unknown`` makes the error to raise."""
    chosen: list[str] = []
    for i, name in enumerate(names):
        if name == "all":
            chosen.extend(n for n in known if n not in chosen)
        elif name not in known:
            raise unknown(i, name)
        elif name not in chosen:
            chosen.append(name)
    return tuple(chosen)


def with_overrides(
    scenario: Scenario,
    *,
    strategies: list[str] | None = None,
    sequence: list[int] | None = None,
    backend: str | None = None,
) -> Scenario:
    """Apply command-line overrides, validated like the file itself."""
    changes: dict[str, Any] = {}
    if strategies is not None:
        known = scenario.known_strategies()

        def unknown(i: int, name: str) -> ScenarioError:
            return ScenarioError(f"unknown strategy {name!r}", key="--strategies",
                                 path=scenario.path, remedy=suggest(name, known) or
                                 f"Strategies: {', '.join(known)}.")

        chosen = choose_strategies(strategies, known, unknown)
        if not chosen:
            raise ScenarioError("no strategy given", key="--strategies", path=scenario.path)
        changes["strategies"] = chosen
    if sequence is not None:
        if not sequence or any(b < 0 for b in sequence):
            raise ScenarioError("expected a comma-separated list of non-negative batch sizes",
                                key="--sequence", path=scenario.path)
        changes["sequences"] = {"cli": tuple(sequence)}
    if backend is not None:
        if backend not in BACKENDS:
            raise ScenarioError(f"unknown backend {backend!r}", key="--backend", path=scenario.path,
                                remedy=suggest(backend, BACKENDS) or f"Backends: {', '.join(BACKENDS)}.")
        changes["backend"] = backend
        if backend != "inductor":
            changes.update(backend_mode=None, backend_options=None)
    return replace(scenario, **changes) if changes else scenario
