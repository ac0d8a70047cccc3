"""`summarize`: TORCH_TRACE logs as the per-function table (no torch)."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from ..errors import ExitCode
from .common import (
    ANNOTATIONS_OPTION,
    CODEQUALITY_OPTION,
    DEBUG_OPTION,
    Document,
    annotate,
    app,
    check_annotations,
    check_format,
    emit,
    errors_to_exit,
    format_option,
    over_budget,
    rank_gate,
    writable,
)
from .registry import summary


@app.command(help=summary("summarize"))
def summarize(
    trace: Path = typer.Argument(..., help="A trace directory or one trace file."),
    fmt: str = format_option(Document.FUNCTIONS),
    output: Optional[Path] = typer.Option(None, "--output", "-o", help="Write the report here."),
    pattern: Optional[str] = typer.Option(None, "--filter", help="Only matching functions."),
    max_recompiles: Optional[int] = typer.Option(
        None, "--max-recompiles", min=0, help="Exit 1 when the traces hold more recompiles."
    ),
    fail_on_rank_divergence: bool = typer.Option(
        False,
        "--fail-on-rank-divergence",
        help="Exit 1 when the per-rank traces (rank from each file's records or its "
        "name, dedicated_log_torch_trace_rank_N_*.log) show a function compiled differently "
        "between ranks.",
    ),
    annotations: Optional[str] = ANNOTATIONS_OPTION,
    codequality: Optional[Path] = CODEQUALITY_OPTION,
    debug: bool = DEBUG_OPTION,
) -> None:
    with errors_to_exit(debug):
        from ..commands.summarize import summarize as summarize_traces

        check_format(Document.FUNCTIONS, fmt)
        check_annotations(annotations)
        writable("--codequality", codequality)
        report = summarize_traces(trace, pattern)
        emit(Document.FUNCTIONS, report, fmt, output)
        annotate(Document.FUNCTIONS, report, annotations)
        if codequality is not None:
            emit(Document.FUNCTIONS, report, "codequality", codequality)
        budget = over_budget(report, max_recompiles)
        if rank_gate(report, fail_on_rank_divergence) or budget:
            raise typer.Exit(int(ExitCode.BUDGET))
