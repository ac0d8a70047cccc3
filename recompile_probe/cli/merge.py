"""`merge`: shard reports (`check --shard K/N --json`) -> the unsharded report (no torch)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import List, Optional

import typer

from ..errors import ExitCode, ReportError
from .common import DEBUG_OPTION, app, err, errors_to_exit, writable, write_atomic
from .registry import summary


@app.command(
    help=summary(
        "merge",
        "Exit 0: merged; 2: the shards do not make one report (another plan, a shard missing "
        "or twice, runs overlapping or lost, another torch); 3: a shard could not run a "
        "scenario (it is left out, as `check` leaves it out).",
    )
)
def merge(
    shards: List[Path] = typer.Argument(..., help="Every shard's --json report."),
    output: Optional[Path] = typer.Option(
        None, "--output", "-o", help="Write the merged report here (default: stdout)."
    ),
    debug: bool = DEBUG_OPTION,
) -> None:
    with errors_to_exit(debug):
        from ..commands import shard as shard_mod
        from ..records.report import reports_to_json

        writable("--output", output)
        parts = []
        for path in shards:
            try:
                text = path.read_text(encoding="utf-8")
            except OSError as exc:
                raise ReportError(f"{path}: cannot read ({exc.strerror or exc})") from None
            parts.append(shard_mod.read(text, str(path)))
        merged = shard_mod.merge(parts)
        text = reports_to_json(list(merged.reports))
        if output is not None:
            write_atomic(output, text)
        else:
            sys.stdout.write(text)
        for note in merged.notes:
            err.print(f"note: {note}", soft_wrap=True)
        runs = sum(len(r.runs) for r in merged.reports)
        err.print(
            f"merged {len(parts)} shards: {len(merged.reports)} scenario"
            f"{'s' * (len(merged.reports) != 1)}, {runs} runs"
            + (f" -> {output}" if output is not None else "")
        )
        if merged.failures:
            for name, where, message in merged.failures:
                err.print(
                    f"error: scenario {name} ({where}) could not run in a shard: {message}",
                    soft_wrap=True,
                    markup=False,
                )
            raise typer.Exit(int(ExitCode.TARGET_OR_INTERNAL))
