"""What the command line changes in a loaded scenario (--strategies, --sequence, --backend),
validated as the file itself is; and the choice of strategies by name both share. No torch.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from ..errors import ScenarioError, did_you_mean
from ..sizes import points as sizes_points
from ..sizes import ranges as sizes_ranges
from ..sizes.points import Point
from .keys import BACKENDS
from .model import Scenario


def choose_strategies(
    names: list[str], known: list[str], unknown: Callable[[int, str], Exception]
) -> tuple[str, ...]:
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
    cover: str | None = None,
) -> Scenario:
    """Apply command-line overrides, validated like the file itself."""
    changes: dict[str, Any] = {}
    if cover is not None:
        changes["coverage"] = cover_ranges(scenario, cover)
    if strategies is not None:
        known = scenario.known_strategies()

        def unknown(i: int, name: str) -> ScenarioError:
            return ScenarioError(
                f"unknown strategy {name!r}",
                key="--strategies",
                path=scenario.path,
                remedy=did_you_mean(name, known) or f"Strategies: {', '.join(known)}.",
            )

        chosen = choose_strategies(strategies, known, unknown)
        if not chosen:
            raise ScenarioError("no strategy given", key="--strategies", path=scenario.path)
        changes["strategies"] = chosen
    if sequence is not None:
        # every rank gets the sizes of the command line
        changes.update(points={"cli": _cli_points(scenario, sequence)}, rank_points={})
    if backend is not None:
        if backend not in BACKENDS:
            raise ScenarioError(
                f"unknown backend {backend!r}",
                key="--backend",
                path=scenario.path,
                remedy=did_you_mean(backend, BACKENDS) or f"Backends: {', '.join(BACKENDS)}.",
            )
        changes["backend"] = backend
        if backend != "inductor":
            changes.update(backend_mode=None, backend_options=None)
    return replace(scenario, **changes) if changes else scenario


def _cli_points(scenario: Scenario, sequence: list[int] | str) -> tuple[Point, ...]:
    """--sequence 1,2,8 (batch sizes) or --sequence "B=1,S=7; B=2,S=33" (points)."""
    value: Any = sequence
    if isinstance(sequence, list) and (
        not sequence or any(isinstance(b, int) and b < 0 for b in sequence)
    ):
        raise ScenarioError(
            "expected a comma-separated list of non-negative batch sizes",
            key="--sequence",
            path=scenario.path,
        )
    if isinstance(sequence, str):
        try:
            value = [
                {k.strip(): int(v) for k, v in (kv.split("=", 1) for kv in part.split(","))}
                for part in sequence.split(";")
                if part.strip()
            ]
        except ValueError:
            raise ScenarioError(
                f"cannot read the points in {sequence!r}",
                key="--sequence",
                path=scenario.path,
                remedy='Write SYMBOL=size pairs, points separated by ";", '
                'e.g. --sequence "B=1,S=7; B=2,S=33".',
            ) from None
    try:
        return sizes_points.parse_sequence("--sequence", value, scenario.symbols)
    except sizes_points.SizeError as exc:
        raise ScenarioError(
            exc.message, key="--sequence", path=scenario.path, remedy=exc.remedy
        ) from None


def cover_ranges(scenario: Scenario, text: str, key: str = "--cover") -> dict[str, tuple[int, int]]:
    """--cover B=1..4096,S=1..2048, its symbols the scenario's own."""
    try:
        ranges = sizes_ranges.parse_cover(text, key)
    except sizes_points.SizeError as exc:
        raise ScenarioError(exc.message, key=key, path=scenario.path, remedy=exc.remedy) from None
    for symbol in ranges:
        if symbol not in scenario.symbols:
            raise ScenarioError(
                f"{symbol} is not a size symbol of this scenario",
                key=key,
                path=scenario.path,
                remedy=did_you_mean(symbol, scenario.symbols)
                or f"Its symbols: {', '.join(scenario.symbols)}.",
            )
    return ranges
