"""Per-rank runs of strategies compared (a scenario with ``ranks:``): for each strategy and
sequence, does every rank compile the same, and which strategy makes them agree with the
fewest compiles. Pure functions over the runs each rank made; no torch.

Ranks that compile differently are what hangs a distributed job: the rank that recompiles
arrives late at the next collective (or, with compiler collectives, issues one the others never
join). So the comparison looks at the figures a rank's compiling shows (``AGREED``), never at
timings, which differ between ranks anyway.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from ..records.rank_runs import AGREED, RankFigures, RankRuns, StrategyRanks
from ..records.run import Run
from ..sizes.points import Point, format_point
from .verdicts import eligible, plural

LIMIT_KIND = "recompile_limit_hit"


def figures(run: Run) -> RankFigures:
    """The figures of one rank's run that the ranks must share."""
    events = run.compile_events
    return RankFigures(
        compiles=run.compiles,
        recompiles=run.recompiles,
        failed=run.failed_compiles,
        recompile_limit_hit=(
            any(e.reason_kind == LIMIT_KIND for e in events)
            if events or run.compiles is not None
            else None
        ),
        status=run.status,
        graphs=run.graphs,
        error=f"{run.error.type}: {run.error.message}" if run.error is not None else None,
    )


def _first_divergence(runs: dict[int, Run]) -> dict | None:
    longest = max((len(r.calls) for r in runs.values()), default=0)
    for i in range(longest):
        events = {
            str(rank): run.calls[i].event if i < len(run.calls) else "none"
            for rank, run in runs.items()
        }
        if len(set(events.values())) > 1:
            return {
                "call": i,
                "events": events,
                "sizes": {
                    str(rank): run.calls[i].sizes if i < len(run.calls) else None
                    for rank, run in runs.items()
                },
            }
    return None


def compare_strategy(
    sequence: str, strategy: str, runs: dict[int, Run], world: int
) -> StrategyRanks:
    """One strategy over one sequence: ``runs`` rank -> that rank's run."""
    by_rank = {str(rank): figures(run) for rank, run in sorted(runs.items())}
    missing = [r for r in range(world) if r not in runs]
    statuses = {f.status for f in by_rank.values()}
    differs = tuple(
        key
        for key in AGREED
        if len({getattr(f, key) for f in by_rank.values() if getattr(f, key) is not None}) > 1
    )
    note: str | None = None
    agree: bool | None
    if missing:
        agree = None
        note = f"no run on rank {', '.join(map(str, missing))} (interrupted or lost)"
    elif statuses == {"unsupported"}:
        agree = None
        reasons = list(dict.fromkeys(f.error for f in by_rank.values() if f.error))
        note = "not measured: " + ("; ".join(r.split(": ", 1)[-1] for r in reasons) or "n/a")
    elif differs:
        agree = False
    elif statuses != {"ok"}:
        agree = None
        reasons = list(dict.fromkeys(f.error for f in by_rank.values() if f.error))
        note = "failed on every rank: " + "; ".join(reasons)
    elif any(getattr(f, key) is None for f in by_rank.values() for key in AGREED):
        agree = None
        note = "a figure is n/a on a rank: agreement cannot be verified"
    else:
        agree = True
    if agree is False and note is None:
        errors = [f"rank {r}: {f.error}" for r, f in by_rank.items() if f.error]
        note = "; ".join(errors) or None
    return StrategyRanks(
        sequence=sequence,
        strategy=strategy,
        by_rank=by_rank,
        agree=agree,
        differs=differs,
        first_divergence=_first_divergence(runs),
        note=note,
    )


def compare(
    runs: Iterable[Run], world: int, backend: str, strategies: Sequence[str] = ()
) -> RankRuns:
    """Every (sequence, strategy) of the runs, its ranks compared; ``strategies``: the scenario's
    order, which breaks a tie for ``best``."""
    groups: dict[tuple[str, str], dict[int, Run]] = {}
    for run in runs:
        if run.rank is not None:
            groups.setdefault((run.sequence_name, run.strategy), {})[run.rank] = run
    comparisons = tuple(
        compare_strategy(sequence, strategy, group, world)
        for (sequence, strategy), group in groups.items()
    )
    order = {name: i for i, name in enumerate(strategies)}
    best: dict[str, str | None] = {}
    for sequence in dict.fromkeys(c.sequence for c in comparisons):
        candidates = [
            c
            for c in comparisons
            if c.sequence == sequence
            and c.agree
            and all(eligible(run) for run in groups[(sequence, c.strategy)].values())
        ]
        candidates.sort(key=lambda c: (_most_compiles(c), order.get(c.strategy, len(order))))
        best[sequence] = candidates[0].strategy if candidates else None
    return RankRuns(world, backend, comparisons, best)


