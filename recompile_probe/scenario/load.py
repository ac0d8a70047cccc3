"""Scenario YAML -> a validated, frozen ``Scenario``.

Everything is checked before anything runs, and every error names the file, the line, the key,
what was expected and (for a misspelt key, strategy, target, dtype, ...) the closest valid name.
Keys, their types and their words come from keys.py. No torch import.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from ..errors import ScenarioError, did_you_mean, type_name
from ..sizes import paths as sizes_paths
from ..sizes import points as sizes_points
from ..sizes.points import BATCH, Point
from ..strategies.builtins import BUILTINS, DEFAULT_STRATEGIES, RANK_BUILTINS
from ..torch_compat.files import compile_keywords
from . import budgets as budgets_mod
from .builtin_targets import BUILTIN_TARGETS
from .context import Context
from .inputs import parse_inputs, spec_refs
from .keys import (
    BACKEND_KEYS,
    BACKENDS,
    BY_RANK,
    COMPILE_KEYS,
    DEFAULT_PG_TIMEOUT_S,
    DISTRIBUTED_KEYS,
    RANK_KEYS,
    TOLERANCE_KEYS,
    TOP_KEYS,
)
from .model import Scenario, default_path
from .overrides import choose_strategies
from .strategies import parse_custom
from .yaml_lines import parse as parse_yaml

# --- reading --------------------------------------------------------------------------------------


def load(path: str | Path | None = None) -> Scenario:
    """Read and validate a scenario file (the embedded default when ``path`` is None)."""
    path = Path(path) if path is not None else default_path()
    shown = str(path)
    if path.is_dir():
        raise ScenarioError(
            "is a directory, not a scenario file",
            path=shown,
            remedy="Pass a .yaml file, e.g. configs/logprobs.yaml.",
        )
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ScenarioError(
            "no such file",
            path=shown,
            remedy="Check the path; `recompile-probe run` with no argument runs "
            "the built-in logprobs scenario.",
        ) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ScenarioError(f"cannot read the file ({exc})", path=shown) from None
    return loads(text, path=shown)


def loads(text: str, path: str | None = None) -> Scenario:
    data, lines = parse_yaml(text, path)
    scenario = _Validator(data, lines, path).scenario()
    return dataclasses.replace(scenario, sha256=hashlib.sha256(text.encode("utf-8")).hexdigest())


# --- validation -----------------------------------------------------------------------------------


class _Validator(Context):
    """The top-level keys; each part is parsed next to what it builds (see context.py)."""

    def __init__(self, data: Any, lines: dict[str, int], path: str | None) -> None:
        super().__init__(path, lines)
        self.data = data

    def sizes(self, call: Callable[[], Any]) -> Any:
        """Run a sizes parser, turning its SizeError into this file's ScenarioError."""
        try:
            return call()
        except sizes_points.SizeError as exc:
            raise self.fail(exc.key, exc.message, exc.remedy) from None

    def scenario(self) -> Scenario:
        data = self.data
        self.expect("", data, dict, "a mapping of scenario keys (name, target, sequences, ...)")
        self.keys("", data, TOP_KEYS)
        if "target" not in data:
            raise self.fail(
                "",
                "missing required key 'target'",
                "Name a built-in (see `recompile-probe targets`), "
                "package.module:fn or path/to/file.py:fn.",
            )
        target = self.target(data["target"])
        builtin = BUILTIN_TARGETS.get(target)
        fields: dict[str, Any] = self.inputs(data, builtin is not None)
        symbols = fields["symbols"]
        custom = parse_custom(self, data.get("custom_strategies", {}), symbols)
        for name, strategy in custom.items():
            if strategy.driver_options and not data.get("driver"):
                raise self.fail(
                    f"custom_strategies.{name}.driver_options",
                    "driver_options are passed to the scenario's driver, and it has none",
                    "Add `driver: file.py:fn` (run(fn, **sizes, **options)), or drop them.",
                )
            clash = [k for k in strategy.driver_options if k in symbols]
            if clash:
                raise self.fail(
                    f"custom_strategies.{name}.driver_options.{clash[0]}",
                    f"{clash[0]!r} is a size symbol: the driver already gets it from each point",
                    "Give the option another name.",
                )
        ranks = self.ranks(data)
        known = list(dict.fromkeys([*BUILTINS, *(RANK_BUILTINS if ranks else ()), *custom]))
        points, rank_points = self.sequences(data.get("sequences"), symbols, ranks)
        fields.update(
            name=self.name(data),
            path=self.path,
            target=target,
            description=self.typed(
                "description", data.get("description", ""), TOP_KEYS["description"]
            ),
            params=self.params(data.get("params", {}), builtin),
            points=points,
            rank_points=rank_points,
            ranks=ranks,
            **self.distributed(data, ranks),
            compile=self.compile(data.get("compile", {})),
            strategies=self.strategy_list(data.get("strategies"), known, custom, ranks),
            custom_strategies=custom,
            seed=self.typed("seed", data.get("seed", 0), TOP_KEYS["seed"]),
            repeats=self.repeats(data.get("repeats", 50)),
            lines=dict(self.lines),
        )
        fields["budgets"] = budgets_mod.parse(self, data.get("expect", {}), known, fields["points"])
        for budget in fields["budgets"]:
            if budget.key in RANK_KEYS and not ranks:
                raise self.fail(
                    next(
                        (
                            k
                            for k in self.lines
                            if k.startswith("expect.") and k.endswith(budget.key)
                        ),
                        "expect",
                    ),
                    f"{budget.key} compares the ranks of a distributed scenario, and this one "
                    "has no `ranks:`",
                    "Add `ranks: 2` (and per-rank sizes with `by_rank:`), or drop the budget.",
                )
        fields.update(self.backend(data.get("backend", "eager")))
        fields.update(self.tolerance(data.get("tolerance")))
        return Scenario(**fields)

    def name(self, data: Mapping) -> str:
        if "name" in data:
            name = self.typed("name", data["name"], TOP_KEYS["name"])
            if not name.strip():
                raise self.fail("name", "expected a non-empty name")
            return name
        return Path(self.path).stem if self.path else "scenario"

    def target(self, value: Any) -> str:
        target = self.typed("target", value, TOP_KEYS["target"]).strip()
        if ":" in target:
            where, _, attr = target.rpartition(":")
            if not where or not attr.isidentifier():
                raise self.fail("target", f"{target!r} is not of the form module:fn or file.py:fn")
            if where.endswith(".py"):
                file = Path(where) if Path(where).is_absolute() else self.base / where
                if not file.is_file():
                    raise self.fail(
                        "target",
                        f"target file {where!r} does not exist (looked for {file})",
                        "Paths in a scenario are relative to the scenario file.",
                    )
            return target
        if target not in BUILTIN_TARGETS:
            raise self.fail(
                "target",
                f"unknown built-in target {target!r}",
                did_you_mean(target, BUILTIN_TARGETS)
                or f"Built-ins: {', '.join(BUILTIN_TARGETS)}; a user callable is written "
                "package.module:fn or path/to/file.py:fn.",
            )
        return target

    @property
    def base(self) -> Path:
        return Path(self.path).parent if self.path else Path.cwd()

    def params(self, value: Any, builtin: Any) -> dict[str, Any]:
        params = self.typed("params", value, TOP_KEYS["params"])
        if builtin is None:
            if params:
                raise self.fail(
                    "params",
                    "params are for built-in targets; a user callable takes "
                    "its arguments from `inputs` or `factory`",
                )
            return {}
        self.keys("params", params, builtin.params)
        out = dict(builtin.params)
        for key, val in params.items():
            default = builtin.params[key]
            self.expect(f"params.{key}", val, type(default), f"{type_name(default)}")
            if isinstance(val, int) and val < 1:
                raise self.fail(f"params.{key}", f"expected a positive integer, got {val}")
            out[key] = val
        return out

    def ranks(self, data: Mapping) -> int | None:
        if "ranks" not in data:
            return None
        value = self.typed("ranks", data["ranks"], TOP_KEYS["ranks"])
        if value < 2:
            raise self.fail(
                "ranks",
                f"expected 2 or more ranks, got {value}",
                "One rank is a single process: drop `ranks:` to run the scenario in one.",
            )
        return int(value)

    def distributed(self, data: Mapping, ranks: int | None) -> dict[str, Any]:
        value = data.get("distributed")
        if value is None:
            return {"distributed_backend": "gloo", "distributed_timeout_s": DEFAULT_PG_TIMEOUT_S}
        self.typed("distributed", value, TOP_KEYS["distributed"])
        if not ranks:
            raise self.fail(
                "distributed",
                "`distributed:` sets up the process group of a scenario with `ranks:`, and this "
                "one has none",
                "Add `ranks: 2`, or drop `distributed:`.",
            )
        self.keys("distributed", value, DISTRIBUTED_KEYS)
        backend = self.typed(
            "distributed.backend", value.get("backend", "gloo"), DISTRIBUTED_KEYS["backend"]
        ).strip()
        if not backend:
            raise self.fail("distributed.backend", "expected a backend name, e.g. gloo")
        timeout = self.typed(
            "distributed.timeout_s",
            value.get("timeout_s", DEFAULT_PG_TIMEOUT_S),
            DISTRIBUTED_KEYS["timeout_s"],
        )
        if timeout <= 0:
            raise self.fail("distributed.timeout_s", f"expected a positive number, got {timeout}")
        return {"distributed_backend": backend, "distributed_timeout_s": float(timeout)}

    def by_rank(
        self, key: str, value: Any, symbols: tuple[str, ...], ranks: int | None
    ) -> tuple[tuple[Point, ...], ...]:
        """A sequence's ``by_rank:`` form: rank -> that rank's sizes, for every rank."""
        if not ranks:
            raise self.fail(
                f"{key}.{BY_RANK}",
                "`by_rank:` gives each rank its own sizes, and this scenario has no `ranks:`",
                "Add `ranks: 2` (one process per rank), or write the sequence as a plain list.",
            )
        if set(value) != {BY_RANK}:
            extra = next(str(k) for k in value if k != BY_RANK)
            raise self.fail(
                f"{key}.{extra}",
                f"unknown key {extra!r} beside `by_rank:`",
                "A per-rank sequence is {by_rank: {0: [...], 1: [...]}} and nothing else.",
            )
        per_rank = value[BY_RANK]
        self.expect(f"{key}.{BY_RANK}", per_rank, dict, "a mapping of rank -> sizes")
        given: dict[int, Any] = {}
        for rank, sizes in per_rank.items():
            number = (
                rank
                if isinstance(rank, int) and not isinstance(rank, bool)
                else int(rank)
                if isinstance(rank, str) and rank.isdigit()
                else None
            )
            if number is None or not 0 <= number < ranks:
                raise self.fail(
                    f"{key}.{BY_RANK}.{rank}",
                    f"{rank!r} is not a rank of this scenario (ranks: {ranks}, so 0 to "
                    f"{ranks - 1})",
                )
            given[number] = sizes
        missing = [r for r in range(ranks) if r not in given]
        if missing:
            raise self.fail(
                f"{key}.{BY_RANK}",
                f"no sizes for rank{'s' if len(missing) > 1 else ''} "
                f"{', '.join(map(str, missing))}",
                f"Give every rank from 0 to {ranks - 1} its sizes (ranks: {ranks}).",
            )
        return tuple(
            self.sizes(
                functools.partial(
                    sizes_points.parse_sequence, f"{key}.{BY_RANK}.{r}", given[r], symbols
                )
            )
            for r in range(ranks)
        )

    def sequences(
        self, value: Any, symbols: tuple[str, ...], ranks: int | None = None
    ) -> tuple[dict[str, tuple[Point, ...]], dict[str, tuple[tuple[Point, ...], ...]]]:
        """name -> points (rank 0's for a `by_rank:` sequence), and name -> every rank's points
        for the `by_rank:` sequences."""
        if value is None:
            raise self.fail(
                "sequences" if "sequences" in self.data else "",
                "missing required key 'sequences'",
                "e.g. sequences: {rl: [1, 2, 8]}",
            )
        if isinstance(value, list):  # one unnamed sequence
            value = {"sequence": value}
            self.lines.update(
                {
                    k.replace("sequences", "sequences.sequence", 1): v
                    for k, v in list(self.lines.items())
                    if k.startswith("sequences[")
                }
            )
        self.expect("sequences", value, dict, TOP_KEYS["sequences"].what)
        if not value:
            raise self.fail("sequences", "expected at least one sequence")
        out: dict[str, tuple[Point, ...]] = {}
        per_rank: dict[str, tuple[tuple[Point, ...], ...]] = {}
        for name, points in value.items():
            key = f"sequences.{name}"
            if isinstance(points, dict) and BY_RANK in points:
                per_rank[str(name)] = self.by_rank(key, points, symbols, ranks)
                out[str(name)] = per_rank[str(name)][0]
                continue
            out[str(name)] = self.sizes(
                functools.partial(sizes_points.parse_sequence, key, points, symbols)
            )
        return out, per_rank

    def backend(self, value: Any) -> dict[str, Any]:
        if isinstance(value, dict):
            self.keys("backend", value, BACKEND_KEYS)
            if "name" not in value:
                raise self.fail("backend", "missing 'name' (eager, aot_eager or inductor)")
            name = value["name"]
            key = "backend.name"
        else:
            name, key = value, "backend"
        self.typed(key, name, BACKEND_KEYS["name"])
        if name not in BACKENDS:
            raise self.fail(
                key,
                f"unknown backend {name!r}",
                did_you_mean(name, BACKENDS) or f"Backends: {', '.join(BACKENDS)}.",
            )
        mode = options = None
        if isinstance(value, dict):
            mode = value.get("mode")
            if mode is not None:
                self.typed("backend.mode", mode, BACKEND_KEYS["mode"])
            options = value.get("options")
            if options is not None:
                self.typed("backend.options", options, BACKEND_KEYS["options"])
            if name != "inductor" and (mode or options):
                raise self.fail("backend", "mode and options apply to the inductor backend only")
        return {"backend": name, "backend_mode": mode, "backend_options": options}

    def compile(self, value: Any) -> dict[str, Any]:
        self.typed("compile", value, TOP_KEYS["compile"])
        for key in value:
            if key in ("dynamic", "backend"):
                raise self.fail(
                    f"compile.{key}",
                    f"{key!r} is set by each strategy and by `backend:`, not by `compile:`",
                    "Choose strategies (e.g. dynamic_true) or define one in custom_strategies.",
                )
        extra = [str(k) for k in value if str(k) not in COMPILE_KEYS]
        accepted = compile_keywords() if extra else None
        if accepted is not None:
            # every keyword the installed torch.compile takes, but those strategies set
            known = {*COMPILE_KEYS, *(k for k in accepted if k not in ("model", "dynamic"))}
            known.discard("backend")
            self.keys("compile", value, tuple(sorted(known)))
        # (torch's source unreadable: torch.compile itself rejects an unknown keyword per run)
        for key in ("fullgraph", "recompile_limit", "isolate_recompiles"):
            if key in value:
                self.typed(f"compile.{key}", value[key], COMPILE_KEYS[key])
        return dict(value)

    def repeats(self, value: Any) -> int:
        self.typed("repeats", value, TOP_KEYS["repeats"])
        if value < 0:
            raise self.fail("repeats", f"expected 0 or more, got {value}")
        return value

    def tolerance(self, value: Any) -> dict[str, Any]:
        if value is None:
            return {}
        self.typed("tolerance", value, TOP_KEYS["tolerance"])
        self.keys("tolerance", value, TOLERANCE_KEYS)
        if set(value) != set(TOLERANCE_KEYS):
            raise self.fail("tolerance", "set both rtol and atol (torch.testing.assert_close)")
        for k in value:
            self.typed(f"tolerance.{k}", value[k], TOLERANCE_KEYS[k])
        return {"rtol": float(value["rtol"]), "atol": float(value["atol"])}

    def strategy_list(
        self, value: Any, known: list[str], custom: Mapping, ranks: int | None = None
    ) -> tuple[str, ...]:
        if value is None:
            return tuple(
                dict.fromkeys([*DEFAULT_STRATEGIES, *(RANK_BUILTINS if ranks else ()), *custom])
            )
        if isinstance(value, str):
            value = [value]
        self.expect("strategies", value, list, TOP_KEYS["strategies"].what)
        if not value:
            raise self.fail("strategies", "expected at least one strategy")
        for i, name in enumerate(value):
            self.expect(f"strategies[{i}]", name, str, "a strategy name")

        def unknown(i: int, name: str) -> ScenarioError:
            if name in RANK_BUILTINS:
                return self.fail(
                    f"strategies[{i}]",
                    f"{name!r} is a strategy of distributed scenarios: it needs a process group",
                    "Add `ranks: 2` to run every strategy on two rank processes.",
                )
            return self.fail(
                f"strategies[{i}]",
                f"unknown strategy {name!r}",
                did_you_mean(name, known) or f"Strategies: {', '.join(known)}.",
            )

        return choose_strategies(value, known, unknown)

    def inputs(self, data: Mapping, builtin: bool) -> dict[str, Any]:
        """inputs / factory / driver, and the symbols and dims they define."""
        given = [k for k in ("inputs", "factory", "driver") if k in data]
        if builtin:
            for key in ("inputs", "factory", "driver", "dims", "batch_dims"):
                if key in data:
                    raise self.fail(
                        key,
                        f"built-in targets make their own inputs; {key!r} is for user callables",
                        "Use `params:` to size a built-in target.",
                    )
            return {"symbols": (BATCH,)}
        if len(given) != 1:
            raise self.fail(
                given[1] if len(given) > 1 else "target",
                "a user callable needs exactly one of 'inputs' or 'factory' (or a 'driver')",
                "inputs: one tensor spec or value per argument; factory: "
                "file.py:make_inputs returning the arguments for one point; driver: "
                "file.py:run calling the compiled target itself.",
            )
        if "batch_dims" in data and "dims" in data:
            raise self.fail("batch_dims", "give either 'dims' or 'batch_dims' (= dims: {B: ...})")
        if "inputs" in data:
            for key in ("dims", "batch_dims"):
                if key in data:
                    raise self.fail(
                        key, "with `inputs`, dims come from the symbols in each shape (B, S, ...)"
                    )
            specs = parse_inputs(self, data["inputs"])
            refs = spec_refs(specs)
            symbols = tuple(dict.fromkeys(r.symbol for r in refs))
            if not symbols:
                raise self.fail(
                    "inputs",
                    f"no tensor has a {BATCH!r} dim (or another size "
                    "symbol) in its shape, so the sequences change nothing",
                    f"Write a symbol in a shape, e.g. [{BATCH}, 4096] or [{BATCH}, S].",
                )
            return {
                "inputs": tuple(spec for _, spec in specs),
                "input_keys": tuple(key for key, _ in specs),
                "symbols": symbols,
                "dims": refs,
            }
        key = given[0]
        where = self.typed(key, data[key], TOP_KEYS[key])
        module, _, attr = where.rpartition(":")
        if not module or not attr.isidentifier():
            raise self.fail(key, f"{where!r} is not of the form file.py:fn or module:fn")
        if (
            module.endswith(".py")
            and not (self.base / module).is_file()
            and not Path(module).is_file()
        ):
            raise self.fail(
                key,
                f"{key} file {module!r} does not exist",
                "Paths in a scenario are relative to the scenario file.",
            )
        if "batch_dims" in data:
            refs = self.sizes(
                lambda: sizes_paths.parse_arg_dims("batch_dims", data["batch_dims"], BATCH)
            )
            symbols = (BATCH,)
        elif "dims" in data:
            refs = self.sizes(lambda: sizes_paths.parse_dims("dims", data["dims"], ()))
            symbols = tuple(dict.fromkeys(str(s) for s in data["dims"]))
            if not symbols:
                raise self.fail("dims", "expected at least one size symbol")
        else:
            raise self.fail(
                key,
                f"a {key} needs 'batch_dims' (argument index -> dims that follow "
                "the batch size) or 'dims' (symbol -> argument -> dims)",
                "e.g. dims: {B: {0: [0], 1: [0]}, S: {0: [1]}} or batch_dims: {0: [0], 1: [0]}",
            )
        return {key: where, "symbols": symbols, "dims": refs}
