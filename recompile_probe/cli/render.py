"""`render`: a saved report in another format (no torch)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Optional

import typer

from .common import (
    DEBUG_OPTION,
    OUTPUT_OPTION,
    VERBOSE_OPTION,
    Document,
    app,
    check_format,
    emit,
    errors_to_exit,
    formats,
    read_saved,
)
from .registry import summary

if TYPE_CHECKING:
    from ..records.report import ScenarioRef
    from ..strategies.advice import Definitions


@app.command(help=summary("render"))
def render(
    report: Path = typer.Argument(
        ..., help="A JSON report written by `run`, `check`, `watch` or `summarize`."
    ),
    fmt: str = typer.Option(
        "table",
        "--format",
        "-f",
        help=f"{formats.help_text(Document.REPORTS)} (a `watch` / `summarize` report: "
        f"{formats.help_text(Document.FUNCTIONS)})",
    ),
    output: Optional[Path] = OUTPUT_OPTION,
    verbose: bool = VERBOSE_OPTION,
    debug: bool = DEBUG_OPTION,
) -> None:
    with errors_to_exit(debug):
        saved = read_saved(report)
        # a program's functions (`watch`, `summarize`), else run reports (one, or a bundle's)
        document = Document.REPORTS if isinstance(saved, list) else Document.FUNCTIONS
        chosen = check_format(document, fmt)
        known = _definitions(saved) if chosen.findings else None
        emit(document, saved, fmt, output, verbose=verbose, definitions=known)


def _definitions(saved: object) -> dict[ScenarioRef, Definitions]:
    """The scenario files the reports name, where they are there and unchanged: a custom
    strategy's fix is written from its file (a report holds only its name)."""
    from ..scenario.load import definitions_at

    found = {}
    for report in saved if isinstance(saved, list) else ():
        if report.scenario in found:  # a bundle's reports of one file: loaded once
            continue
        known = definitions_at(report.scenario.path, report.scenario.sha256)
        if known is not None:
            found[report.scenario] = known
    return found
