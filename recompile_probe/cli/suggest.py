"""`suggest`: the smallest marking that removes every avoidable recompile, by measurement."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Optional

import typer
from rich.markup import escape

from ..artefacts import Artefacts, append_step_summary
from ..errors import UsageError
from .common import (
    BACKEND_OPTION,
    DEBUG_OPTION,
    OUTPUT_OPTION,
    QUIET_OPTION,
    SCENARIO_ARGUMENT,
    Document,
    also_write,
    app,
    check_format,
    emit,
    err,
    errors_to_exit,
    format_option,
    read_report,
)
from .progress import meter
from .registry import summary

#: --time-limit's default, in seconds (docs/suggest.md says why ten minutes)
TIME_LIMIT = 600.0


@app.command(
    help=summary(
        "suggest",
        "Every candidate is a real run of every sequence; the winner is shown minimal by the "
        "measured runs without each of its marks. Exit 0: a candidate ran cleanly; 1: none "
        "did; 2: usage or scenario error; 3: the target fails without torch.compile.",
    )
)
def suggest(
    scenario: Optional[Path] = SCENARIO_ARGUMENT,
    sequence: Optional[str] = typer.Option(
        None, "--sequence", help="Only this sequence (by name); default: every sequence."
    ),
    budget: Optional[int] = typer.Option(
        None,
        "--budget",
        min=1,
        help="At most N candidates measured (each runs every "
        "sequence); the output says whether the optimum is then still proven.",
    ),
    time_limit: float = typer.Option(
        TIME_LIMIT,
        "--time-limit",
        min=0,
        help="Stop measuring new candidates after SECONDS of wall clock (checked between "
        "candidates; the first always runs) and answer with the best so far, saying what was "
        "not measured. 0: no limit.",
    ),
    backend: Optional[str] = BACKEND_OPTION,
    fmt: str = format_option(Document.SUGGEST),
    output: Optional[Path] = OUTPUT_OPTION,
    json_out: Optional[Path] = typer.Option(None, "--json", help="Also write the JSON here."),
    markdown: Optional[Path] = typer.Option(
        None, "--markdown", help="Also write Markdown here (and append it to $GITHUB_STEP_SUMMARY)."
    ),
    write: bool = typer.Option(
        False,
        "--write",
        help="Add the suggested custom strategy and "
        "its expect: budget to the scenario file (comments and layout "
        "kept; re-validated).",
    ),
    name: str = typer.Option("suggested", "--name", help="Name of the written strategy."),
    jobs: str = typer.Option(
        "1",
        "--jobs",
        "-j",
        help="Worker processes measuring candidates side by side (a number "
        "or auto = the cores). µs/call is then measured while other candidates run; a win on "
        "speed alone is confirmed sequentially before it counts.",
    ),
    from_report: Optional[Path] = typer.Option(
        None,
        "--from-report",
        help="A saved `run -f json` report of the scenario: its default and whole-function "
        "runs are read, not measured again (where it ran them over the same sizes and backend). "
        "The scenario is the file the report names unless SCENARIO is given.",
    ),
    quiet: bool = QUIET_OPTION,
    debug: bool = DEBUG_OPTION,
) -> None:
    with errors_to_exit(debug):
        from ..commands.saved import scenario_of
        from ..commands.suggest.run import suggest as suggest_scenario
        from ..commands.suggest.write import write_into
        from ..execution.session import open_pool, parse_jobs
        from ..render.formats import render
        from ..scenario.load import load
        from ..scenario.overrides import with_overrides

        check_format(Document.SUGGEST, fmt)
        files = Artefacts({"output": output, "json": json_out, "markdown": markdown})
        files.check()
        saved = read_report(from_report) if from_report is not None else None
        if saved is not None:
            warnings: list[str] = []
            base = scenario_of(saved, str(from_report), scenario, warnings, "suggest")
            for line in warnings:
                err.print(f"[yellow]warning:[/] {escape(line)}", soft_wrap=True)
        else:
            base = load(scenario)
        loaded = with_overrides(base, backend=backend)
        # The built-in scenario has a path too (the package's configs/): never write into it.
        if write and (loaded.path is None or (scenario is None and saved is None)):
            raise UsageError(
                "--write needs a scenario file",
                "Copy the built-in scenario (configs/logprobs.yaml) and pass its path.",
            )
        workers = parse_jobs(jobs)
        pool = open_pool(workers, debug=debug) if workers > 1 else None
        try:
            with _progress(quiet, time_limit or None) as (on_plan, on_measured, on_phase):
                result = suggest_scenario(
                    loaded,
                    sequence=sequence,
                    budget=budget,
                    time_limit=time_limit,
                    strategy_name=name,
                    pool=pool,
                    on_plan=on_plan,
                    on_measured=on_measured,
                    on_phase=on_phase,
                    saved=saved,
                    saved_source=str(from_report) if from_report is not None else None,
                )
        finally:
            if pool is not None:
                pool.close()
        emit(Document.SUGGEST, result, fmt, output)
        also_write(files, Document.SUGGEST, result)
        if markdown is not None:
            append_step_summary(render(Document.SUGGEST, "markdown", result))
        best = result.recommendation
        if write and best is not None and best.status == "ok" and result.change is not None:
            strategy = best.whole_function or (name if best.marks else "default")
            write_into(Path(loaded.path or ""), result.change.yaml, strategy)
            err.print(f"{loaded.path}: added strategy {strategy!r} and its expect: budget")
        if best is None or best.status != "ok":
            raise typer.Exit(1)


def _figures(e: Any) -> str:
    if e.status == "cut":
        return f"cut at {e.compiles} compiles (cannot rank first)"
    return f"{e.compiles} compiles, guards {e.guard_count}" if e.status == "ok" else e.status


def _clock(seconds: float) -> str:
    seconds = max(0, round(seconds))
    return f"{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"


class _Count:
    """Candidates measured and planned, and when the measuring began: what the bar, its ETA and
    the plain lines read. The planned total grows as each phase after the search says how many
    it adds; None while a greedy search runs (not known in advance)."""

    def __init__(self, time_limit: float | None) -> None:
        self.started = time.monotonic()  # the limit counts from about here (the command's start)
        self.time_limit = time_limit
        self.first: float | None = None  # when the search began: set-up is not a candidate's cost
        self.last: float | None = None
        self.measured = 0
        self.planned: int | None = None

    def of(self) -> str:
        return f"{self.measured}/{self.planned}" if self.planned is not None else f"{self.measured}"

    def eta(self) -> str:
        """From the measured cost per candidate; where the time limit comes first, that."""
        left = (
            None if self.time_limit is None else self.time_limit - (time.monotonic() - self.started)
        )
        if self.first is None or self.last is None or not self.measured:
            return ""
        per = (self.last - self.first) / self.measured
        rest = None if self.planned is None else per * max(0, self.planned - self.measured)
        rest = None if rest is None else rest - (time.monotonic() - self.last)
        if left is not None and left <= 0:
            return "time limit reached: finishing"
        if left is not None and (rest is None or rest > left):
            return f"time limit in {_clock(left)}"
        return "ETA ?" if rest is None else f"ETA {_clock(rest)}"


@contextlib.contextmanager
def _progress(quiet: bool, time_limit: float | None) -> Iterator[tuple[Any, Any, Any]]:
    """``(on_plan, on_measured, on_phase)`` for the search; (None, None, None) when quiet."""
    count = _Count(time_limit)
    with meter(
        err,
        quiet,
        "suggest: loading the target",
        None,
        count=lambda: f"{count.of()} candidates",
        eta=count.eta,
    ) as shown:
        if shown is None:
            yield None, None, None
            return

        def plan(search: str, planned: int | None) -> None:
            count.planned, count.first = planned, time.monotonic()
            total = f"{planned} candidates" if planned else "candidates as the search goes"
            limit = f", time limit {time_limit:g} s" if time_limit else ""
            shown.say(f"suggest: {search} search, {total}, each a run of every sequence{limit}")
            shown.update(f"suggest: {search} search", completed=0)
            shown.retotal(planned)

        def measured(e: Any, n: int) -> None:
            count.measured, count.last = n, time.monotonic()
            if count.planned is not None and n > count.planned:
                count.planned = n
            spent = time.monotonic() - count.started
            shown.say(f"  [{count.of()}] {e.name}: {_figures(e)} · {spent:.0f} s")
            shown.update(completed=n)
            shown.retotal(count.planned)

        def phase(name: str, more: int) -> None:
            count.planned = count.measured + more
            shown.update(f"suggest: {name}")
            shown.retotal(count.planned)

        yield plan, measured, phase
        on_terminal = shown.on_terminal
    if on_terminal:  # what stays once the bar is gone
        spent = time.monotonic() - count.started
        from ..analysis.verdicts import plural

        err.print(f"suggest: {plural(count.measured, 'candidate')} measured in {spent:.0f} s")
