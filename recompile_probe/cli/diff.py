"""`diff`: two saved reports side by side (no torch)."""

from __future__ import annotations

from pathlib import Path

import typer

from ..errors import ExitCode
from .common import (
    DEBUG_OPTION,
    Document,
    app,
    check_format,
    emit,
    errors_to_exit,
    format_option,
    read_reports,
)
from .registry import summary


@app.command(help=summary("diff"))
def diff(
    old: Path = typer.Argument(..., help="The earlier report (or bundle)."),
    new: Path = typer.Argument(..., help="The later report (or bundle)."),
    tolerance: int = typer.Option(0, "--tolerance", min=0, help="Allowed increase per count."),
    fmt: str = format_option(Document.DIFF),
    fail_on_regression: bool = typer.Option(
        False, "--fail-on-regression", help="Exit 1 when NEW regressed against OLD."
    ),
    debug: bool = DEBUG_OPTION,
) -> None:
    with errors_to_exit(debug):
        from ..analysis.baseline import Comparison, pair

        check_format(Document.DIFF, fmt)
        comparison = Comparison(tuple(pair(read_reports(old), read_reports(new))), tolerance)
        emit(Document.DIFF, comparison, fmt)
        if fail_on_regression and comparison.regressed:
            raise typer.Exit(int(ExitCode.BUDGET))