def _most_compiles(c: StrategyRanks) -> int:
    return max((f.compiles or 0) for f in c.by_rank.values())


def agreement(rank_runs: RankRuns | None, run: Run) -> StrategyRanks | None:
    """The comparison a run of one rank belongs to."""
    if rank_runs is None or run.rank is None:
        return None
    return rank_runs.of(run.sequence_name, run.strategy)


# --- words ----------------------------------------------------------------------------------------


def _rank_figures(f: RankFigures) -> str:
    if f.status != "ok":
        return f.error or f.status
    return plural(f.compiles or 0, "compile") + _beyond(f, "recompile limit hit")


def _beyond(f: RankFigures, limit: str) -> str:
    """ " (1 recompile, 1 failed, <limit>)": what a rank did beyond its compiles; "" for none."""
    extra = []
    if f.recompiles:
        extra.append(plural(f.recompiles, "recompile"))
    if f.failed:
        extra.append(f"{f.failed} failed")
    if f.recompile_limit_hit:
        extra.append(limit)
    return f" ({', '.join(extra)})" if extra else ""


def _at(sizes: dict | None) -> str:
    return format_point(Point.of(sizes)) if sizes else "?"


def rank_cell(f: RankFigures | None) -> str:
    """One rank's figures in a table cell: "2 (1 recompile)", "unsupported", "error (Timeout)"."""
    if f is None:
        return "-"
    if f.status != "ok":
        kind = f.error.split(":", 1)[0] if f.error else ""
        return f"{f.status} ({kind})" if kind and f.status == "error" else f.status
    return f"{f.compiles}" + _beyond(f, "limit hit")


def divergence(c: StrategyRanks) -> str:
    """How the ranks differ, in one line: each rank's figures, then the first call that differs,
    e.g. "rank 0: 1 compile; rank 1: 2 compiles (1 recompile); first at call 2: rank 0 hit (B 8),
    rank 1 recompile (B 3)"."""
    text = "; ".join(f"rank {r}: {_rank_figures(f)}" for r, f in c.by_rank.items())
    d = c.first_divergence
    if d is not None:
        where = ", ".join(
            f"rank {r} {event} ({_at(d['sizes'].get(r))})" for r, event in d["events"].items()
        )
        text += f"; first at call {d['call']}: {where}"
    return text


def verdict(rank_runs: RankRuns, sequence: str) -> str:
    """One line per sequence: the strategy that makes every rank compile the same with the
    fewest compiles, the others that agree, those under which the ranks diverge, and those not
    measured."""
    here = [c for c in rank_runs.comparisons if c.sequence == sequence]
    winner = rank_runs.best.get(sequence)
    parts = []
    if winner is not None:
        chosen = next(c for c in here if c.strategy == winner)
        parts.append(
            f"{winner} makes every rank compile the same with the fewest compiles "
            f"({plural(_most_compiles(chosen), 'compile')} per rank)"
        )
        also = [c for c in here if c.agree and c.strategy != winner]
        if also:
            parts.append(
                "also agree: " + ", ".join(f"{c.strategy} ({_most_compiles(c)})" for c in also)
            )
    else:
        parts.append(f"no strategy makes all {rank_runs.world_size} ranks compile the same")
    diverge = [c for c in here if c.agree is False]
    if diverge:
        parts.append(
            "ranks diverge under "
            + ", ".join(c.strategy for c in diverge)
            + f" ({diverge[0].strategy}: {divergence(diverge[0])})"
        )
    unmeasured = [c for c in here if c.agree is None]
    if unmeasured:
        parts.append(
            "not compared: " + "; ".join(f"{c.strategy} ({c.note or 'n/a'})" for c in unmeasured)
        )
    return (
        f"{sequence} on {rank_runs.world_size} ranks ({rank_runs.backend}): "
        + "; ".join(parts)
        + "."
    )
