"""`explain`: cache entries, guard diffs, reasons and the measured fixes."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import List, Optional

import typer

from ..errors import ExitCode, UsageError
from .common import (
    DEBUG_OPTION, QUIET_OPTION, RUN_TIMEOUT_OPTION, app, use_color, csv_list, err,
    errors_to_exit, print_tlparse, progress, trace_dir_arg, term_width, writable, write_atomic)


@app.command(help="Explain recompiles: cache entries and their guards, guard diffs between "
             "entries, classified reasons, the strategies that measurably removed each one, and "
             "what each strategy costs per call.")
def explain(
    scenario: Optional[Path] = typer.Argument(
        None, help="Scenario YAML (default: the built-in configs/logprobs.yaml).",
        show_default=False),
    strategy: Optional[List[str]] = typer.Option(
        None, "--strategy", "-s", help="Explain these strategies (repeat, or a,b). Default: "
        "every strategy that compiled more than once. All of the scenario's strategies still "
        "run: they are the measured fixes."),
    sequence: Optional[str] = typer.Option(None, "--sequence", help="Only this sequence (by "
                                           "name)."),
    backend: Optional[str] = typer.Option(None, "--backend", "-b",
                                          help="eager | aot_eager | inductor"),
    fmt: str = typer.Option("table", "--format", "-f", help="table | json | markdown | html"),
    output: Optional[Path] = typer.Option(None, "--output", "-o", help="Write to FILE."),
    trace_dir: Optional[Path] = typer.Option(None, "--trace-dir", help="As for `run`."),
    jobs: str = typer.Option("1", "--jobs", "-j", help="As for `run`: worker processes (a "
                             "number or auto)."),
    timeout: Optional[float] = RUN_TIMEOUT_OPTION,
    quiet: bool = QUIET_OPTION,
    debug: bool = DEBUG_OPTION,
) -> None:
    with errors_to_exit(debug):
        from .. import explain as explain_mod
        from .. import scenario as scenario_mod
        from ..render import explanation
        from ..session import parse_jobs, run_scenario

        workers = parse_jobs(jobs)
        if timeout is not None and (workers == 1 or timeout <= 0):
            raise UsageError("--timeout needs --jobs N (2 or more) and a positive number of "
                             "seconds")
        if fmt not in ("table", "json", "markdown", "html"):
            raise UsageError(f"--format: expected table, json, markdown or html, got {fmt!r}")
        writable("--output", output)
        loaded = scenario_mod.with_overrides(scenario_mod.load(scenario), backend=backend)
        chosen = [n for item in strategy or () for n in csv_list(item, "--strategy") or ()] or None
        if chosen is not None:
            loaded = scenario_mod.with_overrides(loaded, strategies=[
                *loaded.strategies, *[c for c in chosen if c not in loaded.strategies]])
        if sequence is not None and sequence not in loaded.sequences:
            from ..scenario import suggest

            raise UsageError(f"--sequence: no sequence named {sequence!r} in the scenario",
                             suggest(sequence, loaded.sequences) or
                             f"Sequences: {', '.join(loaded.sequences)}.")
        total = len(loaded.strategies) * len(loaded.sequences)
        with progress(total, quiet) as (on_start, on_run):
            report = run_scenario(loaded, trace_dir=trace_dir_arg(trace_dir), debug=debug,
                                  on_start=on_start, on_run=on_run, jobs=workers,
                                  timeout=timeout)
        from ..targets import loader

        known = {name: loaded.strategy(name) for name in loaded.known_strategies()}
        explanations, notes = explain_mod.explain(report, known,
                                                  loader.load(loaded).dim_sources(), chosen,
                                                  sequence)
        if fmt == "json":
            text = explanation.as_json(report, explanations, notes)
        elif fmt == "markdown":
            text = explanation.markdown(report, explanations, notes)
        elif fmt == "html":
            from ..render import html

            text = html.explanation(report, explanations, notes)
        else:
            color = output is None and use_color()
            text = explanation.render(report, explanations, notes, color=color,
                                      width=min(term_width(), 100) if output is None else 100)
        if output is not None:
            write_atomic(output, text)
        else:
            sys.stdout.write(text)
        print_tlparse(report)
        if not report.complete:
            err.print("[bold red]interrupted[/]: this covers only the runs that finished.")
            raise typer.Exit(int(ExitCode.INTERRUPTED))
