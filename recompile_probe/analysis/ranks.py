"""Ranks that compiled differently: per-rank function summaries in, divergences out. No torch.

One home for the comparison, whatever recorded the ranks (watch of a launcher, summarize of
per-rank traces, a probe run per rank). Functions are matched across ranks by file, line and
name; a function a rank never compiled counts as zeros there. The first compile where the ranks
part is found by walking each rank's compile events of the function in order.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from ..reasons.text import entry_line, failure_lines, strip_comment
from ..records.ranks import RankDivergence, RankFigures, RankParting
from ..records.run import CompileEvent
from ..records.watch import FunctionSummary

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


def _differ(figs: list[RankFigures]) -> bool:
    counts = {(f.compiles, f.recompiles, f.failed, f.recompile_limit_hit) for f in figs}
    graphs = {f.graphs for f in figs if f.graphs is not None}
    return len(counts) > 1 or len(graphs) > 1


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
