"""`run`: every strategy of a scenario, compared."""

from __future__ import annotations

from pathlib import Path
from typing import List, Optional

import typer

from ..errors import ExitCode, UsageError
from .common import (
    BACKEND_OPTION,
    CLEAN_ENV_OPTION,
    COUNTS_HELP,
    COVER_OPTION,
    DEBUG_OPTION,
    QUIET_OPTION,
    SCENARIO_ARGUMENT,
    VERBOSE_OPTION,
    Document,
    app,
    check_format,
    emit,
    err,
    errors_to_exit,
    format_option,
    names_arg,
    print_tlparse,
    progress,
    saving,
    sizes_arg,
    trace_dir_arg,
    writable,
)
from .registry import summary


@app.command(help=summary("run", COUNTS_HELP))
def run(
    scenario: Optional[Path] = SCENARIO_ARGUMENT,
    strategies: Optional[List[str]] = typer.Option(
        None,
        "--strategies",
        "-s",
        help="Strategies to run (repeat, or a,b; default: the "
        "scenario's). See `recompile-probe strategies`.",
    ),
    sequence: Optional[str] = typer.Option(
        None,
        "--sequence",
        help="Ad-hoc sequence replacing the scenario's: batch sizes, e.g. "
        '1,2,8, or points, e.g. "B=1,S=7; B=2,S=33".',
    ),
    backend: Optional[str] = BACKEND_OPTION,
    cover: Optional[str] = COVER_OPTION,
    fmt: str = format_option(Document.REPORTS),
    output: Optional[Path] = typer.Option(
        None, "--output", "-o", help="Write the report to FILE (atomically) instead of stdout."
    ),
    isolate: str = typer.Option(
        "inline", "--isolate", help="inline (one process) | process (a fresh process per strategy)"
    ),
    timeout: Optional[float] = typer.Option(
        None,
        "--timeout",
        help="Seconds per strategy with --isolate process (per run with "
        "--jobs N); past it the unfinished runs are status error.",
    ),
    jobs: str = typer.Option(
        "1",
        "--jobs",
        "-j",
        help="Worker processes running (strategy, sequence) runs side by "
        "side, reused between runs: a number or auto (one per core). Above 1 implies "
        "--isolate process (the same report, apart from timings).",
    ),
    trace_dir: Optional[Path] = typer.Option(
        None,
        "--trace-dir",
        help="Write a structured trace (TORCH_TRACE format) per strategy "
        "under DIR/<strategy>/<sequence>.log, and print the tlparse command for each.",
    ),
    quiet: bool = QUIET_OPTION,
    verbose: bool = VERBOSE_OPTION,
    debug: bool = DEBUG_OPTION,
    clean_env: bool = CLEAN_ENV_OPTION,
) -> None:
    with errors_to_exit(debug):
        from ..execution.session import (
            ISOLATION_MODES,
            clean_environment,
            cleared,
            parse_jobs,
            run_scenario,
        )
        from ..scenario.load import load
        from ..scenario.overrides import with_overrides

        chosen = check_format(Document.REPORTS, fmt)
        if isolate not in ISOLATION_MODES:
            raise UsageError(f"--isolate: expected inline or process, got {isolate!r}")
        workers = parse_jobs(jobs)
        if workers > 1:
            isolate = "process"
        if timeout is not None and (isolate != "process" or timeout <= 0):
            raise UsageError(
                "--timeout needs --isolate process (or --jobs N) and a positive number of seconds"
            )
        writable("--output", output)
        loaded = with_overrides(
            load(scenario),
            strategies=names_arg(strategies, "--strategies"),
            sequence=sizes_arg(sequence),
            backend=backend,
            cover=cover,
        )
        total = len(loaded.strategies) * len(loaded.sequences) * (loaded.ranks or 1)
        with (
            clean_environment(clean_env) as inherited,
            progress(total, quiet) as (
                on_start,
                on_run,
            ),
        ):
            report = run_scenario(
                loaded,
                isolate=isolate,
                timeout=timeout,
                trace_dir=trace_dir_arg(trace_dir),
                debug=debug,
                on_start=on_start,
                on_run=saving(loaded, fmt, output, on_run),
                jobs=workers,
            )
        if clean_env:
            report = cleared(report, inherited)
        from ..scenario.model import definitions

        emit(
            Document.REPORTS,
            [report],
            fmt,
            output,
            verbose=verbose,
            definitions={report.scenario: definitions(loaded)},
        )
        print_tlparse(report)
        if not quiet and (output is not None or not chosen.terminal):  # the verdicts, for people
            from ..analysis.ranks import verdict as rank_verdict
            from ..analysis.verdicts import verdict

            for name, _ in report.sequences():
                if report.rank_runs is not None:
                    err.print(rank_verdict(report.rank_runs, name), soft_wrap=True)
                else:
                    err.print(verdict(name, report.runs_for(name)), soft_wrap=True)
        if not report.complete:
            err.print("[bold red]interrupted[/]: the report holds the runs that finished.")
            raise typer.Exit(int(ExitCode.INTERRUPTED))
