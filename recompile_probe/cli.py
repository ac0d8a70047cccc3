"""The command line: flags -> library calls; errors -> messages and exit codes.

Nothing here imports torch at import time, so `--help`, `--version`, `targets`, `strategies` and
`render` stay fast and work without torch.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any, Iterator, List, Optional

import typer
from rich.console import Console
from rich.markup import escape

from . import __version__
from .errors import ExitCode, ProbeError, UsageError

app = typer.Typer(
    name="recompile-probe",
    help="Find, explain and prevent torch.compile (Dynamo) recompilations.\n\n"
         "Drives a target through batch-size sequences under each specialization strategy and "
         "compares compiles, recompiles, guards, compile time, per-call cost and correctness.",
    no_args_is_help=True,
    add_completion=False,
    rich_markup_mode="rich",
    context_settings={"help_option_names": ["-h", "--help"]},
)

err = Console(stderr=True, highlight=False)

COUNTS_HELP = (
    "Columns: compiles = Dynamo compilations (metrics records, failed ones included); "
    "recompiles = compiles of a frame that already had a cache entry; graphs = graphs handed to "
    "the backend (what a CompileCounter counts); guards / shape guards = guard_count / "
    "shape_env_guard_count of the newest cache entry; µs/call = median of the last call repeated "
    "after the sequence (marks included)."
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"recompile-probe {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(False, "--version", callback=_version, is_eager=True,
                                 help="Print the version and exit."),
) -> None:
    """Find, explain and prevent torch.compile (Dynamo) recompilations."""


@contextlib.contextmanager
def _errors(debug: bool) -> Iterator[None]:
    """User mistakes -> one paragraph and exit 2/3; our own bugs -> exit 3 (traceback with --debug)."""
    try:
        yield
    except ProbeError as exc:
        if debug:
            err.print_exception()
        # escape: messages quote user text such as cache.keys[abc] that Rich would eat as markup
        err.print(f"[bold red]error:[/] {escape(exc.message)}", markup=True, soft_wrap=True)
        if exc.remedy:
            err.print(f"  {escape(exc.remedy)}", soft_wrap=True)
        raise typer.Exit(int(exc.exit_code)) from None
    except (typer.Exit, typer.Abort):
        raise
    except Exception as exc:  # noqa: BLE001
        if debug:
            err.print_exception()
        err.print(f"[bold red]internal error:[/] {type(exc).__name__}: {escape(str(exc))}",
                  soft_wrap=True)
        if not debug:
            err.print("  Re-run with --debug for the traceback, and please report it.")
        raise typer.Exit(int(ExitCode.TARGET_OR_INTERNAL)) from None


def _csv(value: str | None, what: str) -> list[str] | None:
    if value is None:
        return None
    items = [v.strip() for v in value.split(",") if v.strip()]
    if not items:
        raise UsageError(f"{what}: expected a comma-separated list, got {value!r}")
    return items


def _sizes(value: str | None) -> list[int] | str | None:
    if value is not None and "=" in value:  # points, e.g. "B=1,S=7; B=2,S=33": the scenario checks
        return value
    items = _csv(value, "--sequence")
    if items is None:
        return None
    try:
        sizes = [int(v) for v in items]
    except ValueError:
        raise UsageError(f"--sequence: batch sizes are integers, got {value!r}",
                         "e.g. --sequence 1,2,8") from None
    if any(s < 0 for s in sizes):
        raise UsageError(f"--sequence: batch sizes cannot be negative, got {value!r}")
    return sizes


def _writable(flag: str, path: Path | None) -> None:
    """Fail before any work when a report could not be written where asked."""
    if path is not None and not path.expanduser().parent.is_dir():
        raise UsageError(f"{flag}: folder {str(path.expanduser().parent)!r} does not exist")


def _color(stream: Any = None) -> bool:
    stream = stream or sys.stdout
    return stream.isatty() and "NO_COLOR" not in os.environ


def write_atomic(path: Path, text: str) -> None:
    """Write whole or not at all: a reader never sees half a report."""
    path = path.expanduser()
    if path.parent and not path.parent.exists():
        raise UsageError(f"--output: folder {str(path.parent)!r} does not exist")
    fd, tmp = tempfile.mkstemp(dir=path.parent or Path("."), prefix=f".{path.name}.",
                               suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def emit(report: object, fmt: str, output: Path | None) -> None:
    """The report to --output (atomically) or stdout; never both, never half."""
    from .render import render

    if output is not None:
        write_atomic(output, render(report, fmt, color=False, width=120))
        err.print(f"report written to {output}")
        return
    color = _color()
    sys.stdout.write(render(report, fmt, color=color, width=_width()))
    sys.stdout.flush()


QUIET_OPTION = typer.Option(False, "--quiet", "-q", help="No progress on stderr.")
DEBUG_OPTION = typer.Option(False, "--debug", help="Show tracebacks.")
FORMAT_OPTION = typer.Option("table", "--format", "-f", help="table | json | markdown | junit")


def _check_format(fmt: str) -> None:
    from .render import FORMATS

    if fmt not in FORMATS:
        from .scenario import suggest

        raise UsageError(f"--format: unknown format {fmt!r}",
                         suggest(fmt, FORMATS) or f"Formats: {', '.join(FORMATS)}.")


@app.command(help="Run a scenario under every strategy and compare them.\n\n" + COUNTS_HELP)
def run(
    scenario: Optional[Path] = typer.Argument(
        None, help="Scenario YAML (default: the built-in configs/logprobs.yaml).",
        show_default=False),
    strategies: Optional[str] = typer.Option(
        None, "--strategies", "-s", help="Comma-separated strategies to run (default: the "
        "scenario's). See `recompile-probe strategies`."),
    sequence: Optional[str] = typer.Option(
        None, "--sequence", help="Ad-hoc sequence replacing the scenario's: batch sizes, e.g. "
        "1,2,8, or points, e.g. \"B=1,S=7; B=2,S=33\"."),
    backend: Optional[str] = typer.Option(None, "--backend", "-b",
                                          help="eager | aot_eager | inductor"),
    fmt: str = FORMAT_OPTION,
    output: Optional[Path] = typer.Option(
        None, "--output", "-o", help="Write the report to FILE (atomically) instead of stdout."),
    isolate: str = typer.Option("inline", "--isolate",
                                help="inline (one process) | process (a fresh process per "
                                "strategy)"),
    timeout: Optional[float] = typer.Option(
        None, "--timeout", help="Seconds per strategy with --isolate process; past it the "
        "strategy's runs are status error."),
    trace_dir: Optional[Path] = typer.Option(
        None, "--trace-dir", help="Write a structured trace (TORCH_TRACE format) per strategy "
        "under DIR/<strategy>/<sequence>.log, and print the tlparse command for each."),
    quiet: bool = QUIET_OPTION,
    debug: bool = DEBUG_OPTION,
) -> None:
    with _errors(debug):
        from . import scenario as scenario_mod
        from .session import ISOLATION_MODES, run_scenario

        _check_format(fmt)
        if isolate not in ISOLATION_MODES:
            raise UsageError(f"--isolate: expected inline or process, got {isolate!r}")
        if timeout is not None and (isolate != "process" or timeout <= 0):
            raise UsageError("--timeout needs --isolate process and a positive number of seconds")
        _writable("--output", output)
        overrides = {"strategies": _csv(strategies, "--strategies"), "sequence": _sizes(sequence),
                     "backend": backend}
        loaded = scenario_mod.with_overrides(scenario_mod.load(scenario), **overrides)
        total = len(loaded.strategies) * len(loaded.sequences)
        with _progress(total, quiet) as (on_start, on_run):
            report = run_scenario(loaded, isolate=isolate, timeout=timeout, overrides=overrides,
                                  trace_dir=_trace_dir(trace_dir), debug=debug,
                                  on_start=on_start, on_run=_saving(loaded, fmt, output, on_run))
        emit(report, fmt, output)
        _print_tlparse(report)
        if not quiet and (output is not None or fmt != "table"):
            from .analysis import verdict

            for name, _ in report.sequences():
                err.print(verdict(name, report.runs_for(name)), soft_wrap=True)
        if not report.complete:
            err.print("[bold red]interrupted[/]: the report holds the runs that finished.")
            raise typer.Exit(int(ExitCode.INTERRUPTED))


def _saving(scenario: Any, fmt: str, output: Path | None, then: Any) -> Any:
    """With --output, rewrite the file after every finished run (marked incomplete), so a crash
    mid-scenario loses only the run in progress."""
    if output is None:
        return then
    from .model import replace
    from .render import render
    from .session import header

    finished: list = []

    def on_run(run: Any) -> None:
        finished.append(run)
        partial = replace(header(scenario), runs=tuple(finished), complete=False)
        write_atomic(output, render(partial, fmt, color=False, width=120))
        if then is not None:
            then(run)

    return on_run


def _trace_dir(path: Path | None) -> str | None:
    if path is None:
        return None
    path = path.expanduser()
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"--trace-dir: cannot create {str(path)!r} ({exc.strerror})") from None
    return str(path.resolve())


def _print_tlparse(report: Any) -> None:
    traced = [r for r in report.runs if r.trace_file]
    if not traced:
        return
    err.print("structured traces (open with tlparse, `pip install tlparse`):")
    for r in traced:
        out = str(Path(r.trace_file).with_suffix("")) + "_tlparse"
        err.print(f"  {r.sequence_name} / {r.strategy}: tlparse {r.trace_file} -o {out} "
                  "--no-browser", soft_wrap=True)


@contextlib.contextmanager
def _progress(total: int, quiet: bool) -> Iterator[tuple]:
    """A progress bar on an interactive stderr, one line per finished run otherwise."""
    if quiet:
        yield None, None
        return
    if not err.is_terminal:
        def line(r: Any) -> None:
            from .analysis import plural

            figures = (f"{plural(r.compiles or 0, 'compile')}, "
                       f"{plural(r.recompiles or 0, 'recompile')}"
                       if r.status == "ok" else (r.error.type if r.error else r.status))
            err.print(f"  {r.sequence_name} / {r.strategy}: {r.status} ({figures})")

        err.print(f"probing {total} runs...")
        yield None, line
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, \
        TimeElapsedColumn

    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                  TimeElapsedColumn(), console=err, transient=True) as progress:
        task = progress.add_task("starting torch", total=total)
        yield (lambda strategy, seqs: progress.update(task, description=f"{strategy} [{seqs}]"),
               lambda run: progress.advance(task))


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
    fmt: str = typer.Option("table", "--format", "-f", help="table | json | markdown"),
    output: Optional[Path] = typer.Option(None, "--output", "-o", help="Write to FILE."),
    trace_dir: Optional[Path] = typer.Option(None, "--trace-dir", help="As for `run`."),
    quiet: bool = QUIET_OPTION,
    debug: bool = DEBUG_OPTION,
) -> None:
    with _errors(debug):
        from . import explain as explain_mod
        from . import scenario as scenario_mod
        from .render import explanation
        from .session import run_scenario

        if fmt not in ("table", "json", "markdown"):
            raise UsageError(f"--format: expected table, json or markdown, got {fmt!r}")
        _writable("--output", output)
        loaded = scenario_mod.with_overrides(scenario_mod.load(scenario), backend=backend)
        chosen = [n for item in strategy or () for n in _csv(item, "--strategy") or ()] or None
        if chosen is not None:
            loaded = scenario_mod.with_overrides(loaded, strategies=[
                *loaded.strategies, *[c for c in chosen if c not in loaded.strategies]])
        if sequence is not None and sequence not in loaded.sequences:
            from .scenario import suggest

            raise UsageError(f"--sequence: no sequence named {sequence!r} in the scenario",
                             suggest(sequence, loaded.sequences) or
                             f"Sequences: {', '.join(loaded.sequences)}.")
        total = len(loaded.strategies) * len(loaded.sequences)
        with _progress(total, quiet) as (on_start, on_run):
            report = run_scenario(loaded, trace_dir=_trace_dir(trace_dir), debug=debug,
                                  on_start=on_start, on_run=on_run)
        from .targets import loader

        known = {name: loaded.strategy(name) for name in loaded.known_strategies()}
        explanations, notes = explain_mod.explain(report, known,
                                                  loader.load(loaded).dim_sources(), chosen,
                                                  sequence)
        if fmt == "json":
            text = explanation.as_json(report, explanations, notes)
        elif fmt == "markdown":
            text = explanation.markdown(report, explanations, notes)
        else:
            color = output is None and _color()
            text = explanation.render(report, explanations, notes, color=color,
                                      width=min(_width(), 100) if output is None else 100)
        if output is not None:
            write_atomic(output, text)
        else:
            sys.stdout.write(text)
        _print_tlparse(report)
        if not report.complete:
            err.print("[bold red]interrupted[/]: this covers only the runs that finished.")
            raise typer.Exit(int(ExitCode.INTERRUPTED))


@app.command(help="Run scenarios and gate on their budgets (the `expect:` section).\n\n"
             "Exit 0: every budget holds; 1: a budget is broken or the baseline regressed; "
             "2: usage or scenario error; 3: a target fails without torch.compile, or an "
             "internal error. Every violation is reported, not just the first.")
def check(
    scenarios: List[Path] = typer.Argument(..., help="Scenario files or directories of them."),
    strategy: Optional[List[str]] = typer.Option(
        None, "--strategy", "-s", help="Only these strategies (repeat, or a,b)."),
    max_recompiles: Optional[int] = typer.Option(
        None, "--max-recompiles", min=0, help="A budget for every run, over the files' own."),
    junit: Optional[Path] = typer.Option(None, "--junit", help="Write JUnit XML here."),
    markdown: Optional[Path] = typer.Option(None, "--markdown", help="Write a Markdown summary "
                                            "here (also appended to $GITHUB_STEP_SUMMARY)."),
    json_out: Optional[Path] = typer.Option(None, "--json", help="Write the JSON report here."),
    baseline: Optional[Path] = typer.Option(
        None, "--baseline", help="A JSON report to compare with: more compiles, recompiles, "
        "graphs or guards than it is a regression (exit 1)."),
    tolerance: int = typer.Option(0, "--tolerance", min=0, help="Allowed increase per count "
                                  "before it is a regression."),
    update_baseline: bool = typer.Option(
        False, "--update-baseline", help="Rewrite --baseline with this run (accepting its "
        "changes); created if missing."),
    quiet: bool = QUIET_OPTION,
    debug: bool = DEBUG_OPTION,
) -> None:
    with _errors(debug):
        from . import check as check_mod
        from .model import reports_to_json
        from .render import junit as junit_mod
        from .render import outcome as outcome_mod

        if update_baseline and baseline is None:
            raise UsageError("--update-baseline needs --baseline FILE")
        for flag, path in (("--junit", junit), ("--markdown", markdown), ("--json", json_out),
                           ("--baseline", baseline)):
            _writable(flag, path)
        names = [n for item in strategy or () for n in _csv(item, "--strategy") or ()] or None
        loaded = check_mod.load_all(scenarios, names, max_recompiles)
        stored = None
        if baseline is not None and (baseline.exists() or not update_baseline):
            stored = _read_reports(baseline)
        total = sum(len(s.strategies) * len(s.sequences) for s in loaded)
        with _progress(total, quiet) as (on_start, on_run):
            outcome = check_mod.run_check(loaded, baseline=stored if stored is not None else
                                          ([] if update_baseline else None),
                                          tolerance=tolerance, accept_baseline=update_baseline,
                                          on_start=on_start, on_run=on_run)
        color = _color()
        # CI logs have no width: never fold a recompile reason there.
        width = _width() if sys.stdout.isatty() else 240
        sys.stdout.write(outcome_mod.render(outcome, color=color, width=width))
        errors = [(s.name, s.path or "", e.message) for s, e in outcome.failures]
        if junit is not None:
            write_atomic(junit, junit_mod.render_many(outcome.reports, errors))
        md = outcome_mod.markdown(outcome)
        if markdown is not None:
            write_atomic(markdown, md)
        summary_file = os.environ.get("GITHUB_STEP_SUMMARY")
        if summary_file:
            with open(summary_file, "a", encoding="utf-8") as handle:
                handle.write(md + "\n")
        if json_out is not None:
            write_atomic(json_out, reports_to_json(outcome.reports))
        if update_baseline and baseline is not None and not outcome.failures \
                and not outcome.interrupted:
            write_atomic(baseline, reports_to_json(outcome.reports))
            err.print(f"baseline {baseline} updated")
        raise typer.Exit(int(outcome.exit_code))


def _width() -> int:
    return shutil.get_terminal_size((120, 24)).columns if sys.stdout.isatty() else 120


def _read_reports(path: Path) -> list:
    from .errors import ReportError
    from .model import reports_from_json

    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ReportError(f"{path}: cannot read ({exc.strerror or exc})") from None
    return reports_from_json(text, str(path))


@app.command(help="Compare two JSON reports side by side (e.g. two torch versions). No torch "
             "needed, nothing is run.")
def diff(
    old: Path = typer.Argument(..., help="The earlier report (or bundle)."),
    new: Path = typer.Argument(..., help="The later report (or bundle)."),
    tolerance: int = typer.Option(0, "--tolerance", min=0, help="Allowed increase per count."),
    fmt: str = typer.Option("table", "--format", "-f", help="table | markdown"),
    fail_on_regression: bool = typer.Option(False, "--fail-on-regression",
                                            help="Exit 1 when NEW regressed against OLD."),
    debug: bool = DEBUG_OPTION,
) -> None:
    with _errors(debug):
        from . import baseline as baseline_mod
        from .render import comparison

        if fmt not in ("table", "markdown"):
            raise UsageError(f"--format: expected table or markdown, got {fmt!r}")
        pairs = baseline_mod.pair(_read_reports(old), _read_reports(new))
        if fmt == "markdown":
            sys.stdout.write(comparison.markdown(pairs, tolerance))
        else:
            color = _color()
            sys.stdout.write(comparison.render(pairs, tolerance, color=color, width=_width()))
        regressed = any(c.kind == "regression" for p in pairs
                        for c in baseline_mod.changes(p, tolerance))
        if fail_on_regression and regressed:
            raise typer.Exit(int(ExitCode.BUDGET))


def _emit_functions(report: Any, fmt: str, output: Path | None, to_stderr: bool) -> None:
    from .model import watch_to_json
    from .render import functions

    if fmt == "json":
        text = watch_to_json(report)
    elif fmt == "markdown":
        text = functions.markdown(report)
    else:
        stream = sys.stderr if to_stderr else sys.stdout
        color = output is None and _color(stream)
        width = shutil.get_terminal_size((120, 24)).columns if stream.isatty() else 160
        text = functions.render(report, color=color and output is None, width=width)
    if output is not None:
        write_atomic(output, text)
        err.print(f"report written to {output}")
    elif to_stderr:
        sys.stderr.write(text)
        sys.stderr.flush()
    else:
        sys.stdout.write(text)


def _over_budget(report: Any, max_recompiles: int | None) -> bool:
    if max_recompiles is None:
        return False
    total = sum(f.recompiles for f in report.functions)
    if total > max_recompiles:
        err.print(f"[bold red]--max-recompiles {max_recompiles} exceeded:[/] {total} recompiles")
        return True
    return False


def _functions_format(fmt: str) -> None:
    if fmt not in ("table", "json", "markdown"):
        raise UsageError(f"--format: expected table, json or markdown, got {fmt!r}")


@app.command(
    help="Run a Python program with the recorder active from its first import, and report "
         "every compiled function: compiles, recompiles, graphs, graph breaks, cache entries, "
         "guards and the distinct recompile reasons.\n\n"
         "Usage: recompile-probe watch [OPTIONS] -- python SCRIPT.py ARGS... (also python -m "
         "MODULE, and pytest ARGS). The program keeps its argv, stdin, stdout and exit code; the "
         "report goes to stderr (or --output). Exit: the program's code, or 1 when "
         "--max-recompiles is exceeded.",
    context_settings={"allow_extra_args": True, "ignore_unknown_options": True},
)
def watch(
    ctx: typer.Context,
    max_recompiles: Optional[int] = typer.Option(
        None, "--max-recompiles", min=0, help="Exit 1 when the program recompiles more."),
    fmt: str = typer.Option("table", "--format", "-f", help="table | json | markdown"),
    output: Optional[Path] = typer.Option(None, "--output", "-o", help="Write the report here."),
    trace_dir: Optional[Path] = typer.Option(
        None, "--trace-dir", help="Also write TORCH_TRACE structured logs there (for tlparse "
        "or `recompile-probe summarize`)."),
    pattern: Optional[str] = typer.Option(
        None, "--filter", help="Only functions whose name or file matches (glob or substring)."),
    debug: bool = DEBUG_OPTION,
) -> None:
    with _errors(debug):
        from rich.markup import escape

        from . import watch as watch_mod
        from .model import replace

        _functions_format(fmt)
        _writable("--output", output)
        command = list(ctx.args)
        outcome = watch_mod.run(command, _trace_dir(trace_dir))
        report = watch_mod.report(command, outcome, pattern)
        for warning in outcome.warnings():
            err.print(f"[yellow]warning:[/] {escape(warning)}")
        _emit_functions(report, fmt, output, to_stderr=True)
        # The budget covers every process: a DataLoader worker's recompile is one too.
        whole = replace(report, functions=tuple(watch_mod.all_functions(report)))
        raise typer.Exit(1 if _over_budget(whole, max_recompiles) else outcome.code)


@app.command(help="Summarise TORCH_TRACE structured logs written by any run (TORCH_TRACE=dir "
             "python ..., several ranks allowed) into the same per-function table as `watch`. "
             "No torch needed.")
def summarize(
    trace: Path = typer.Argument(..., help="A trace directory or one trace file."),
    fmt: str = typer.Option("table", "--format", "-f", help="table | json | markdown"),
    output: Optional[Path] = typer.Option(None, "--output", "-o", help="Write the report here."),
    pattern: Optional[str] = typer.Option(None, "--filter", help="Only matching functions."),
    max_recompiles: Optional[int] = typer.Option(
        None, "--max-recompiles", min=0, help="Exit 1 when the traces hold more recompiles."),
    debug: bool = DEBUG_OPTION,
) -> None:
    with _errors(debug):
        from . import tracefile

        _functions_format(fmt)
        report = tracefile.summarize(trace, pattern)
        _emit_functions(report, fmt, output, to_stderr=False)
        if _over_budget(report, max_recompiles):
            raise typer.Exit(int(ExitCode.BUDGET))


@app.command(help="List the built-in targets and their parameters.")
def targets() -> None:
    from rich.table import Table

    from .targets.registry import BUILTIN_TARGETS

    table = Table(box=None, pad_edge=False, show_header=True, header_style="bold")
    for header in ("target", "params (defaults)", "what it is"):
        table.add_column(header, overflow="fold", no_wrap=header == "target")
    for t in BUILTIN_TARGETS.values():
        params = ", ".join(f"{k}={v}" for k, v in t.params.items())
        table.add_row(t.name, params, t.description)
    Console(highlight=False).print(table)
    Console(highlight=False).print(
        "\nUser targets: package.module:fn or path/to/file.py:fn, with `inputs:` (tensor specs) "
        "or `factory:` + `batch_dims:` in the scenario.")


@app.command(help="List the strategies (built-in, plus a scenario's custom ones).")
def strategies(
    scenario: Optional[Path] = typer.Argument(None, help="Also list this scenario's "
                                              "custom_strategies.", show_default=False),
    debug: bool = DEBUG_OPTION,
) -> None:
    with _errors(debug):
        from rich.table import Table

        from .strategies import BUILTINS

        known = dict(BUILTINS)
        if scenario is not None:
            from . import scenario as scenario_mod

            known.update(scenario_mod.load(scenario).custom_strategies)
        table = Table(box=None, pad_edge=False, show_header=True, header_style="bold")
        for header in ("strategy", "what it does", "knobs"):
            table.add_column(header, overflow="fold", no_wrap=header == "strategy")
        for s in known.values():
            table.add_row(s.name, s.description, s.summary())
        Console(highlight=False).print(table)


@app.command(help="Re-render a saved JSON report (or a bundle from `check`) without running "
             "anything; no torch needed.")
def render(
    report: Path = typer.Argument(..., help="A JSON report written by `run`/`check`."),
    fmt: str = FORMAT_OPTION,
    output: Optional[Path] = typer.Option(None, "--output", "-o", help="Write to FILE."),
    debug: bool = DEBUG_OPTION,
) -> None:
    with _errors(debug):
        _check_format(fmt)
        reports = _read_reports(report)
        if len(reports) == 1:
            emit(reports[0], fmt, output)
            return
        from .model import reports_to_json
        from .render import junit as junit_mod
        from .render import render as render_one

        if fmt == "json":
            text = reports_to_json(reports)
        elif fmt == "junit":
            text = junit_mod.render_many(reports)
        else:
            color = output is None and _color()
            text = "\n".join(render_one(r, fmt, color=color, width=_width()) for r in reports)
        if output is not None:
            write_atomic(output, text)
        else:
            sys.stdout.write(text)


def main() -> None:
    app()


if __name__ == "__main__":
    main()
