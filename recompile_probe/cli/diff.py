"""`diff`: two saved reports side by side (no torch)."""

from __future__ import annotations

import sys
from pathlib import Path

import typer

from ..errors import ExitCode, UsageError
from .common import DEBUG_OPTION, app, errors_to_exit, read_reports, term_width, use_color


@app.command(
    help="Compare two JSON reports side by side (e.g. two torch versions). No torch "
    "needed, nothing is run."
)
def diff(
    old: Path = typer.Argument(..., help="The earlier report (or bundle)."),
    new: Path = typer.Argument(..., help="The later report (or bundle)."),
    tolerance: int = typer.Option(0, "--tolerance", min=0, help="Allowed increase per count."),
    fmt: str = typer.Option("table", "--format", "-f", help="table | markdown"),
    fail_on_regression: bool = typer.Option(
        False, "--fail-on-regression", help="Exit 1 when NEW regressed against OLD."
    ),
    debug: bool = DEBUG_OPTION,
) -> None:
    with errors_to_exit(debug):
        from ..analysis import baseline as baseline_mod
        from ..render import markdown as markdown_mod
        from ..render.terminal import diff as terminal

        if fmt not in ("table", "markdown"):
            raise UsageError(f"--format: expected table or markdown, got {fmt!r}")
        pairs = baseline_mod.pair(read_reports(old), read_reports(new))
        if fmt == "markdown":
            sys.stdout.write(markdown_mod.diff(pairs, tolerance))
        else:
            color = use_color()
            sys.stdout.write(terminal.render(pairs, tolerance, color=color, width=term_width()))
        regressed = any(
            c.kind == "regression" for p in pairs for c in baseline_mod.changes(p, tolerance)
        )
        if fail_on_regression and regressed:
            raise typer.Exit(int(ExitCode.BUDGET))
