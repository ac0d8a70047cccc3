"""The rank-divergence section of `watch` and `summarize`, as lines every format prints.
No torch."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ...analysis.verdicts import plural
from ...provenance.origin import at
from ...records.ranks import RankDivergence
from ...records.watch import WatchReport
from .. import cells

HEADERS = ("function", "where", "rank", "compiles", "recompiles", "failed", "limit\nhit", "graphs")

#: what each knob does, written once (advice: nothing here runs them)
KNOB_HELP = {
    "torch._dynamo.config.enable_compiler_collectives": (
        "torch._dynamo.config.enable_compiler_collectives = True (TORCH_COMPILER_COLLECTIVES=1): "
        "ranks compiling together compare their input sizes, and a size that differs across "
        "ranks is compiled dynamic on every rank (all ranks must compile at the same time: "
        "SPMD programs only, it hangs otherwise)"
    ),
    "torch.compiler.set_enable_guard_collectives": (
        "torch.compiler.set_enable_guard_collectives(True): a collective at every entry into "
        "compiled code, so when one rank's guards fail every rank recompiles together (costly; "
        "SPMD programs only, it hangs otherwise)"
    ),
}
MEASURED_BY = "`run`/`check` of a scenario with `ranks:` measure them"


def _ranks(ranks: tuple[int, ...] | list[int]) -> str:
    return ", ".join(str(r) for r in ranks)


def where(d: RankDivergence) -> str:
    return f"{Path(d.filename).name if d.filename else '?'}:{cells.num(d.line)}"


def heading(report: WatchReport) -> str | None:
    """None where there was no second rank to compare."""
    divs = report.rank_divergence
    if divs is None:
        return None
    ranks = _ranks(report.ranks_compared)
    if not divs:
        return f"Ranks {ranks} compiled alike: no function differs between them."
    return (
        f"Ranks that compiled differently: {plural(len(divs), 'function')} differ between "
        f"ranks {ranks} (a collective can hang)"
    )


def rows(d: RankDivergence) -> list[list[str]]:
    """One row per rank, the function named on the first."""
    out = []
    for i, (rank, fig) in enumerate(d.by_rank.items()):
        out.append(
            [
                d.function if i == 0 else "",
                where(d) if i == 0 else "",
                rank,
                str(fig.compiles),
                str(fig.recompiles),
                str(fig.failed),
                "YES" if fig.recompile_limit_hit else "no",
                cells.num(fig.graphs),
            ]
        )
    return out


def parting(d: RankDivergence) -> list[str]:
    """Where the ranks part, and what it risks: unindented lines."""
    out = [f"{d.function} ({where(d)})"]
    first = d.first
    if first is not None:
        call = (
            "n/a (compiles are recorded, not calls)"
            if first.call_index is None
            else first.call_index
        )
        out.append(
            f"  first parting: rank {first.rank}, compile {first.compile_id or '?'} (its compile "
            f"{first.compile_index} of `{d.function}`), call {call}: {first.event}"
            + (f" [{first.reason_kind}]" if first.reason_kind else "")
        )
        if first.reason:
            out.append(f"    {first.reason}")
        if first.origin:
            out.append(f"    {at(first.origin)}")
    out.append(f"  risk: {d.risk}")
    return out


def advice(report: WatchReport) -> list[str]:
    """What can keep ranks compiling alike: advice, not measured here."""
    if not report.rank_divergence:
        return []
    out = [
        "What to do (advice, not measured here): give every rank the same shapes (drop or pad a "
        "ragged last shard: DistributedSampler(drop_last=True)), keep rank-dependent Python "
        "values out of compiled code, warm compile caches on every node or none."
    ]
    knobs = report.collective_knobs
    if knobs is None:
        out.append(f"Where your torch has them (advice, not measured here; {MEASURED_BY}):")
        out += [f"  {text}" for text in KNOB_HELP.values()]
    elif knobs:
        out.append(f"The ranks' torch has (advice, not measured here; {MEASURED_BY}):")
        out += [f"  {KNOB_HELP.get(k, k)}" for k in knobs]
    else:
        out.append(
            "The ranks' torch has neither torch._dynamo.config.enable_compiler_collectives nor "
            "torch.compiler.set_enable_guard_collectives."
        )
    return out


def gate_summary(report: WatchReport) -> list[str]:
    """What --fail-on-rank-divergence prints when it fails: one line per function."""
    return [f"{d.function} ({where(d)}): {d.risk}" for d in report.rank_divergence or ()]


@dataclass(frozen=True)
class RanksView:
    """The rank section, built once: heading, a row per rank of each divergent function, where
    each one's ranks part, and the advice."""

    heading: str
    divergent: bool
    rows: tuple[tuple[str, ...], ...]
    partings: tuple[tuple[str, ...], ...]
    advice: tuple[str, ...]


def view(report: WatchReport) -> RanksView | None:
    """None where there was no second rank to compare."""
    head = heading(report)
    if head is None:
        return None
    divs = report.rank_divergence or ()
    return RanksView(
        head,
        bool(divs),
        tuple(tuple(r) for d in divs for r in rows(d)),
        tuple(tuple(parting(d)) for d in divs),
        tuple(advice(report)),
    )
