"""A run report as the formats lay it out, built once: per sequence (per rank of a distributed
scenario) its winner, points, recompile rows, guard diffs, verdict and notes; per distributed
sequence the ranks side by side and their verdict. The terminal, HTML and Markdown renderers
receive these and only arrange them."""

from __future__ import annotations

from dataclasses import dataclass

from ...analysis.diffs import GuardDiff, diffs
from ...analysis.notes import noise_note, slow_winner
from ...analysis.ranks import rank_cell
from ...analysis.ranks import verdict as rank_verdict
from ...analysis.sequence import batch_only, moved, points_of, sequence_label, stepped, transitions
from ...analysis.verdicts import best, plural, verdict
from ...records.ranks import RankRuns
from ...records.report import Report
from ...records.run import Run
from ...sizes.points import Point
from .. import cells


@dataclass(frozen=True)
class RecompileRow:
    """One recompile of a run: where in the sequence, and the first failing guard."""

    run: Run
    strategy: str
    call_index: int
    change: str  #: "2 → 8" (B before and after; "?" where unknown), or every symbol that moved
    compile_id: str | None
    kind: str  #: the first failing guard's kind ("other" where none was recognised)
    reason: str | None


@dataclass(frozen=True)
class GuardDiffs:
    """A run's guard diffs between its cache entries."""

    run: Run
    diffs: tuple[GuardDiff, ...]
    title: str  #: "2 guard diffs"


@dataclass(frozen=True)
class SequenceLines:
    name: str  #: the sequence's name
    rank: int | None  #: the rank whose runs these are, in a distributed scenario
    runs: tuple[Run, ...]
    winner: Run | None
    points: tuple[Point, ...]
    batch_only: bool  #: every point is a B alone: columns headed with B's sizes
    stepped: bool  #: a driver called the target several times per point somewhere
    plain: bool  #: a change is a B before and after (else every symbol that moved)
    recompiles: tuple[RecompileRow, ...]
    guard_diffs: tuple[GuardDiffs, ...]
    verdict: str
    notes: tuple[str, ...]  #: a slow winner, a spread too wide to rank on

    @property
    def title(self) -> str:
        return self.name if self.rank is None else f"{self.name} · rank {self.rank}"

    def label(self, width: int) -> str:
        """The points, as wide as ``width`` allows."""
        return sequence_label(list(self.points), width)


@dataclass(frozen=True)
class RankRow:
    strategy: str
    cells: tuple[str, ...]  #: one per rank, in rank order
    agree: bool | None
    differs: tuple[str, ...]  #: the figures the ranks differ in, where they do
    best: bool  #: the strategy that makes every rank compile the same


@dataclass(frozen=True)
class RanksLines:
    sequence: str
    world_size: int
    rows: tuple[RankRow, ...]
    verdict: str


def of_report(report: Report) -> tuple[SequenceLines | RanksLines, ...]:
    """The report's parts in the order every format shows them."""
    out: list[SequenceLines | RanksLines] = []
    for name, _ in report.sequences():
        every = report.runs_for(name)
        ranks = sorted({r.rank for r in every if r.rank is not None})
        if not ranks:
            out.append(_sequence(name, None, every))
            continue
        for rank in ranks:  # each rank's own sizes, table and timeline, then the ranks compared
            out.append(_sequence(name, rank, [r for r in every if r.rank == rank]))
        if report.rank_runs is not None:
            out.append(_ranks(report.rank_runs, name))
    return tuple(out)


def _sequence(name: str, rank: int | None, runs: list[Run]) -> SequenceLines:
    points = points_of(runs)
    plain = cells.plain(runs)
    rows = []
    for run in runs:
        for t in transitions(run):
            before = "?" if t.batch_before is None else str(t.batch_before)
            rows.append(
                RecompileRow(
                    run=run,
                    strategy=t.strategy,
                    call_index=t.call_index,
                    change=f"{before} → {t.batch_after}" if plain else moved(run, t),
                    compile_id=t.compile_id,
                    kind=t.kind or "other",
                    reason=t.reason,
                )
            )
    found = [(run, tuple(diffs(run))) for run in runs]
    label = name if rank is None else f"{name} · rank {rank}"
    return SequenceLines(
        name=name,
        rank=rank,
        runs=tuple(runs),
        winner=best(runs),
        points=tuple(points),
        batch_only=batch_only(points),
        stepped=any(map(stepped, runs)),
        plain=plain,
        recompiles=tuple(rows),
        guard_diffs=tuple(
            GuardDiffs(run, d, plural(len(d), "guard diff")) for run, d in found if d
        ),
        verdict=verdict(label, runs),
        notes=tuple(n for n in (slow_winner(runs), noise_note(runs)) if n),
    )


def _ranks(rank_runs: RankRuns, sequence: str) -> RanksLines:
    world = [str(r) for r in range(rank_runs.world_size)]
    winner = rank_runs.best.get(sequence)
    rows = tuple(
        RankRow(
            strategy=c.strategy,
            cells=tuple(rank_cell(c.by_rank.get(r)) for r in world),
            agree=c.agree,
            differs=tuple(c.differs),
            best=c.strategy == winner,
        )
        for c in rank_runs.comparisons
        if c.sequence == sequence
    )
    return RanksLines(sequence, rank_runs.world_size, rows, rank_verdict(rank_runs, sequence))
