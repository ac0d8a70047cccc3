"""`schema`: the JSON Schema of the scenario file or of a JSON report (no torch)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Optional

import typer

from .common import DEBUG_OPTION, OUTPUT_OPTION, app, err, errors_to_exit, write_atomic
from .registry import summary


@app.command(help=summary("schema"))
def schema(
    name: str = typer.Argument(
        ...,
        help="scenario | report (run) | check (check --json) | "
        "watch (watch, summarize) | explain | suggest",
        show_default=False,
    ),
    output: Optional[Path] = OUTPUT_OPTION,
    path: bool = typer.Option(
        False,
        "--path",
        help="Print where the copy shipped in the "
        "package is instead (for a modeline or an editor setting).",
    ),
    debug: bool = DEBUG_OPTION,
) -> None:
    with errors_to_exit(debug):
        from ..errors import UsageError, did_you_mean
        from ..schema import catalog as schema_mod

        if name not in schema_mod.SCHEMAS:
            names = list(schema_mod.SCHEMAS)
            raise UsageError(
                f"unknown schema {name!r}",
                did_you_mean(name, names) or f"Schemas: {', '.join(names)}.",
            )
        if path:
            typer.echo(str(schema_mod.shipped_path(name)))
            return
        text = schema_mod.dumps(schema_mod.SCHEMAS[name]())
        if output is not None:
            write_atomic(output, text)
            err.print(f"schema written to {output}")
        else:
            sys.stdout.write(text)
