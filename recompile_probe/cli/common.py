"""What every command shares: error handling, options, progress and output.

Nothing here imports torch at import time, so `--help`, `--version`, `targets`, `strategies` and
`render` stay fast and work without torch.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator, TextIO

import typer
from rich.console import Console
from rich.markup import escape

from ..artefacts import Artefacts, writable, write_atomic  # noqa: F401  (re-exported)
from ..errors import ExitCode, ProbeError, UsageError
from ..render import formats
from ..render.formats import Document
from .registry import app  # noqa: F401  (re-exported: every command registers on it)

if TYPE_CHECKING:
    from ..records.report import ScenarioRef
    from ..strategies.advice import Definitions

err = Console(stderr=True, highlight=False)
#: listings that are not a document of a run (targets, strategies): straight to stdout
out = Console(highlight=False)

COUNTS_HELP = (
    "Columns: compiles = Dynamo compilations (metrics records, failed ones included); "
    "recompiles = compiles of a frame that already had a cache entry; graphs = graphs handed to "
    "the backend (what a CompileCounter counts); guards / shape guards = guard_count / "
    "shape_env_guard_count of the newest cache entry; µs/call = median per call of the last point "
    "re-run `repeats` times, through the driver if any, with fresh inputs (marks included; n/a "
    "if that re-run compiles)."
)


@contextlib.contextmanager
def errors_to_exit(debug: bool) -> Iterator[None]:
    """User mistakes -> one paragraph and exit 2/3; our own bugs -> exit 3 (traceback with
    --debug)."""
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
        err.print(
            f"[bold red]internal error:[/] {type(exc).__name__}: {escape(str(exc))}", soft_wrap=True
        )
        if not debug:
            err.print("  Re-run with --debug for the traceback, and please report it.")
        raise typer.Exit(int(ExitCode.TARGET_OR_INTERNAL)) from None


def csv_list(value: str | None, what: str) -> list[str] | None:
    if value is None:
        return None
    items = [v.strip() for v in value.split(",") if v.strip()]
    if not items:
        raise UsageError(f"{what}: expected a comma-separated list, got {value!r}")
    return items


def names_arg(values: list[str] | None, what: str) -> list[str] | None:
    """A repeatable option whose each value may be a comma-separated list (``-s a -s b,c``)."""
    names = [n for item in values or () for n in csv_list(item, what) or ()]
    return names or None


def sizes_arg(value: str | None) -> list[int] | str | None:
    if value is not None and "=" in value:  # points, e.g. "B=1,S=7; B=2,S=33": the scenario checks
        return value
    items = csv_list(value, "--sequence")
    if items is None:
        return None
    try:
        sizes = [int(v) for v in items]
    except ValueError:
        raise UsageError(
            f"--sequence: batch sizes are integers, got {value!r}", "e.g. --sequence 1,2,8"
        ) from None
    if any(s < 0 for s in sizes):
        raise UsageError(f"--sequence: batch sizes cannot be negative, got {value!r}")
    return sizes


def use_color(stream: Any = None) -> bool:
    stream = stream or sys.stdout
    return stream.isatty() and "NO_COLOR" not in os.environ


def emit(
    document: Document,
    value: Any,
    fmt: str,
    output: Path | None = None,
    *,
    stream: TextIO | None = None,
    verbose: bool = False,
    quiet: bool = False,
    definitions: Mapping[ScenarioRef, Definitions] | None = None,
) -> None:
    """The document to --output (atomically, off-terminal width) or to ``stream`` (stdout);
    never both, never half. ``definitions``: what the scenarios' measured fixes are written
    with."""
    from ..render.formats import Layout, render

    known = dict(definitions or {})
    if output is not None:
        layout = Layout(width=document.file_width, verbose=verbose, definitions=known)
        write_atomic(output, render(document, fmt, value, layout))
        if not quiet:
            err.print(f"report written to {output}")
        return
    stream = stream or sys.stdout
    columns = shutil.get_terminal_size((120, 24)).columns if stream.isatty() else None
    layout = Layout(
        color=use_color(stream), width=document.width(columns), verbose=verbose, definitions=known
    )
    stream.write(render(document, fmt, value, layout))
    stream.flush()


def also_write(files: Artefacts, document: Document, value: Any, *, skip: str = "") -> None:
    """Each ``--<format> FILE`` asked for (``--junit``, ``--markdown``, ...), in that format."""
    from ..render.formats import render

    for kind in formats.names(document):
        if kind != skip:
            files.write(kind, lambda kind=kind: render(document, kind, value))  # type: ignore[misc]


def format_option(document: Document) -> Any:
    return typer.Option("table", "--format", "-f", help=formats.help_text(document))


def check_format(document: Document, fmt: str) -> formats.Format:
    """Before any work: a format the command cannot write is a usage error."""
    return formats.choose(document, fmt)


QUIET_OPTION = typer.Option(False, "--quiet", "-q", help="No progress on stderr.")
#: CI systems that read findings from a step's output, by the format that writes them
ANNOTATIONS = ("github",)
ANNOTATIONS_OPTION = typer.Option(
    None,
    "--annotations",
    metavar="CI",
    help="Also print one annotation per finding (github: workflow commands) on the user's "
    "line behind it: each recompile, broken budget, unserved size, rank divergence "
    "(docs/ci.md).",
)
CODEQUALITY_OPTION = typer.Option(
    None,
    "--codequality",
    metavar="FILE",
    help="Write GitLab's Code Quality report (the same findings as JSON) here.",
)


def check_annotations(value: str | None) -> None:
    if value is not None and value not in ANNOTATIONS:
        raise UsageError(
            f"--annotations: unknown CI {value!r}",
            f"Choices: {', '.join(ANNOTATIONS)}. GitLab reads --codequality FILE.",
        )


def annotate(
    document: Document, value: Any, which: str | None, stream: TextIO | None = None
) -> None:
    """The findings as ``which``'s annotations, after the report (stdout unless ``stream``)."""
    if which is None:
        return
    from ..render.formats import render

    stream = stream or sys.stdout
    stream.write(render(document, which, value))
    stream.flush()


