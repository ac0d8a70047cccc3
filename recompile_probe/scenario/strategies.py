"""A scenario's ``custom_strategies:`` -> Strategy objects, validated field by field, and its
``strategies:``, the names to run. No torch."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from functools import partial
from typing import Any

from ..errors import ScenarioError, did_you_mean
from ..sizes.paths import parse_path
from ..strategies.builtins import BUILTINS, DEFAULT_STRATEGIES, RANK_BUILTINS
from ..strategies.model import MARKS, LocationMark, Strategy, options_per_symbol
from .context import Context
from .keys import CUSTOM_KEYS, LOCATION_MARK_KEYS, TOP_KEYS
from .overrides import choose_strategies

#: the fields a custom strategy may set on top of the one it extends (``marks`` add up)
_FIELDS = tuple(k for k in CUSTOM_KEYS if k not in ("extends", "marks"))


def custom(name: str, spec: Mapping[str, Any], known: Mapping[str, Strategy]) -> Strategy:
    """A strategy from a scenario's ``custom_strategies`` entry (validated by the scenario)."""
    base = known[spec["extends"]] if "extends" in spec else Strategy(name, "")
    changes: dict[str, Any] = {"name": name}
    for key in _FIELDS:
        if key in spec:
            value = spec[key]
            if key in ("config", "compile", "driver_options") or (
                key == "mark_options"
                and options_per_symbol(base.mark_options) == options_per_symbol(value)
            ):
                value = {**getattr(base, key), **value}
            changes[key] = value
    if "marks" in spec:
        changes["marks"] = (
            *base.marks,
            *(LocationMark(m["argument"], m["dim"], m["kind"]) for m in spec["marks"]),
        )
    if "description" not in spec:
        changes["description"] = f"custom: {replace(base, **changes).summary()}"
    return replace(base, **changes)


def parse_custom(
    ctx: Context, value: Any, symbols: Sequence[str], driver: bool
) -> dict[str, Strategy]:
    """A scenario's ``custom_strategies:``, validated field by field (``driver``: whether the
    scenario has one, for ``driver_options``)."""
    ctx.typed("custom_strategies", value, TOP_KEYS["custom_strategies"])
    out: dict[str, Strategy] = {}
    kinds = tuple(MARKS)
    for name, spec in value.items():
        key = f"custom_strategies.{name}"
        name = str(name)
        if name in BUILTINS:
            raise ctx.fail(
                key,
                f"{name!r} is a built-in strategy",
                "Give your strategy its own name and `extends: " + name + "`.",
            )
        ctx.expect(key, spec, dict, "a mapping of strategy fields")
        ctx.keys(key, spec, CUSTOM_KEYS)
        if "extends" in spec:
            known = [*BUILTINS, *out]
            if spec["extends"] not in known:
                raise ctx.fail(
                    f"{key}.extends",
                    f"unknown strategy {spec['extends']!r}",
                    did_you_mean(spec["extends"], known),
                )
        if "dynamic" in spec and spec["dynamic"] is not None:
            ctx.typed(f"{key}.dynamic", spec["dynamic"], CUSTOM_KEYS["dynamic"])
        mark = spec.get("mark")
        per_symbol = (
            mark.items() if isinstance(mark, dict) else [] if mark is None else [(None, mark)]
        )
        if isinstance(mark, dict) and not mark:
            raise ctx.fail(f"{key}.mark", "expected a mark kind or {SYMBOL: kind, ...}")
        for symbol, kind in per_symbol:
            mkey = f"{key}.mark" if symbol is None else f"{key}.mark.{symbol}"
            if symbol is not None and str(symbol) not in symbols:
                raise ctx.fail(
                    mkey,
                    f"unknown size symbol {str(symbol)!r}",
                    did_you_mean(symbol, symbols)
                    or f"This scenario's symbols: {', '.join(symbols)}.",
                )
            if kind not in kinds and not (symbol is not None and kind is None):
                raise ctx.fail(
                    mkey,
                    f"unknown mark {kind!r}",
                    did_you_mean(kind, kinds) or f"Marks: {', '.join(kinds)}.",
                )
        for sub in ("mark_options", "config", "compile", "driver_options"):
            if sub in spec:
                ctx.typed(f"{key}.{sub}", spec[sub], CUSTOM_KEYS[sub])
        if options_per_symbol(spec.get("mark_options", {})):
            for symbol in spec["mark_options"]:
                if symbol not in symbols:
                    raise ctx.fail(
                        f"{key}.mark_options.{symbol}",
                        f"unknown size symbol {symbol!r}",
                        did_you_mean(symbol, symbols),
                    )
        for dotted in spec.get("config", {}):
            if not str(dotted).startswith("torch.") or "." not in str(dotted)[6:]:
                raise ctx.fail(
                    f"{key}.config.{dotted}",
                    "config keys are dotted torch "
                    "attributes, e.g. torch._dynamo.config.recompile_limit",
                )
        for sub in ("description", "stance"):
            if spec.get(sub) is not None:
                ctx.typed(f"{key}.{sub}", spec[sub], CUSTOM_KEYS[sub])
        if "marks" in spec:
            _check_marks(ctx, f"{key}.marks", spec["marks"])
        options = spec.get("driver_options", {})
        if options and not driver:
            raise ctx.fail(
                f"{key}.driver_options",
                "driver_options are passed to the scenario's driver, and it has none",
                "Add `driver: file.py:fn` (run(fn, **sizes, **options)), or drop them.",
            )
        clash = [k for k in options if k in symbols]
        if clash:
            raise ctx.fail(
                f"{key}.driver_options.{clash[0]}",
                f"{clash[0]!r} is a size symbol: the driver already gets it from each point",
                "Give the option another name.",
            )
        out[name] = custom(name, spec, {**BUILTINS, **out})
    return out


