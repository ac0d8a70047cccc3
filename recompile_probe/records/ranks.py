"""Ranks compared: what each rank of a distributed job compiled, and where the ranks part. No
torch.

A rank that recompiles while the others do not leaves them waiting in the next collective (a
hang, an NCCL watchdog abort). Two things are compared, both by analysis/ranks.py: the functions
a watched or traced job compiled on each rank (``RankDivergence``: each rank's ``RankFigures``,
where they part), and the runs of strategies the tool made on each rank of a scenario with
``ranks:`` (``RankRuns``: per strategy and sequence, each rank's ``RankRun``, whether they
agree). A rank run's JSON keeps the shape of a function's rank figures (``by_rank: {"0":
{compiles, recompiles, failed, recompile_limit_hit}, ...}``), with the run's status and error.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .origin import Origin

#: the figures every rank must share for the ranks to agree, in the order a difference is named
FIGURES = ("compiles", "recompiles", "failed", "recompile_limit_hit")
#: the same for a rank's run of a strategy: its status first
AGREED = ("status", *FIGURES)


@dataclass(frozen=True)
class RankFigures:
    """One rank's figures for one function (zeros where that rank never compiled it)."""

    compiles: int
    recompiles: int
    failed: int
    recompile_limit_hit: bool
    graphs: int | None = None  #: graphs handed to a backend; None where not known


@dataclass(frozen=True)
class RankParting:
    """The first compile where the ranks part: the ``compile_index``-th compile of the function
    is present (or different) on ``rank`` and absent (or otherwise) on ``others``."""

    rank: int
    compile_id: str | None  #: in that rank's own compile ids ("0/1")
    #: the 1-based position of that compile among the function's compiles in that rank
    compile_index: int
    #: the 1-based call of the function in that rank whose compile this was: the compile
    #: event's call_index (0-based, set where calls are counted: a probe run's driver) plus one;
    #: None where the events do not know the call (watch, summarize and the pytest plugin see
    #: compiles, not calls)
    call_index: int | None
    #: that compile's recompile reason (its first failing guard); None for a first compile
    reason: str | None
    reason_kind: str | None  #: reasons.KINDS; "recompile_limit_hit" where the limit stopped it
    #: the user line behind the failing guard
    origin: Origin | None
    #: what that compile was: "recompile", "failed" (a failed compile, e.g. the limit hit),
    #: "compile" (a first compile)
    event: str = "recompile"
    #: the ranks that did not do the same at that point, lowest first
    others: tuple[int, ...] = ()
    #: what the others did at that point: "nothing" (no such compile), or their reason kinds
    others_did: str = "nothing"


@dataclass(frozen=True)
class RankDivergence:
    """A function (matched across ranks by file, line and name) whose compiles, recompiles,
    failed compiles, recompile-limit hits or graphs differ between ranks."""

    function: str
    filename: str | None
    line: int | None
    #: each rank's figures, by rank number as a string ("0", "1"), lowest first
    by_rank: dict[str, RankFigures]
    #: the first compile where the ranks part; None where the events cannot say (only the
    #: totals were given, or they differ in graphs alone)
    first: RankParting | None
    #: what it risks, one sentence: "rank 1 recompiled `step` ... a collective inside or after
    #: it can hang"
    risk: str


@dataclass(frozen=True)
class RankRun:
    """One rank's run of a strategy over a sequence: a rank's figures, and the run's status."""

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
class CallDivergence:
    """The first call whose event differs between ranks."""

    call: int  #: its index in the sequence (0-based)
    #: rank (a string, as JSON keys are) -> the call's event there; "none" where the rank made
    #: no such call
    events: dict[str, str] = field(default_factory=dict)
    #: rank -> the call's sizes there; None where the rank made no such call
    sizes: dict[str, dict[str, int] | None] = field(default_factory=dict)


@dataclass(frozen=True)
class StrategyRanks:
    """One strategy over one sequence on every rank: each rank's figures, and whether they agree."""

    sequence: str  #: the sequence name (each rank may have its own sizes under it)
    strategy: str
    #: rank (a string, as JSON keys are) -> that rank's figures; a rank without a run is absent
    by_rank: dict[str, RankRun] = field(default_factory=dict)
    #: every rank has a run and they share every figure of ``AGREED``; None when that cannot be
    #: said (a figure is n/a, a rank has no run, or the strategy is unsupported on a rank: not
    #: measured)
    agree: bool | None = None
    #: the figures of ``AGREED`` that differ between ranks, in that order
    differs: tuple[str, ...] = ()
    #: the first call whose event differs between ranks; None when no call differs (or the
    #: calls were not recorded)
    first_divergence: CallDivergence | None = None
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