COVER_OPTION = typer.Option(
    None,
    "--cover",
    metavar="RANGE",
    help="After each sequence, decide from the cache entries' guards whether every size in "
    "this range is served, e.g. B=1..4096 or B=1..4096,S=1..2048 (replaces the scenario's "
    "coverage:; docs/coverage.md).",
)
VERBOSE_OPTION = typer.Option(
    False,
    "--verbose",
    "-v",
    help="Every failing guard of every cache entry under each recompile (the table shows "
    "each recompile's causes and counts the rest). JSON is the same either way.",
)
DEBUG_OPTION = typer.Option(False, "--debug", help="Show tracebacks.")
SCENARIO_ARGUMENT = typer.Argument(
    None, help="Scenario YAML (default: the built-in configs/logprobs.yaml).", show_default=False
)
BACKEND_OPTION = typer.Option(None, "--backend", "-b", help="eager | aot_eager | inductor")
OUTPUT_OPTION = typer.Option(None, "--output", "-o", help="Write to FILE.")
CLEAN_ENV_OPTION = typer.Option(
    False,
    "--clean-env",
    help="Run the strategies without inherited compile settings (TORCH_COMPILE_*, "
    "TORCHDYNAMO_*, TORCH_LOGS, changed torch.compiler / torch._dynamo config); the report "
    "lists what was kept out.",
)
#: for commands whose runs go to the worker pool (`run` words its own: it also has --isolate)
RUN_TIMEOUT_OPTION = typer.Option(
    None, "--timeout", help="Seconds per run with --jobs N; past it the run is status error."
)


def saving(scenario: Any, fmt: str, output: Path | None, then: Any) -> Any:
    """With --output, rewrite the file after every finished run (marked incomplete), so a crash
    mid-scenario loses only the run in progress."""
    if output is None:
        return then
    from dataclasses import replace

    from ..execution.session import header
    from ..render.formats import render

    finished: list = []

    def on_run(run: Any) -> None:
        finished.append(run)
        partial = replace(header(scenario), runs=tuple(finished), complete=False)
        write_atomic(output, render(formats.Document.REPORTS, fmt, [partial]))
        if then is not None:
            then(run)

    return on_run


