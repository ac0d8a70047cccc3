"""Scenario YAML -> a validated, frozen ``Scenario``.

Everything is checked before anything runs, and every error names the file, the line, the key,
what was expected and (for a misspelt key, strategy, target, dtype, ...) the closest valid name.
YAML is read with ``SafeLoader`` only: python tags are refused. No torch import.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from types import MappingProxyType
from typing import Any, Callable, Mapping

import yaml

from . import budgets as budgets_mod
from . import sizes
from . import strategies as strategies_mod
from .errors import ScenarioError
from .inputs import TensorSpec, Value, parse_inputs, spec_refs
from .sizes import BATCH, DimRef, Point
from .spec import Context, join as _join, suggest, type_name as _type_name
from .strategies import Strategy
from .targets.registry import BUILTIN_TARGETS

# Key tables: key -> what it holds. The validator accepts exactly these keys and schema.py
# describes them, so a key added here appears in `recompile-probe schema scenario` too.
TOP_KEYS: Mapping[str, str] = MappingProxyType({
    "name": "Shown in reports (default: the file name).",
    "description": "What this scenario checks.",
    "target": "What is compiled: a built-in (see `recompile-probe targets`), package.module:fn "
              "or path/to/file.py:fn (relative to this file).",
    "params": "Parameters of a built-in target (see `recompile-probe targets`).",
    "inputs": "User targets: a tensor spec or a plain value per positional argument (a list) or "
              "per keyword (a mapping); a dim written as a size symbol (B, S, ...) follows it.",
    "factory": "Instead of inputs: file.py:fn or module:fn returning the arguments for one point: "
               "make_inputs(batch_size), or make_inputs(B=.., S=..) with several symbols.",
    "driver": "Instead of inputs: file.py:fn called as fn(compiled_target, **sizes) per point.",
    "dims": "With a factory or driver: size symbol -> argument (index, keyword or path such as "
            "cache.keys[*]) -> the dims that follow it.",
    "batch_dims": "With a factory or driver: argument index -> the dims that follow the batch "
                  "size (= dims: {B: ...}).",
    "sequences": "name -> the sizes at each call: a list of batch sizes, a list of points "
                 "{SYMBOL: size}, or {grid: {SYMBOL: [sizes]}}; or one unnamed list.",
    "backend": "eager, aot_eager or inductor; or {name: inductor, mode: ..., options: {...}}.",
    "compile": "Extra torch.compile keyword arguments for every strategy.",
    "strategies": "The strategies to compare, in order (\"all\": every known one); default: "
                  "every built-in and custom strategy.",
    "custom_strategies": "name -> your own strategy, from the same fields as the built-ins.",
    "seed": "Inputs are deterministic per (seed, point).",
    "repeats": "Calls timed for the steady-state µs/call (0: skip).",
    "tolerance": "For the comparison with eager (default: torch.testing.assert_close's).",
    "expect": "Budgets `check` gates on: strategy (or \"*\") -> budgets, or -> sequence (or "
              "\"*\") -> budgets.",
})
BACKENDS = ("eager", "aot_eager", "inductor")
BACKEND_KEYS: Mapping[str, str] = MappingProxyType({
    "name": "eager, aot_eager or inductor.",
    "mode": "torch.compile mode for inductor, e.g. max-autotune.",
    "options": "inductor options (torch.compile options=...).",
})
#: torch.compile kwargs a scenario may set; dynamic and backend belong to strategies and `backend`.
COMPILE_KEYS: Mapping[str, str] = MappingProxyType({
    "fullgraph": "torch.compile(fullgraph=...): a graph break is an error.",
    "mode": "torch.compile(mode=...).",
    "options": "torch.compile(options=...).",
    "recompile_limit": "torch._dynamo.config.recompile_limit for the run.",
    "disable": "torch.compile(disable=...).",
})
TOLERANCE_KEYS: Mapping[str, str] = MappingProxyType({
    "rtol": "Relative tolerance (torch.testing.assert_close).",
    "atol": "Absolute tolerance (torch.testing.assert_close).",
})
MARK_KINDS = tuple(strategies_mod.MARKS)
BATCH_SYMBOL = BATCH
DEFAULT_SCENARIO = "logprobs.yaml"

__all__ = ["Scenario", "TensorSpec", "Value", "load", "loads", "with_overrides", "suggest"]


@dataclass(frozen=True)
class Scenario:
    name: str
    path: str | None  #: the YAML file, None when built in code
    target: str
    params: Mapping[str, Any] = field(default_factory=dict)
    #: one spec per argument; None with a factory or a driver
    inputs: tuple[TensorSpec | Value, ...] | None = None
    #: what each of ``inputs`` is: a positional index, or a keyword (an `inputs:` mapping)
    input_keys: tuple[int | str, ...] = ()
    factory: str | None = None
    #: file.py:fn called as fn(compiled_target, **sizes) per point, instead of calling the target
    driver: str | None = None
    #: size symbols in scenario order; a batch-only scenario has ("B",)
    symbols: tuple[str, ...] = (BATCH,)
    #: the dims each symbol moves (from the shapes, or `dims:` / `batch_dims:`)
    dims: tuple[DimRef, ...] = ()
    #: name -> points: every symbol's size at each call
    points: Mapping[str, tuple[Point, ...]] = field(default_factory=dict)
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

    @property
    def sequences(self) -> dict[str, tuple[int, ...]]:
        """name -> the B value of each point (the first symbol's where there is no B): what
        reports call ``sequence``."""
        symbol = BATCH if BATCH in self.symbols else self.symbols[0]
        return {name: tuple(p.get(symbol) or 0 for p in points)
                for name, points in self.points.items()}

    @property
    def batch_dims(self) -> dict[int, tuple[int, ...]]:
        """Positional argument -> dims that follow B (the 0.1 view of ``dims``)."""
        out: dict[int, tuple[int, ...]] = {}
        for ref in self.dims:
            if ref.symbol == BATCH and isinstance(ref.path.head, int) and not ref.path.steps:
                out[ref.path.head] = tuple(dict.fromkeys(out.get(ref.path.head, ()) + ref.dims))
        return out

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


# --- validation -----------------------------------------------------------------------------------

class _Validator(Context):
    """The top-level keys; each part is parsed next to what it builds (see spec.py)."""

    def __init__(self, data: Any, lines: dict[str, int], path: str | None) -> None:
        super().__init__(path, lines)
        self.data = data

    def sizes(self, call: Callable[[], Any]) -> Any:
        """Run a sizes.py parser, turning its SizeError into this file's ScenarioError."""
        try:
            return call()
        except sizes.SizeError as exc:
            raise self.fail(exc.key, exc.message, exc.remedy) from None

    def scenario(self) -> Scenario:
        data = self.data
        self.expect("", data, dict, "a mapping of scenario keys (name, target, sequences, ...)")
        self.keys("", data, tuple(TOP_KEYS))
        if "target" not in data:
            raise self.fail("", "missing required key 'target'",
                            "Name a built-in (see `recompile-probe targets`), "
                            "package.module:fn or path/to/file.py:fn.")
        target = self.target(data["target"])
        builtin = BUILTIN_TARGETS.get(target)
        fields: dict[str, Any] = self.inputs(data, builtin is not None)
        symbols = fields["symbols"]
        custom = strategies_mod.parse_custom(self, data.get("custom_strategies", {}), symbols)
        known = [*strategies_mod.BUILTINS, *custom]
        fields.update(
            name=self.name(data),
            path=self.path,
            target=target,
            description=self.expect("description", data.get("description", ""), str, "a string"),
            params=self.params(data.get("params", {}), builtin),
            points=self.sequences(data.get("sequences"), symbols),
            compile=self.compile(data.get("compile", {})),
            strategies=self.strategy_list(data.get("strategies"), known, custom),
            custom_strategies=custom,
            seed=self.expect("seed", data.get("seed", 0), int, "an integer"),
            repeats=self.repeats(data.get("repeats", 50)),
            lines=dict(self.lines),
        )
        fields["budgets"] = budgets_mod.parse(self, data.get("expect", {}), known,
                                              fields["points"])
        fields.update(self.backend(data.get("backend", "eager")))
        fields.update(self.tolerance(data.get("tolerance")))
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

    def sequences(self, value: Any, symbols: tuple[str, ...]) -> dict[str, tuple[Point, ...]]:
        if value is None:
            raise self.fail("sequences" if "sequences" in self.data else "",
                            "missing required key 'sequences'",
                            "e.g. sequences: {rl: [1, 2, 8]}")
        if isinstance(value, list):  # one unnamed sequence
            value = {"sequence": value}
            self.lines.update({k.replace("sequences", "sequences.sequence", 1): v
                               for k, v in list(self.lines.items()) if k.startswith("sequences[")})
        self.expect("sequences", value, dict, "a mapping of name -> list of sizes or points")
        if not value:
            raise self.fail("sequences", "expected at least one sequence")
        return {str(name): self.sizes(lambda: sizes.parse_sequence(
            f"sequences.{name}", points, symbols, suggest)) for name, points in value.items()}

    def backend(self, value: Any) -> dict[str, Any]:
        if isinstance(value, dict):
            self.keys("backend", value, tuple(BACKEND_KEYS))
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
        self.keys("compile", value, tuple(COMPILE_KEYS))
        if "fullgraph" in value:
            self.expect("compile.fullgraph", value["fullgraph"], bool, "true or false")
        if "recompile_limit" in value:
            self.expect("compile.recompile_limit", value["recompile_limit"], int, "an integer")
        return dict(value)

    def repeats(self, value: Any) -> int:
        self.expect("repeats", value, int, "an integer")
        if value < 0:
            raise self.fail("repeats", f"expected 0 or more, got {value}")
        return value

    def tolerance(self, value: Any) -> dict[str, Any]:
        if value is None:
            return {}
        self.expect("tolerance", value, dict, "a mapping with rtol and atol")
        self.keys("tolerance", value, tuple(TOLERANCE_KEYS))
        if set(value) != set(TOLERANCE_KEYS):
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

    def inputs(self, data: Mapping, builtin: bool) -> dict[str, Any]:
        """inputs / factory / driver, and the symbols and dims they define."""
        given = [k for k in ("inputs", "factory", "driver") if k in data]
        if builtin:
            for key in ("inputs", "factory", "driver", "dims", "batch_dims"):
                if key in data:
                    raise self.fail(key, f"built-in targets make their own inputs; {key!r} is for "
                                    "user callables", "Use `params:` to size a built-in target.")
            return {"symbols": (BATCH,)}
        if len(given) != 1:
            raise self.fail(given[1] if len(given) > 1 else "target",
                            "a user callable needs exactly one of 'inputs' or 'factory' (or a "
                            "'driver')",
                            "inputs: one tensor spec or value per argument; factory: "
                            "file.py:make_inputs returning the arguments for one point; driver: "
                            "file.py:run calling the compiled target itself.")
        if "batch_dims" in data and "dims" in data:
            raise self.fail("batch_dims", "give either 'dims' or 'batch_dims' (= dims: {B: ...})")
        if "inputs" in data:
            for key in ("dims", "batch_dims"):
                if key in data:
                    raise self.fail(key, f"with `inputs`, dims come from the symbols in each "
                                    "shape (B, S, ...)")
            specs = parse_inputs(self, data["inputs"])
            refs = spec_refs(specs)
            symbols = tuple(dict.fromkeys(r.symbol for r in refs))
            if not symbols:
                raise self.fail("inputs", f"no tensor has a {BATCH!r} dim (or another size "
                                "symbol) in its shape, so the sequences change nothing",
                                f"Write a symbol in a shape, e.g. [{BATCH}, 4096] or [{BATCH}, S].")
            return {"inputs": tuple(spec for _, spec in specs),
                    "input_keys": tuple(key for key, _ in specs), "symbols": symbols,
                    "dims": refs}
        key = given[0]
        where = self.expect(key, data[key], str, "file.py:fn or module:fn")
        module, _, attr = where.rpartition(":")
        if not module or not attr.isidentifier():
            raise self.fail(key, f"{where!r} is not of the form file.py:fn or module:fn")
        if module.endswith(".py") and not (self.base / module).is_file() \
                and not Path(module).is_file():
            raise self.fail(key, f"{key} file {module!r} does not exist",
                            "Paths in a scenario are relative to the scenario file.")
        if "batch_dims" in data:
            refs = self.sizes(lambda: sizes.parse_arg_dims("batch_dims", data["batch_dims"],
                                                          BATCH))
            symbols: tuple[str, ...] = (BATCH,)
        elif "dims" in data:
            refs = self.sizes(lambda: sizes.parse_dims("dims", data["dims"], (), suggest))
            symbols = tuple(dict.fromkeys(str(s) for s in data["dims"]))
            if not symbols:
                raise self.fail("dims", "expected at least one size symbol")
        else:
            raise self.fail(key, f"a {key} needs 'batch_dims' (argument index -> dims that follow "
                            "the batch size) or 'dims' (symbol -> argument -> dims)",
                            "e.g. dims: {B: {0: [0], 1: [0]}, S: {0: [1]}} or "
                            "batch_dims: {0: [0], 1: [0]}")
        return {key: where, "symbols": symbols, "dims": refs}

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
    sequence: list[int] | str | None = None,
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
        changes["points"] = {"cli": _cli_points(scenario, sequence)}
    if backend is not None:
        if backend not in BACKENDS:
            raise ScenarioError(f"unknown backend {backend!r}", key="--backend", path=scenario.path,
                                remedy=suggest(backend, BACKENDS) or f"Backends: {', '.join(BACKENDS)}.")
        changes["backend"] = backend
        if backend != "inductor":
            changes.update(backend_mode=None, backend_options=None)
    return replace(scenario, **changes) if changes else scenario


def _cli_points(scenario: Scenario, sequence: list[int] | str) -> tuple[Point, ...]:
    """--sequence 1,2,8 (batch sizes) or --sequence "B=1,S=7; B=2,S=33" (points)."""
    value: Any = sequence
    if isinstance(sequence, list) and (not sequence or any(
            isinstance(b, int) and b < 0 for b in sequence)):
        raise ScenarioError("expected a comma-separated list of non-negative batch sizes",
                            key="--sequence", path=scenario.path)
    if isinstance(sequence, str):
        try:
            value = [{k.strip(): int(v) for k, v in (kv.split("=", 1) for kv in part.split(","))}
                     for part in sequence.split(";") if part.strip()]
        except ValueError:
            raise ScenarioError(f"cannot read the points in {sequence!r}", key="--sequence",
                                path=scenario.path,
                                remedy='Write SYMBOL=size pairs, points separated by ";", '
                                       'e.g. --sequence "B=1,S=7; B=2,S=33".') from None
    try:
        return sizes.parse_sequence("--sequence", value, scenario.symbols, suggest)
    except sizes.SizeError as exc:
        raise ScenarioError(exc.message, key="--sequence", path=scenario.path,
                            remedy=exc.remedy) from None
