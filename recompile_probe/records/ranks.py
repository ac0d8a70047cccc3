"""Ranks of one distributed job that compiled a function differently. No torch.

A rank that recompiles while the others do not leaves them waiting in the next collective (a
hang, an NCCL watchdog abort). These records say where the ranks parted; analysis/ranks.py
finds them from per-rank function summaries, whichever way the ranks were recorded (watch,
summarize of per-rank traces, a probe run per rank).
"""

from __future__ import annotations

from dataclasses import dataclass


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
    #: the user line behind the failing guard {file, line, function, code, role, file_exact}
    origin: dict | None
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
