"""Scenario YAML -> a validated, frozen ``Scenario``.

Everything is checked before anything runs, and every error names the file, the line, the key,
what was expected and (for a misspelt key, strategy, target, dtype, ...) the closest valid name.
Keys, their types, bounds and words come from keys.py; this module reads the top-level keys and
hands each part to the parser beside it that builds it. No torch import.
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..errors import ScenarioError, did_you_mean, type_name
from ..strategies.advice import Definitions
from ..strategies.builtins import BUILTINS, RANK_BUILTINS
from . import budgets, sequences
from .backend import parse_backend, parse_compile
from .builtin_targets import BUILTIN_TARGETS, BuiltinTarget
from .context import Context
from .distributed import parse_group, parse_ranks
from .inputs import parse_arguments
from .keys import TOLERANCE_KEYS, TOP_KEYS, Key
from .model import Scenario, default_path, definitions
from .strategies import parse_custom, parse_list
from .yaml_lines import parse as parse_yaml


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
    scenario = _scenario(Context(path, lines), data)
    return dataclasses.replace(scenario, sha256=hashlib.sha256(text.encode("utf-8")).hexdigest())


def _scenario(ctx: Context, data: Any) -> Scenario:
    ctx.expect("", data, dict, "a mapping of scenario keys (name, target, sequences, ...)")
    ctx.keys("", data, TOP_KEYS)
    if "target" not in data:
        raise ctx.fail(
            "",
            "missing required key 'target'",
            "Name a built-in (see `recompile-probe targets`), "
            "package.module:fn or path/to/file.py:fn.",
        )
    target = _target(ctx, data["target"])
    builtin = BUILTIN_TARGETS.get(target)
    fields: dict[str, Any] = parse_arguments(ctx, data, builtin is not None)
    symbols = fields["symbols"]
    custom = parse_custom(ctx, data.get("custom_strategies", {}), symbols, bool(data.get("driver")))
    ranks = parse_ranks(ctx, data)
    known = list(dict.fromkeys([*BUILTINS, *(RANK_BUILTINS if ranks else ()), *custom]))
    points, rank_points = sequences.parse(ctx, data, symbols, ranks)
    fields.update(
        name=_name(ctx, data),
        path=ctx.path,
        target=target,
        description=ctx.typed("description", data.get("description", ""), TOP_KEYS["description"]),
        params=_params(ctx, data.get("params", {}), builtin),
        points=points,
        rank_points=rank_points,
        ranks=ranks,
        **parse_group(ctx, data, ranks),
        compile=parse_compile(ctx, data.get("compile", {})),
        strategies=parse_list(ctx, data.get("strategies"), known, custom, ranks),
        custom_strategies=custom,
        seed=ctx.typed("seed", data.get("seed", 0), TOP_KEYS["seed"]),
        repeats=ctx.typed("repeats", data.get("repeats", 50), TOP_KEYS["repeats"]),
        lines=dict(ctx.lines),
    )
    fields["budgets"] = budgets.parse(ctx, data.get("expect", {}), known, points, ranks, symbols)
    if "coverage" in data:
        fields["coverage"] = budgets.ranges_of(ctx, "coverage", data["coverage"], symbols)
    fields.update(parse_backend(ctx, data.get("backend", "eager")))
    fields.update(_tolerance(ctx, data.get("tolerance")))
    return Scenario(**fields)


def _name(ctx: Context, data: Mapping) -> str:
    if "name" in data:
        name = ctx.typed("name", data["name"], TOP_KEYS["name"])
        if not name.strip():
            raise ctx.fail("name", "expected a non-empty name")
        return name
    return Path(ctx.path).stem if ctx.path else "scenario"


def _target(ctx: Context, value: Any) -> str:
    target = ctx.typed("target", value, TOP_KEYS["target"]).strip()
    if ":" in target:
        where, _, attr = target.rpartition(":")
        if not where or not attr.isidentifier():
            raise ctx.fail("target", f"{target!r} is not of the form module:fn or file.py:fn")
        if where.endswith(".py"):
            file = Path(where) if Path(where).is_absolute() else ctx.base / where
            if not file.is_file():
                raise ctx.fail(
                    "target",
                    f"target file {where!r} does not exist (looked for {file})",
                    "Paths in a scenario are relative to the scenario file.",
                )
        return target
    if target not in BUILTIN_TARGETS:
        raise ctx.fail(
            "target",
            f"unknown built-in target {target!r}",
            did_you_mean(target, BUILTIN_TARGETS)
            or f"Built-ins: {', '.join(BUILTIN_TARGETS)}; a user callable is written "
            "package.module:fn or path/to/file.py:fn.",
        )
    return target


def _params(ctx: Context, value: Any, builtin: BuiltinTarget | None) -> dict[str, Any]:
    params = ctx.typed("params", value, TOP_KEYS["params"])
    if builtin is None:
        if params:
            raise ctx.fail(
                "params",
                "params are for built-in targets; a user callable takes "
                "its arguments from `inputs` or `factory`",
            )
        return {}
    ctx.keys("params", params, builtin.params)
    out = dict(builtin.params)
    for key, val in params.items():
        schema = builtin.param_schema(key)
        low = schema.get("minimum")
        what = type_name(builtin.params[key]) + ("" if low is None else f" ({low} or more)")
        out[key] = ctx.typed(f"params.{key}", val, Key("", schema, what))
    return out


def _tolerance(ctx: Context, value: Any) -> dict[str, Any]:
    if value is None:
        return {}
    ctx.typed("tolerance", value, TOP_KEYS["tolerance"])
    ctx.keys("tolerance", value, TOLERANCE_KEYS)
    if set(value) != set(TOLERANCE_KEYS):
        raise ctx.fail("tolerance", "set both rtol and atol (torch.testing.assert_close)")
    for k in value:
        ctx.typed(f"tolerance.{k}", value[k], TOLERANCE_KEYS[k])
    return {"rtol": float(value["rtol"]), "atol": float(value["atol"])}


def definitions_at(path: str | None, sha256: str | None) -> Definitions | None:
    """The definitions of the scenario file a saved report names, where it is there and
    unchanged since (its sha256); None otherwise (the presets then write the fixes)."""
    if not path or sha256 is None or not Path(path).is_file():
        return None
    try:
        scenario = load(path)
    except (ScenarioError, OSError):  # a file that no longer loads
        return None
    return definitions(scenario) if scenario.sha256 == sha256 else None
