"""`watch`: a whole program under the recorder."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Optional

import typer

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
    err,
    errors_to_exit,
    format_option,
    over_budget,
    rank_gate,
    trace_dir_arg,
    writable,
)
from .registry import summary


@app.command(
    help=summary(
        "watch",
        "Usage: recompile-probe watch [OPTIONS] -- python SCRIPT.py ARGS... (also python -m "
        "MODULE, and pytest ARGS). The program keeps its argv, stdin, stdout and exit code; the "
        "report goes to stderr (or --output). With ranks (torchrun, torch.distributed.run, "
        "torch.multiprocessing.spawn) the report compares them: functions the ranks compiled "
        "differently. Exit: the program's code, or 1 when --max-recompiles is exceeded, or when "
        "--fail-on-rank-divergence finds ranks that compiled differently (a failing program's "
        "own code wins).",
    ),
    context_settings={"allow_extra_args": True, "ignore_unknown_options": True},
)
def watch(
    ctx: typer.Context,
    max_recompiles: Optional[int] = typer.Option(
        None, "--max-recompiles", min=0, help="Exit 1 when the program recompiles more."
    ),
    fmt: str = format_option(Document.FUNCTIONS),
    output: Optional[Path] = typer.Option(None, "--output", "-o", help="Write the report here."),
    trace_dir: Optional[Path] = typer.Option(
        None,
        "--trace-dir",
        help="Also write TORCH_TRACE structured logs there (for tlparse "
        "or `recompile-probe summarize`).",
    ),
    pattern: Optional[str] = typer.Option(
        None, "--filter", help="Only functions whose name or file matches (glob or substring)."
    ),
    quiet: bool = typer.Option(
        False,
        "--quiet",
        "-q",
        help="With --output: nothing of the tool's own on stderr (the program's output only; "
        "warnings about what could not be recorded still show).",
    ),
    fail_on_rank_divergence: bool = typer.Option(
        False,
        "--fail-on-rank-divergence",
        help="Exit 1 when the ranks of a distributed job compiled some function differently "
        "(compiles, recompiles, failed compiles, recompile-limit hits or graphs), with the "
        "divergence summary on stderr. The program's own failure exit code still wins.",
    ),
    annotations: Optional[str] = ANNOTATIONS_OPTION,
    codequality: Optional[Path] = CODEQUALITY_OPTION,
    debug: bool = DEBUG_OPTION,
) -> None:
    with errors_to_exit(debug):
        from dataclasses import replace

        from rich.markup import escape

        from ..commands import watch as watch_mod

        check_format(Document.FUNCTIONS, fmt)
        writable("--output", output)
        writable("--codequality", codequality)
        check_annotations(annotations)
        command = list(ctx.args)
        outcome = watch_mod.run(command, trace_dir_arg(trace_dir))
        report = watch_mod.report(command, outcome, pattern)
        for warning in outcome.warnings():
            err.print(f"[yellow]warning:[/] {escape(warning)}")
        # stdout is the program's: the report goes to stderr
        emit(Document.FUNCTIONS, report, fmt, output, stream=sys.stderr, quiet=quiet)
        # stderr too: the runner reads workflow commands from both streams
        annotate(Document.FUNCTIONS, report, annotations, stream=sys.stderr)
        if codequality is not None:
            emit(Document.FUNCTIONS, report, "codequality", codequality, quiet=quiet)
        # The budget covers every process: a DataLoader worker's recompile is one too.
        whole = replace(report, functions=tuple(watch_mod.all_functions(report)))
        budget = over_budget(whole, max_recompiles)
        diverged = rank_gate(report, fail_on_rank_divergence)
        if outcome.code == 0 and diverged:
            raise typer.Exit(1)
        raise typer.Exit(1 if budget else outcome.code)
