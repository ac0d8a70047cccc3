"""Ranks compared, the one home: what each rank compiled in, where they differ out. No torch.

Ranks that compile differently are what hangs a distributed job: the rank that recompiles
arrives late at the next collective (or, with compiler collectives, issues one the others never
join). So ranks are compared on the figures their compiling shows (records.ranks.FIGURES),
never on timings, which differ between ranks anyway. Two inputs:

- per-rank function summaries (watch of a launcher, summarize of per-rank traces, the pytest
  plugin): ``divergences``. Functions are matched across ranks by file, line and name; a
  function a rank never compiled counts as zeros there. The first compile where the ranks part
  is found by walking each rank's compile events of the function in order.
- per-rank runs of strategies (a scenario with ``ranks:``): ``compare``, for each strategy and
  sequence whether every rank compiles the same, and which strategy makes them agree with the
  fewest compiles.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence

from ..reasons.text import entry_line, failure_lines, strip_comment
from ..records.ranks import (
    AGREED,
    FIGURES,
    CallDivergence,
    RankDivergence,
    RankFigures,
    RankParting,
    RankRun,
    RankRuns,
    StrategyRanks,
)
from ..records.run import CompileEvent, Run
from ..records.watch import FunctionSummary
from ..sizes.points import Point, format_point
from .verdicts import eligible, plural

_ROLE = re.compile(r"^rank (\d+)$")

Key = tuple[str | None, int | None, str]


def rank_of(role: str | None) -> int | None:
    """ "rank 1" (a process's role, as watch records it) -> 1; None for any other role."""
    match = _ROLE.match(role or "")
    return int(match.group(1)) if match else None


def figures(f: FunctionSummary | None) -> RankFigures:
    if f is None:
        return RankFigures(0, 0, 0, False, 0)
    return RankFigures(f.compiles, f.recompiles, f.failed, f.recompile_limit_hit, f.graphs)


def _key(f: FunctionSummary) -> Key:
    return (f.filename, f.line, f.function)


def divergences(
    summaries: Mapping[int, Sequence[FunctionSummary]],
    events: Mapping[int, Sequence[CompileEvent]] | None = None,
) -> tuple[RankDivergence, ...]:
    """Every function whose figures differ between ranks, in first-compiled order (lowest rank
    first). ``events``: each rank's compile events in the order they happened, to say where the
    ranks part (without them, ``first`` is None). One rank or none: nothing to compare, ()."""
    if len(summaries) < 2:
        return ()
    ranks = sorted(summaries)
    table: dict[Key, dict[int, FunctionSummary]] = {}
    for rank in ranks:
        for f in summaries[rank]:
            table.setdefault(_key(f), {})[rank] = f
    out = []
    for key, found in table.items():
        by_rank = {r: figures(found.get(r)) for r in ranks}
        if not _differ(list(by_rank.values())):
            continue
        any_f = next(iter(found.values()))
        first = None
        if events is not None and all(r in events for r in ranks):
            first = _parting({r: _events_of(any_f, events[r]) for r in ranks})
        out.append(
            RankDivergence(
                function=key[2],
                filename=key[0],
                line=key[1],
                by_rank={str(r): by_rank[r] for r in ranks},
                first=first,
                risk=_risk(key[2], by_rank, first),
            )
        )
    return tuple(out)


def differing(figures: Iterable[RankFigures | RankRun], keys: Sequence[str]) -> tuple[str, ...]:
    """The figures of ``keys`` that differ between ranks, in that order; a rank whose figure is
    n/a (None) takes no part in that figure's comparison."""
    figs = list(figures)
    return tuple(key for key in keys if len({getattr(f, key) for f in figs} - {None}) > 1)


def _differ(figs: list[RankFigures]) -> bool:
    return bool(differing(figs, (*FIGURES, "graphs")))


def _events_of(f: FunctionSummary, events: Sequence[CompileEvent]) -> list[CompileEvent]:
    """The compile events of ``f``'s code object, in order: same file and line, and its name
    (the code object's own or the qualified name's last part) where any event gives one."""
    here = [e for e in events if (e.filename, e.line) == (f.filename, f.line)]
    names = {f.function, f.function.rsplit(".", 1)[-1]}
    if f.code_name:
        names |= {f.code_name, f.code_name.rsplit(".", 1)[-1]}
    named = [e for e in here if e.function in names]
    return named or here


def _what(e: CompileEvent) -> str:
    return "failed" if e.failed else "recompile" if e.recompile else "compile"


def _signature(e: CompileEvent | None) -> tuple | None:
    """What must be equal for two ranks' n-th compiles to be the same: what it was, why (the
    failing guard without its entry id, which differs when the ranks' frames were numbered
    differently), and the graphs it produced."""
    if e is None:
        return None
    why = tuple(strip_comment(entry_line(line)[1]) for line in failure_lines(e.reason))
    return (_what(e), e.reason_kind, why, e.graphs)


def _parting(per_rank: Mapping[int, list[CompileEvent]]) -> RankParting | None:
    longest = max((len(v) for v in per_rank.values()), default=0)
    for i in range(longest):
        at = {r: (evs[i] if i < len(evs) else None) for r, evs in per_rank.items()}
        groups: dict[tuple | None, list[int]] = {}
        for r in sorted(at):
            groups.setdefault(_signature(at[r]), []).append(r)
        if len(groups) == 1:
            continue
        # the odd one out: the smallest group that compiled something here; between equal
        # groups, the one without the lowest rank (rank 0 is the reference a reader expects)
        candidates = [(sig, rs) for sig, rs in groups.items() if sig is not None]
        sig, odd = min(candidates, key=lambda item: (len(item[1]), -min(item[1])))
        e = at[odd[0]]
        assert e is not None
        others = tuple(r for r in sorted(at) if r not in odd)
        did = sorted(
            {
                _what(x) + (f" ({x.reason_kind})" if x.reason_kind else "")
                for r in others
                if (x := at[r]) is not None
            }
        )
        lines = failure_lines(e.reason)
        return RankParting(
            rank=odd[0],
            compile_id=e.compile_id,
            compile_index=i + 1,
            call_index=None if e.call_index is None else e.call_index + 1,
            reason=lines[0] if lines else e.reason,
            reason_kind=e.reason_kind,
            origin=e.reason_origins[0] if e.reason_origins else None,
            event=_what(e),
            others=others,
            others_did=", ".join(did) if did else "nothing",
        )
    return None


def _ranks(ranks: Sequence[int]) -> str:
    return ("rank " if len(ranks) == 1 else "ranks ") + ", ".join(str(r) for r in ranks)


def _risk(name: str, by_rank: Mapping[int, RankFigures], first: RankParting | None) -> str:
    hang = "a collective inside or after it can hang"
    if first is None:
        shown = ", ".join(
            f"rank {r}: {fig.graphs if fig.graphs is not None else 'n/a'}"
            for r, fig in by_rank.items()
        )
        return f"the ranks compiled `{name}` differently ({shown} graphs): {hang}"
    who, others = f"rank {first.rank}", _ranks(first.others)
    when = (
        f"at call {first.call_index}"
        if first.call_index is not None
        else f"at its compile {first.compile_index}"
    )
    not_ = "did not" if first.others_did == "nothing" else f"did otherwise ({first.others_did})"
    hit = [r for r, fig in by_rank.items() if fig.recompile_limit_hit]
    if hit and len(hit) < len(by_rank) and first.reason_kind != "recompile_limit_hit":
        hang = (
            f"then {_ranks(hit)} hit its recompile limit and {'runs' if len(hit) == 1 else 'run'} "
            f"it without compiled code; {hang}"
        )
    if first.reason_kind == "recompile_limit_hit":
        return (
            f"{who} hit the recompile limit of `{name}` {when} while {others} {not_}: from there "
            f"{who} runs it without compiled code, so its graphs differ from the others'; {hang}"
        )
    if first.event == "failed":
        return f"{who}'s compile of `{name}` failed {when} while {others} {not_}: {hang}"
    if first.event == "compile":
        return f"{who} compiled `{name}` {when} while {others} {not_}: {hang}"
    return f"{who} recompiled `{name}` {when} while {others} {not_}: {hang}"


# --- per-rank runs of strategies ------------------------------------------------------------

LIMIT_KIND = "recompile_limit_hit"


def run_figures(run: Run) -> RankRun:
    """The figures of one rank's run that the ranks must share."""
    events = run.compile_events
    return RankRun(
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


def _first_divergence(runs: dict[int, Run]) -> CallDivergence | None:
    longest = max((len(r.calls) for r in runs.values()), default=0)
    for i in range(longest):
        events = {
            str(rank): run.calls[i].event if i < len(run.calls) else "none"
            for rank, run in runs.items()
        }
        if len(set(events.values())) > 1:
            sizes = {
                str(rank): run.calls[i].sizes if i < len(run.calls) else None
                for rank, run in runs.items()
            }
            return CallDivergence(call=i, events=events, sizes=sizes)
    return None


def compare_strategy(
    sequence: str, strategy: str, runs: dict[int, Run], world: int
) -> StrategyRanks:
    """One strategy over one sequence: ``runs`` rank -> that rank's run."""
    by_rank = {str(rank): run_figures(run) for rank, run in sorted(runs.items())}
    missing = [r for r in range(world) if r not in runs]
    statuses = {f.status for f in by_rank.values()}
    differs = differing(by_rank.values(), AGREED)
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


def _rank_figures(f: RankRun) -> str:
    if f.status != "ok":
        return f.error or f.status
    return plural(f.compiles or 0, "compile") + _beyond(f, "recompile limit hit")


def _beyond(f: RankRun, limit: str) -> str:
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


def rank_cell(f: RankRun | None) -> str:
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
            f"rank {r} {event} ({_at(d.sizes.get(r))})" for r, event in d.events.items()
        )
        text += f"; first at call {d.call}: {where}"
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
