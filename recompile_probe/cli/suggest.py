"""`suggest`: the smallest marking that removes every avoidable recompile, by measurement."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Optional

import typer

from ..artefacts import Artefacts, append_step_summary
from ..errors import UsageError
from .common import DEBUG_OPTION, QUIET_OPTION, app, err, errors_to_exit, term_width, use_color

FORMATS = ("table", "json", "markdown")


@app.command(
    help="Find, by measurement, the smallest marking (mark_dynamic / mark_unbacked per "
    "argument dim, or a whole-function strategy) that removes every avoidable "
    "recompile over the scenario's sequences. Every candidate is a real run of every "
    "sequence; the winner is shown minimal by the measured runs without each of its "
    "marks. Exit 0: a candidate ran cleanly; 1: none did; 2: usage or scenario error; "
    "3: the target fails without torch.compile."
)
def suggest(
    scenario: Optional[Path] = typer.Argument(
        None,
        help="Scenario YAML (default: the built-in configs/logprobs.yaml).",
        show_default=False,
    ),
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
    backend: Optional[str] = typer.Option(
        None, "--backend", "-b", help="eager | aot_eager | inductor"
    ),
    fmt: str = typer.Option("table", "--format", "-f", help="table | json | markdown"),
    output: Optional[Path] = typer.Option(None, "--output", "-o", help="Write to FILE."),
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
    quiet: bool = QUIET_OPTION,
    debug: bool = DEBUG_OPTION,
) -> None:
    with errors_to_exit(debug):
        from ..commands.suggest.run import suggest as suggest_scenario
        from ..commands.suggest.write import write_into
        from ..execution.session import open_pool, parse_jobs
        from ..records.suggestion import to_json
        from ..render import markdown as markdown_mod
        from ..render.terminal import suggest as terminal
        from ..scenario.load import load
        from ..scenario.overrides import with_overrides

        if fmt not in FORMATS:
            raise UsageError(f"--format: expected {', '.join(FORMATS)}, got {fmt!r}")
        files = Artefacts({"output": output, "json": json_out, "markdown": markdown})
        files.check()
        loaded = with_overrides(load(scenario), backend=backend)
        # The built-in scenario has a path too (the package's configs/): never write into it.
        if write and (scenario is None or loaded.path is None):
            raise UsageError(
                "--write needs a scenario file",
                "Copy the built-in scenario (configs/logprobs.yaml) and pass its path.",
            )
        workers = parse_jobs(jobs)
        on_plan, on_measured = _progress(quiet)
        pool = open_pool(workers, debug=debug) if workers > 1 else None
        try:
            result = suggest_scenario(
                loaded,
                sequence=sequence,
                budget=budget,
                strategy_name=name,
                pool=pool,
                on_plan=on_plan,
                on_measured=on_measured,
            )
        finally:
            if pool is not None:
                pool.close()
        if fmt == "json":
            text = to_json(result)
        elif fmt == "markdown":
            text = markdown_mod.suggestion(result)
        else:
            text = terminal.render(
                result,
                color=output is None and use_color(),
                width=min(term_width(), 110) if output is None else 110,
            )
        if output is not None:
            files.write("output", lambda: text)
            err.print(f"report written to {output}")
        else:
            sys.stdout.write(text)
        files.write("json", lambda: to_json(result))
        md = markdown_mod.suggestion(result) if markdown is not None else None
        if md is not None:
            files.write("markdown", lambda: md)
            append_step_summary(md)
        best = result.recommendation
        if write and best is not None and best.status == "ok" and result.change is not None:
            strategy = best.whole_function or (name if best.marks else "default")
            write_into(Path(loaded.path or ""), result.change.yaml, strategy)
            err.print(f"{loaded.path}: added strategy {strategy!r} and its expect: budget")
        if best is None or best.status != "ok":
            raise typer.Exit(1)


def _progress(quiet: bool) -> tuple[Any, Any]:
    if quiet:
        return None, None

    def on_plan(search: str, planned: int | None) -> None:
        total = f"{planned} candidates" if planned else "candidates as the search goes"
        err.print(f"suggest: {search} search, {total}, each a run of every sequence")

    def on_measured(e: Any, n: int) -> None:
        figures = f"{e.compiles} compiles, guards {e.guard_count}" if e.status == "ok" else e.status
        err.print(f"  [{n}] {e.name}: {figures}", soft_wrap=True)

    return on_plan, on_measured
