"""The frozen Scenario every command runs: what is compiled, with which inputs, at which sizes,
under which strategies, judged by which budgets. No torch.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ..errors import ScenarioError
from ..sizes.paths import DimRef
from ..sizes.points import BATCH, Point
from ..strategies.advice import Definitions
from ..strategies.builtins import BUILTINS, DEFAULT_STRATEGIES, RANK_BUILTINS
from ..strategies.model import Strategy, symbol_ranges
from .budgets import Budget
from .inputs import TensorSpec, Value

DEFAULT_SCENARIO = "logprobs.yaml"


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
    strategies: tuple[str, ...] = DEFAULT_STRATEGIES
    custom_strategies: Mapping[str, Strategy] = field(default_factory=dict)
    seed: int = 0
    repeats: int = 50  #: calls timed for the steady-state figure (0: skip)
    rtol: float | None = None
    atol: float | None = None
    description: str = ""
    #: the `expect:` section, flattened (see budgets.py)
    budgets: tuple[Budget, ...] = ()
    #: `coverage:` (or --cover): symbol -> inclusive (lo, hi) each run's cache entries are
    #: checked against after its sequence; None: not asked
    coverage: Mapping[str, tuple[int, int]] | None = None
    #: `ranks:`: how many rank processes run every strategy (None: one process, not distributed)
    ranks: int | None = None
    #: `distributed:`: the process group backend and the seconds a collective may wait
    distributed_backend: str = "gloo"
    distributed_timeout_s: float = 60.0
    #: sequences written `by_rank:`: name -> each rank's points, rank 0 first (``points`` holds
    #: rank 0's); a sequence not here gives every rank the same points
    rank_points: Mapping[str, tuple[tuple[Point, ...], ...]] = field(default_factory=dict)
    #: dotted key ("sequences.rl") -> line, for errors raised after validation
    lines: Mapping[str, int] = field(default_factory=dict, compare=False, repr=False)
    #: sha256 of the YAML text this was loaded from (None when built in code)
    sha256: str | None = field(default=None, compare=False, repr=False)

    @property
    def base_dir(self) -> Path:
        return Path(self.path).parent if self.path else Path.cwd()

    @property
    def sequences(self) -> dict[str, tuple[int, ...]]:
        """name -> the B value of each point (the first symbol's where there is no B): what
        reports call ``sequence``."""
        symbol = BATCH if BATCH in self.symbols else self.symbols[0]
        return {
            name: tuple(p.get(symbol) or 0 for p in points) for name, points in self.points.items()
        }

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
        return ScenarioError(
            message, path=self.path, line=self.line_of(key), key=key, remedy=remedy
        )

    def strategy(self, name: str) -> Strategy:
        return (
            self.custom_strategies.get(name)
            or BUILTINS.get(name)
            or (RANK_BUILTINS[name] if self.ranks else BUILTINS[name])
        )

    def known_strategies(self) -> list[str]:
        return [*BUILTINS, *(RANK_BUILTINS if self.ranks else ()), *self.custom_strategies]

    def points_of_rank(self, rank: int) -> dict[str, tuple[Point, ...]]:
        """name -> the points this rank calls the target with."""
        return {
            name: self.rank_points[name][rank] if name in self.rank_points else points
            for name, points in self.points.items()
        }

    def for_rank(self, rank: int) -> Scenario:
        """The scenario one rank process runs: its own points in ``points``."""
        return replace(self, points=self.points_of_rank(rank), rank_points={})


def default_path() -> Path:
    """The built-in scenario, configs/logprobs.yaml (shipped as recompile_probe.configs)."""
    from importlib.resources import files

    return Path(str(files("recompile_probe.configs").joinpath(DEFAULT_SCENARIO)))


def coverage_ranges(scenario: Scenario) -> dict[str, tuple[int, int]] | None:
    """The range each run decides coverage over: `coverage:`, widened to every range a
    `no_recompile_in` budget names, so the budget is judged on what was decided."""
    out = dict(scenario.coverage or {})
    for budget in scenario.budgets:
        if budget.key == "no_recompile_in":
            for symbol, (lo, hi) in budget.limit.items():
                old = out.get(symbol)
                out[symbol] = (lo, hi) if old is None else (min(lo, old[0]), max(hi, old[1]))
    return out or None


def definitions(scenario: Scenario) -> Definitions:
    """What the scenario's measured fixes are written with (its custom strategies included)."""
    return Definitions(
        {name: scenario.strategy(name) for name in scenario.known_strategies()},
        symbol_ranges(scenario.points),
        scenario.driver,
    )