def parse_list(
    ctx: Context, value: Any, known: list[str], custom: Mapping, ranks: int | None
) -> tuple[str, ...]:
    """``strategies:``: the names to run, in order (``known``: every name the scenario knows)."""
    if value is None:
        return tuple(
            dict.fromkeys([*DEFAULT_STRATEGIES, *(RANK_BUILTINS if ranks else ()), *custom])
        )
    if isinstance(value, str):
        value = [value]
    ctx.expect("strategies", value, list, TOP_KEYS["strategies"].what)
    if not value:
        raise ctx.fail("strategies", "expected at least one strategy")
    for i, name in enumerate(value):
        ctx.expect(f"strategies[{i}]", name, str, "a strategy name")

    def unknown(i: int, name: str) -> ScenarioError:
        if name in RANK_BUILTINS:
            return ctx.fail(
                f"strategies[{i}]",
                f"{name!r} is a strategy of distributed scenarios: it needs a process group",
                "Add `ranks: 2` to run every strategy on two rank processes.",
            )
        return ctx.fail(
            f"strategies[{i}]",
            f"unknown strategy {name!r}",
            did_you_mean(name, known) or f"Strategies: {', '.join(known)}.",
        )

    return choose_strategies(value, known, unknown)


def _check_marks(ctx: Context, key: str, value: Any) -> None:
    ctx.typed(key, value, CUSTOM_KEYS["marks"])
    for i, entry in enumerate(value):
        at = f"{key}[{i}]"
        ctx.expect(at, entry, dict, "a mapping {argument: PATH, dim: N, kind: KIND}")
        ctx.keys(at, entry, LOCATION_MARK_KEYS)
        missing = [k for k in LOCATION_MARK_KEYS if k not in entry]
        if missing:
            raise ctx.fail(at, f"missing {', '.join(missing)}")
        ctx.sizes(partial(parse_path, f"{at}.argument", entry["argument"]))
        ctx.typed(f"{at}.dim", entry["dim"], LOCATION_MARK_KEYS["dim"])
        if entry["kind"] not in MARKS:
            raise ctx.fail(
                f"{at}.kind",
                f"unknown mark {entry['kind']!r}",
                did_you_mean(str(entry["kind"]), list(MARKS)) or f"Marks: {', '.join(MARKS)}.",
            )
