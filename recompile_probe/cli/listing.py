"""`targets` and `strategies`: what is built in."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from .common import DEBUG_OPTION, app, errors_to_exit, out
from .registry import summary


@app.command(help=summary("targets"))
def targets() -> None:
    from rich.table import Table

    from ..scenario.builtin_targets import BUILTIN_TARGETS

    table = Table(box=None, pad_edge=False, show_header=True, header_style="bold")
    for header in ("target", "params (defaults)", "what it is"):
        table.add_column(header, overflow="fold", no_wrap=header == "target")
    for t in BUILTIN_TARGETS.values():
        params = ", ".join(f"{k}={v}" for k, v in t.params.items())
        table.add_row(t.name, params, t.description)
    out.print(table)
    out.print(
        "\nUser targets: package.module:fn or path/to/file.py:fn, with `inputs:` (tensor specs) "
        "or `factory:` + `batch_dims:` in the scenario."
    )


@app.command(help=summary("strategies"))
def strategies(
    scenario: Optional[Path] = typer.Argument(
        None, help="Also list this scenario's custom_strategies.", show_default=False
    ),
    debug: bool = DEBUG_OPTION,
) -> None:
    with errors_to_exit(debug):
        from rich.table import Table

        from ..strategies.builtins import BUILTINS

        known = dict(BUILTINS)
        if scenario is not None:
            from ..scenario.load import load

            loaded = load(scenario)
            known.update({name: loaded.strategy(name) for name in loaded.known_strategies()})
        table = Table(box=None, pad_edge=False, show_header=True, header_style="bold")
        for header in ("strategy", "what it does", "knobs"):
            table.add_column(header, overflow="fold", no_wrap=header == "strategy")
        for s in known.values():
            table.add_row(s.name, s.description, s.summary())
        out.print(table)
