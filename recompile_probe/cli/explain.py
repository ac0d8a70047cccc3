"""`explain`: cache entries, guard diffs, reasons and the measured fixes."""

from __future__ import annotations

from pathlib import Path
from typing import List, Optional

import typer
from rich.markup import escape

from ..errors import ExitCode, UsageError
from .common import (
    BACKEND_OPTION,
    COVER_OPTION,
    DEBUG_OPTION,
    OUTPUT_OPTION,
    QUIET_OPTION,
    RUN_TIMEOUT_OPTION,
    SCENARIO_ARGUMENT,
    VERBOSE_OPTION,
    Document,
    app,
    check_format,
    csv_list,
    emit,
    err,
    errors_to_exit,
    format_option,
    names_arg,
    print_tlparse,
    progress,
    read_report,
    trace_dir_arg,
    writable,
)
from .registry import summary


@app.command(help=summary("explain"))
def explain(
    scenario: Optional[Path] = SCENARIO_ARGUMENT,
    strategy: Optional[List[str]] = typer.Option(
        None,
        "--strategy",
        "-s",
        help="Explain these strategies (repeat, or a,b). Default: "
        "every strategy that compiled more than once or errored. All of the scenario's "
        "strategies still run (unless --strategies): they are the measured fixes.",
    ),
    strategies: Optional[List[str]] = typer.Option(
        None,
        "--strategies",
        help="Run only these strategies (repeat, or a,b), beside the --strategy ones: the "
        "measured fixes are then only among them. Default: every strategy of the scenario "
        "(with --from-report: every one the report holds).",
    ),
    from_report: Optional[Path] = typer.Option(
        None,
        "--from-report",
        help="Explain a saved `run` report (run SCENARIO -f json -o REPORT) instead of "
        "running the scenario again: only strategies it lacks run. The scenario file it "
        "names must be unchanged (pass SCENARIO if it moved). No torch when nothing runs.",
    ),
    sequence: Optional[str] = typer.Option(
        None, "--sequence", help="Only this sequence (by name)."
    ),
    backend: Optional[str] = BACKEND_OPTION,
    cover: Optional[str] = COVER_OPTION,
    fmt: str = format_option(Document.EXPLAIN),
    output: Optional[Path] = OUTPUT_OPTION,
    trace_dir: Optional[Path] = typer.Option(None, "--trace-dir", help="As for `run`."),
    jobs: str = typer.Option(
        "1", "--jobs", "-j", help="As for `run`: worker processes (a number or auto)."
    ),
    timeout: Optional[float] = RUN_TIMEOUT_OPTION,
    quiet: bool = QUIET_OPTION,
    verbose: bool = VERBOSE_OPTION,
    debug: bool = DEBUG_OPTION,
) -> None:
    with errors_to_exit(debug):
        from ..commands import explain as explain_mod
        from ..execution.session import parse_jobs
        from ..scenario.load import load
        from ..scenario.overrides import with_overrides

        workers = parse_jobs(jobs)
        if timeout is not None and (workers == 1 or timeout <= 0):
            raise UsageError(
                "--timeout needs --jobs N (2 or more) and a positive number of seconds"
            )
        check_format(Document.EXPLAIN, fmt)
        writable("--output", output)
        chosen = names_arg(strategy, "--strategy")
        only = [n for item in strategies or () for n in csv_list(item, "--strategies") or ()]
        running = {
            "trace_dir": trace_dir_arg(trace_dir),
            "debug": debug,
            "jobs": workers,
            "timeout": timeout,
        }
        if from_report is not None:
            if cover is not None:
                raise UsageError(
                    "--cover and --from-report exclude each other",
                    "A saved report keeps the coverage its runs decided; run the scenario "
                    "again to decide another range.",
                )
            if backend is not None:
                raise UsageError(
                    "--backend and --from-report exclude each other",
                    "The report's runs keep their backend; a strategy the report lacks runs "
                    "under it too. Run the scenario again for another backend.",
                )
            plan = explain_mod.plan_report(
                read_report(from_report),
                str(from_report),
                scenario,
                chosen=chosen,
                only=only or None,
                sequence=sequence,
            )
            with progress(plan.missing_runs, quiet or not plan.missing) as (on_start, on_run):
                done = explain_mod.explain_planned(
                    plan,
                    chosen=chosen,
                    sequence=sequence,
                    on_start=on_start,
                    on_run=on_run,
                    **running,
                )
        else:
            loaded = with_overrides(load(scenario), backend=backend, cover=cover)
            names = explain_mod.to_run(loaded.strategies, only or None, chosen)
            with progress(len(names) * len(loaded.sequences), quiet) as (on_start, on_run):
                done = explain_mod.explain_scenario(
                    loaded,
                    chosen=chosen,
                    only=only or None,
                    sequence=sequence,
                    on_start=on_start,
                    on_run=on_run,
                    **running,
                )
        for line in done.warnings:
            err.print(f"[yellow]warning:[/] {escape(line)}", soft_wrap=True)
        emit(Document.EXPLAIN, done, fmt, output, verbose=verbose)
        report = done.report
        print_tlparse(report)
        if not report.complete:
            err.print("[bold red]interrupted[/]: this covers only the runs that finished.")
            raise typer.Exit(int(ExitCode.INTERRUPTED))