def trace_dir_arg(path: Path | None) -> str | None:
    if path is None:
        return None
    path = path.expanduser()
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"--trace-dir: cannot create {str(path)!r} ({exc.strerror})") from None
    return str(path.resolve())


def print_tlparse(report: Any) -> None:
    traced = [r for r in report.runs if r.trace_file]
    if not traced:
        return
    err.print("structured traces (open with tlparse, `pip install tlparse`):")
    for r in traced:
        out = str(Path(r.trace_file).with_suffix("")) + "_tlparse"
        err.print(
            f"  {r.sequence_name} / {r.strategy}: tlparse {r.trace_file} -o {out} --no-browser",
            soft_wrap=True,
        )


@contextlib.contextmanager
def progress(total: int, quiet: bool) -> Iterator[tuple]:
    """The runs' progress: ``(on_start, on_run)`` for the executors, (None, None) when quiet."""
    from .progress import meter

    with meter(err, quiet, "starting torch", total) as shown:
        if shown is None:
            yield None, None
            return
        shown.say(f"probing {total} runs...")

        def started(strategy: str, sequences: str) -> None:
            shown.update(escape(f"{strategy} [{sequences}]"))  # the bar reads markup

        def finished(r: Any) -> None:
            from ..analysis.verdicts import plural

            shown.update(advance=1)
            figures = (
                f"{plural(r.compiles or 0, 'compile')}, {plural(r.recompiles or 0, 'recompile')}"
                if r.status == "ok"
                else (r.error.type if r.error else r.status)
            )
            where = "" if r.rank is None else f" · rank {r.rank}"
            shown.say(f"  {r.sequence_name} / {r.strategy}{where}: {r.status} ({figures})")

        yield started, finished


def read_reports(path: Path) -> list:
    from ..errors import ReportError
    from ..records.report import reports_from_json

    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ReportError(f"{path}: cannot read ({exc.strerror or exc})") from None
    return reports_from_json(text, str(path))


def read_saved(path: Path) -> Any:
    """The saved document at ``path``, read and parsed once: a ``WatchReport`` for a `watch` /
    `summarize` report, else the list of run reports (one, or a `check` bundle's)."""
    import json

    from ..errors import ReportError
    from ..records.report import reports_from_data
    from ..records.watch import is_watch_document, watch_from_dict

    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ReportError(f"{path}: cannot read ({exc.strerror or exc})") from None
    except json.JSONDecodeError as exc:
        raise ReportError(f"{path}: not valid JSON ({exc})") from None
    if is_watch_document(data):
        return watch_from_dict(data, str(path))
    return reports_from_data(data, str(path))


def read_report(path: Path) -> Any:
    """One saved report for --from-report (a bundle from `check` names several: refused)."""
    from ..errors import ReportError

    reports = read_reports(path)
    if len(reports) != 1:
        raise ReportError(
            f"{path}: holds {len(reports)} reports; --from-report reads one",
            "Write one with `recompile-probe run SCENARIO -f json -o REPORT`.",
        )
    return reports[0]


def over_budget(report: Any, max_recompiles: int | None) -> bool:
    if max_recompiles is None:
        return False
    total = sum(f.recompiles for f in report.functions)
    if total > max_recompiles:
        err.print(f"[bold red]--max-recompiles {max_recompiles} exceeded:[/] {total} recompiles")
        return True
    return False


def rank_gate(report: Any, fail_on_divergence: bool) -> bool:
    """--fail-on-rank-divergence: True (and the summary on stderr) when ranks compiled
    differently; a note when there was no second rank to compare."""
    if not fail_on_divergence:
        return False
    from rich.markup import escape

    from ..render.lines import ranks

    if report.rank_divergence is None:
        err.print(
            "--fail-on-rank-divergence: fewer than two ranks were seen, nothing to compare "
            "(a rank is a process with RANK set, or in a torch.distributed process group)"
        )
        return False
    if not report.rank_divergence:
        return False
    err.print(
        f"[bold red]--fail-on-rank-divergence:[/] {escape(ranks.heading(report) or '')}",
        soft_wrap=True,
    )
    for line in ranks.gate_summary(report):
        err.print(f"  {escape(line)}", soft_wrap=True)
    return True
