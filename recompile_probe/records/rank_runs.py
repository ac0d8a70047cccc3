"""Per-rank runs of strategies compared: a distributed scenario (``ranks:``) runs every strategy
on every rank, and these records say, per strategy and sequence, what each rank compiled and
whether the ranks agree. No torch.

This compares *runs of strategies* the tool itself made on each rank. The JSON of one
comparison keeps the shape of a watched program's rank divergence (``by_rank: {"0": {compiles,
recompiles, failed, recompile_limit_hit}, ...}``), with a rank's status and graphs beside them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

#: the figures every rank must share for the ranks to agree, in the order a difference is named
AGREED = ("status", "compiles", "recompiles", "failed", "recompile_limit_hit")


@dataclass(frozen=True)
class RankFigures:
    """One rank's run of a strategy over a sequence."""

    compiles: int | None  #: Dynamo compilations, failed ones included (Run.compiles)
    recompiles: int | None  #: Run.recompiles
    failed: int | None  #: compile events that failed (Run.failed_compiles)
    #: a compile of the run hit the recompile limit; None where the run has no compile events
    recompile_limit_hit: bool | None
    status: str  #: the run's status: ok | error | unsupported
    graphs: int | None = None  #: backend graphs (Run.graphs)
    #: "Type: message" of the run's error (a timed-out collective, an unsupported knob); None: ok
    error: str | None = None


@dataclass(frozen=True)
class StrategyRanks:
    """One strategy over one sequence on every rank: each rank's figures, and whether they agree."""

    sequence: str  #: the sequence name (each rank may have its own sizes under it)
    strategy: str
    #: rank (a string, as JSON keys are) -> that rank's figures; a rank without a run is absent
    by_rank: dict[str, RankFigures] = field(default_factory=dict)
    #: every rank has a run and they share every figure of ``AGREED``; None when that cannot be
    #: said (a figure is n/a, a rank has no run, or the strategy is unsupported on a rank: not
    #: measured)
    agree: bool | None = None
    #: the figures of ``AGREED`` that differ between ranks, in that order
    differs: tuple[str, ...] = ()
    #: the first call whose event differs between ranks: {call, events: {rank: event}, sizes:
    #: {rank: point}}; None when no call differs (or the calls were not recorded)
    first_divergence: dict[str, Any] | None = None
    #: why ``agree`` is None, or what a rank's error was
    note: str | None = None


@dataclass(frozen=True)
class RankRuns:
    """Every strategy of a distributed scenario, its ranks compared."""

    world_size: int  #: how many ranks ran (the scenario's ``ranks:``)
    backend: str  #: the process group backend they joined (``distributed.backend``)
    comparisons: tuple[StrategyRanks, ...] = ()
    #: sequence -> the strategy under which every rank agrees with the fewest compiles (the
    #: highest rank's count, then the scenario's strategy order); None when no strategy agrees
    best: dict[str, str | None] = field(default_factory=dict)

    def of(self, sequence: str, strategy: str) -> StrategyRanks | None:
        return next(
            (c for c in self.comparisons if c.sequence == sequence and c.strategy == strategy),
            None,
        )
