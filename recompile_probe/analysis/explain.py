"""`explain`: why each recompile happened, which guard changed, and which strategy measurably
removed it in the same run. Pure functions over result records (no torch).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..records import encode
from ..records.report import Report
from ..records.report import to_dict as report_dict
from ..records.run import CacheEntry, Run
from ..strategies.advice import Arguments
from ..strategies.model import Strategy
from .diffs import GuardDiff, aliasing_guards, diffs, kinds, leaf_kinds, shape_env_guards
from .errors import ErrorExplanation, explain_error
from .fixes import Recompile, recompiles
from .notes import noise_note, slow_winner
from .sequence import run_points


@dataclass(frozen=True)
class Explanation:
    run: Run
    diffs: tuple[GuardDiff, ...]
    recompiles: tuple[Recompile, ...]
    #: the run errored: the error, the line behind it and why the strategy cannot help
    error: ErrorExplanation | None = None


@dataclass(frozen=True)
class Explained:
    """`explain`'s document: the report the explanations read, and the cost notes."""

    report: Report
    explanations: tuple[Explanation, ...]
    notes: tuple[str, ...]
    #: what the user should know about how this was explained (stderr, not the explanation)
    warnings: tuple[str, ...] = ()


def explain(
    report: Report,
    strategies: Mapping[str, Strategy],
    args: Arguments,
    chosen: list[str] | None = None,
    sequence: str | None = None,
) -> tuple[list[Explanation], list[str]]:
    """Explanations for the chosen strategies (default: every one that compiled more than once
    or errored), and the cost notes per sequence."""
    out, notes = [], []
    for name, _ in report.sequences():
        if sequence is not None and name != sequence:
            continue
        runs = report.runs_for(name)
        for note in (slow_winner(runs), noise_note(runs)):
            if note:
                notes.append(f"{name}: {note}")
        for run in runs:
            wanted = (
                run.strategy in chosen
                if chosen is not None
                else (run.compiles or 0) > 1 or run.status == "error"
            )
            if wanted:
                out.append(
                    Explanation(
                        run,
                        tuple(diffs(run)),
                        tuple(recompiles(run, runs, strategies, args)),
                        explain_error(run, strategies.get(run.strategy)),
                    )
                )
    return out, notes


def to_dict(report: Report, explanations: list[Explanation], notes: list[str]) -> dict[str, Any]:
    def entry(e: CacheEntry) -> dict[str, Any]:
        return {
            "compile_id": e.compile_id,
            "function": e.function,
            "call_index": e.call_index,
            "batch_size": e.batch_size,
            "sizes": e.sizes,
            "guard_count": e.guard_count,
            "leaf_guard_count": e.leaf_guard_count,
            "guards_by_kind": kinds(e),
            "leaf_guards_by_kind": leaf_kinds(e),
            "shape_env_guards": shape_env_guards(e),
            "object_aliasing_guards": aliasing_guards(e),
            "guards": [encode.data(g) for g in e.guards],
        }

    return {
        "schema_version": 1,
        "explanations": [
            {
                "sequence_name": x.run.sequence_name,
                "sequence": list(x.run.sequence),
                "points": [p.to_dict() for p in run_points(x.run)],
                "strategy": x.run.strategy,
                "compiles": x.run.compiles,
                "recompiles": x.run.recompiles,
                "steady_state_us": x.run.steady_state_us,
                "eager_us": x.run.eager_us,
                "steady_state_noisy": x.run.steady_state_noisy,
                "guard_check_us": x.run.guard_check_us,
                "guard_latency_us_cold": x.run.guard_latency_us,
                "entries": [entry(e) for e in x.run.entries],
                "diffs": [encode.data(d) for d in x.diffs],
                "recompile_reasons": [encode.data(r) for r in x.recompiles],
                "specializations": encode.data(x.run.specializations),
                "graph_breaks": encode.data(x.run.graph_breaks),
                "error": encode.data(x.error) if x.error is not None else None,
            }
            for x in explanations
        ],
        "costs": [
            {
                "sequence_name": r.sequence_name,
                "strategy": r.strategy,
                "compiles": r.compiles,
                "steady_state_us": r.steady_state_us,
                "steady_state_min_us": r.steady_state_min_us,
                "steady_state_p90_us": r.steady_state_p90_us,
                "steady_state_noisy": r.steady_state_noisy,
                "eager_us": r.eager_us,
                "guard_check_us": r.guard_check_us,
                "guard_latency_us_cold": r.guard_latency_us,
            }
            for r in report.runs
        ],
        "notes": notes,
        "report": report_dict(report),
    }
