"""`render`: a saved report in another format (no torch)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Optional

import typer

from .common import (
    DEBUG_OPTION,
    FORMAT_OPTION,
    VERBOSE_OPTION,
    app,
    check_format,
    emit,
    emit_functions,
    errors_to_exit,
    functions_format,
    read_saved,
    term_width,
    use_color,
    write_atomic,
)


@app.command(
    help="Re-render a saved JSON report (from `run`, a bundle from `check`, or `watch` / "
    "`summarize`) without running anything; no torch needed."
)
def render(
    report: Path = typer.Argument(
        ..., help="A JSON report written by `run`, `check`, `watch` or `summarize`."
    ),
    fmt: str = FORMAT_OPTION,
    output: Optional[Path] = typer.Option(None, "--output", "-o", help="Write to FILE."),
    verbose: bool = VERBOSE_OPTION,
    debug: bool = DEBUG_OPTION,
) -> None:
    with errors_to_exit(debug):
        saved = read_saved(report)
        if not isinstance(saved, list):  # a program's functions: the formats `watch` writes
            functions_format(fmt)
            emit_functions(saved, fmt, output, to_stderr=False)
            return
        check_format(fmt)
        reports = saved
        if len(reports) == 1:
            emit(reports[0], fmt, output, verbose)
            return
        from ..records.report import reports_to_json
        from ..render import junit as junit_mod
        from ..render.formats import render as render_one

        if fmt == "json":
            text = reports_to_json(reports)
        elif fmt == "junit":
            text = junit_mod.render_many(reports)
        elif fmt == "html":
            from ..render.html.report import render_reports

            text = render_reports(reports)  # one page, a section per report
        else:
            color = output is None and use_color()
            text = "\n".join(
                render_one(r, fmt, color=color, width=term_width(), verbose=verbose)
                for r in reports
            )
        if output is not None:
            write_atomic(output, text)
        else:
            sys.stdout.write(text)
