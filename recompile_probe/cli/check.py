"""`check`: run scenarios, gate on their budgets and a baseline."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import TYPE_CHECKING, List, Optional

import typer

from ..artefacts import Artefacts, append_step_summary
from ..errors import UsageError

if TYPE_CHECKING:
    from ..analysis.check import Outcome
    from ..commands.shard import Shard
    from ..scenario.model import Scenario
from .common import (
    ANNOTATIONS_OPTION,
    CLEAN_ENV_OPTION,
    CODEQUALITY_OPTION,
    COVER_OPTION,
    DEBUG_OPTION,
    QUIET_OPTION,
    RUN_TIMEOUT_OPTION,
    Document,
    also_write,
    annotate,
    app,
    check_annotations,
    emit,
    err,
    errors_to_exit,
    names_arg,
    progress,
    read_reports,
)
from .registry import summary


@app.command(
    help=summary(
        "check",
        "Exit 0: every budget holds; 1: a budget is broken or the baseline regressed; "
        "2: usage or scenario error; 3: a target fails without torch.compile, or an "
        "internal error. Every violation is reported, not just the first.",
    )
)
def check(
    scenarios: List[Path] = typer.Argument(..., help="Scenario files or directories of them."),
    strategy: Optional[List[str]] = typer.Option(
        None, "--strategy", "-s", help="Only these strategies (repeat, or a,b)."
    ),
    max_recompiles: Optional[int] = typer.Option(
        None, "--max-recompiles", min=0, help="A budget for every run, over the files' own."
    ),
    no_recompile_in: Optional[str] = typer.Option(
        None,
        "--no-recompile-in",
        metavar="RANGE",
        help="A budget for every run, over the files' own: every size in RANGE (e.g. "
        "B=1..4096) must be served by the cache entries the sequence left, decided from "
        "their guards (docs/coverage.md).",
    ),
    cover: Optional[str] = COVER_OPTION,
    junit: Optional[Path] = typer.Option(None, "--junit", help="Write JUnit XML here."),
    markdown: Optional[Path] = typer.Option(
        None,
        "--markdown",
        help="Write a Markdown summary here (also appended to $GITHUB_STEP_SUMMARY).",
    ),
    json_out: Optional[Path] = typer.Option(None, "--json", help="Write the JSON report here."),
    codequality: Optional[Path] = CODEQUALITY_OPTION,
    annotations: Optional[str] = ANNOTATIONS_OPTION,
    html_out: Optional[Path] = typer.Option(
        None,
        "--html",
        help="Write a self-contained HTML "
        "report here (tables, timelines, reasons; no "
        "network), to open in a browser.",
    ),
    baseline: Optional[Path] = typer.Option(
        None,
        "--baseline",
        help="A JSON report to compare with: more compiles, recompiles, "
        "graphs or guards than it is a regression (exit 1).",
    ),
    tolerance: int = typer.Option(
        0, "--tolerance", min=0, help="Allowed increase per count before it is a regression."
    ),
    update_baseline: bool = typer.Option(
        False,
        "--update-baseline",
        help="Rewrite --baseline with this run (accepting its changes); created if missing.",
    ),
    shard: Optional[str] = typer.Option(
        None,
        "--shard",
        help="Run only shard K of N (e.g. 2/3): a deterministic, cost-balanced "
        "share of the runs, for a CI matrix; --json writes a shard report for `merge`.",
    ),
    from_report: Optional[Path] = typer.Option(
        None,
        "--from-report",
        help="Run nothing: judge the budgets (and --baseline) on this "
        "saved report, e.g. merged shards. No torch needed.",
    ),
    reuse_reports: Optional[Path] = typer.Option(
        None,
        "--reuse-reports",
        metavar="DIR",
        help="Judge a scenario on its saved report DIR/NAME.json where that report is newer "
        "than the scenario file and than the files its compiles came from (same file, same "
        "runs); run the others and save their reports there. The pre-commit hook's fast path.",
    ),
    jobs: str = typer.Option(
        "1",
        "--jobs",
        "-j",
        help="Worker processes running the runs side by side, reused "
        "between runs and scenarios: a number or auto (one per core). Same verdicts.",
    ),
    timeout: Optional[float] = RUN_TIMEOUT_OPTION,
    quiet: bool = QUIET_OPTION,
    debug: bool = DEBUG_OPTION,
    clean_env: bool = CLEAN_ENV_OPTION,
) -> None:
    with errors_to_exit(debug), contextlib.ExitStack() as stack:
        from ..commands import check as check_mod
        from ..execution.session import clean_environment, open_pool, parse_jobs
        from ..records.report import reports_to_json
        from ..render.formats import render

        if update_baseline and baseline is None:
            raise UsageError("--update-baseline needs --baseline FILE")
        workers = parse_jobs(jobs)
        if timeout is not None and (workers == 1 or timeout <= 0):
            raise UsageError(
                "--timeout needs --jobs N (2 or more) and a positive number of seconds"
            )
        files = Artefacts(
            {
                "junit": junit,
                "markdown": markdown,
                "json": json_out,
                "html": html_out,
                "codequality": codequality,
                "baseline": baseline,
            }
        )
        files.check()
        check_annotations(annotations)
        names = names_arg(strategy, "--strategy")
        loaded = check_mod.load_all(
            scenarios, names, max_recompiles, cover=cover, no_recompile_in=no_recompile_in
        )
        part = _shard(loaded, shard, baseline, from_report)
        if reuse_reports is not None and (part is not None or from_report is not None):
            raise UsageError(
                "--reuse-reports runs what it cannot reuse: not with --shard or --from-report"
            )
        stored = None
        if baseline is not None and (baseline.exists() or not update_baseline):
            stored = read_reports(baseline)
        total = sum(len(s.strategies) * len(s.sequences) * (s.ranks or 1) for s in loaded)
        if from_report is not None:
            outcome = check_mod.from_reports(
                loaded,
                read_reports(from_report),
                source=str(from_report),
                baseline=stored if stored is not None else ([] if update_baseline else None),
                tolerance=tolerance,
                accept_baseline=update_baseline,
            )
        else:
            environment = stack.enter_context(clean_environment(clean_env))
            pool = open_pool(workers, timeout=timeout, debug=debug) if workers > 1 else None
            try:
                with progress(len(part.runs) if part else total, quiet) as (on_start, on_run):
                    outcome = check_mod.run_check(
                        loaded,
                        baseline=stored
                        if stored is not None
                        else ([] if update_baseline else None),
                        tolerance=tolerance,
                        accept_baseline=update_baseline,
                        on_start=on_start,
                        on_run=on_run,
                        runs=part.keys if part else None,
                        pool=pool,
                        cleared=environment if clean_env else None,
                        reuse=reuse_reports,
                    )
            finally:
                if pool is not None:
                    pool.close()
        for path in outcome.reused:
            err.print(f"reused {path} (newer than its scenario and the code it compiled)")
        emit(Document.CHECK, outcome, "table")
        annotate(Document.CHECK, outcome, annotations)
        # a shard's --json is the shard report `merge` reads, not the check's own
        also_write(files, Document.CHECK, outcome, skip="json" if part is not None else "")
        if part is not None:
            files.write("json", lambda: _shard_json(outcome, part))
        append_step_summary(render(Document.CHECK, "markdown", outcome))
        if update_baseline and not outcome.failures and not outcome.interrupted:
            files.write("baseline", lambda: reports_to_json(outcome.reports))
            err.print(f"baseline {baseline} updated")
        raise typer.Exit(int(outcome.exit_code))


def _shard(
    loaded: list[Scenario], value: str | None, baseline: Path | None, from_report: Path | None
) -> Shard | None:
    """--shard K/N -> the shard's runs (None without the flag)."""
    if value is None:
        return None
    from ..commands import shard as shard_mod

    if from_report is not None:
        raise UsageError(
            "--shard and --from-report exclude each other",
            "Run the shards, `recompile-probe merge` their --json files, then "
            "`check --from-report` the merged one.",
        )
    if baseline is not None:
        raise UsageError(
            "--shard: compare with the baseline on the merged report",
            "`recompile-probe merge` the shards' --json files, then `check "
            "--from-report all.json --baseline FILE`.",
        )
    part = shard_mod.select(loaded, *shard_mod.parse(value))
    err.print(
        f"shard {part.label}: {len(part.runs)} of {len(part.plan)} runs "
        f"(cost {part.cost} of {sum(r.cost for r in part.plan)})"
    )
    return part


def _shard_json(outcome: Outcome, part: Shard) -> str:
    from ..commands import shard as shard_mod

    return shard_mod.to_json(
        outcome.reports, part, [(s.name, s.path, e.message) for s, e in outcome.failures]
    )
