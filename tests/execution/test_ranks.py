"""A distributed scenario end to end: two rank processes on gloo (CPU), every strategy on each
rank over its own sizes, each rank's figures checked against what Dynamo produced on that rank
in a separate plain program (tests/programs/ranks_truth.py: compilation metrics and a
CompileCounter, per rank); the comparison, its JSON, check's ranks_agree; a rank that stops
making progress stops both, reported as a Timeout instead of a hang."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import pytest

from recompile_probe.analysis.check import judge
from recompile_probe.execution.ranks import free_port
from recompile_probe.execution.session import run_scenario
from recompile_probe.records.report import from_json, to_json
from recompile_probe.scenario.budgets import Budget
from recompile_probe.scenario.load import load, loads
from recompile_probe.scenario.overrides import with_overrides

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "distributed" / "ragged.yaml"
TRUTH = ROOT / "tests" / "programs" / "ranks_truth.py"
COUNTED = ("default", "static", "dynamic_true", "mark_dynamic", "guard_collectives")
STRATEGIES = [*COUNTED, "compiler_collectives"]


@pytest.fixture(scope="module")
def scenario():
    loaded = with_overrides(load(EXAMPLE), strategies=STRATEGIES)
    return replace(loaded, repeats=2)


@pytest.fixture(scope="module")
def report(scenario):
    return run_scenario(scenario)


@pytest.fixture(scope="module")
def truth(scenario, tmp_path_factory):
    """Each rank's own counts, from a plain two-rank program that never imports the tool."""
    folder = tmp_path_factory.mktemp("truth")
    sizes = {str(r): [p.get("B") for p in scenario.for_rank(r).points["epoch_end"]] for r in (0, 1)}
    (folder / "sizes.json").write_text(json.dumps(sizes))
    port = str(free_port())
    procs = [
        subprocess.Popen(
            [sys.executable, str(TRUTH), str(folder / f"rank{r}.json"), str(folder / "sizes.json")],
            env={
                **os.environ,
                "RANK": str(r),
                "WORLD_SIZE": "2",
                "MASTER_ADDR": "127.0.0.1",
                "MASTER_PORT": port,
                "OMP_NUM_THREADS": "1",
            },
        )
        for r in (0, 1)
    ]
    for proc in procs:
        assert proc.wait(timeout=180) == 0
    return {r: json.loads((folder / f"rank{r}.json").read_text()) for r in (0, 1)}


def test_every_rank_runs_every_strategy_over_its_own_sizes(report):
    assert report.complete
    assert sorted((r.strategy, r.rank) for r in report.runs) == sorted(
        (s, rank) for s in STRATEGIES for rank in (0, 1)
    )
    sizes = {r.rank: tuple(c.sizes["B"] for c in r.calls) for r in report.runs if r.calls}
    assert sizes == {0: (8, 8, 8), 1: (8, 8, 3)}


def test_each_ranks_figures_are_that_ranks_own_compiles(report, truth):
    for run in report.runs:
        if run.strategy not in COUNTED:
            continue
        own = truth[run.rank]["strategies"][run.strategy]
        assert run.status == "ok", run.error
        assert (run.compiles, run.recompiles, run.failed_compiles, run.graphs) == (
            own["compiles"],
            own["recompiles"],
            own["failed"],
            own["graphs"],
        ), (run.strategy, run.rank)
        assert [c.event for c in run.calls] == own["events"], (run.strategy, run.rank)
        assert run.outputs_match is True  # each call against eager, all_reduce included
        figures = report.rank_runs.of("epoch_end", run.strategy).by_rank[str(run.rank)]
        assert (figures.compiles, figures.recompiles, figures.failed) == (
            own["compiles"],
            own["recompiles"],
            own["failed"],
        )


def test_the_ranks_compared_and_the_strategy_that_makes_them_agree(report, truth):
    ranks = report.rank_runs
    for strategy in COUNTED:
        counted = {r: truth[r]["strategies"][strategy] for r in (0, 1)}
        same = counted[0]["compiles"] == counted[1]["compiles"] and (
            counted[0]["recompiles"] == counted[1]["recompiles"]
        )
        assert ranks.of("epoch_end", strategy).agree is same, strategy
    fewest = min(
        (s for s in COUNTED if ranks.of("epoch_end", s).agree),
        key=lambda s: (truth[1]["strategies"][s]["compiles"], STRATEGIES.index(s)),
    )
    assert ranks.best == {"epoch_end": fewest}
    # guard collectives: the rank whose guards passed recompiled with the one whose failed,
    # and its reason says so (its own guards would have passed)
    assert truth[0]["strategies"]["guard_collectives"]["recompiles"] == 1
    followed = next(r for r in report.runs if r.strategy == "guard_collectives" and r.rank == 0)
    (event,) = [e for e in followed.compile_events if e.recompile]
    assert event.reason_kind == "peer_rank_recompiled"
    # the text is the one Dynamo wrote on that rank (2.13: "Unexpected recompilation ...", 2.11:
    # a BACKEND_MATCH failure naming no backend, 2.9: none at all)
    (said,) = truth[0]["strategies"]["guard_collectives"]["reasons"]
    shown = event.reason.splitlines()[0].split(":", 1)[-1].strip() if event.reason else ""
    assert shown in said, (shown, said)  # 2.9's bare "0/0:" shows nothing


def test_compiler_collectives_are_not_measured_where_they_fail_here(report, truth):
    cc = report.rank_runs.of("epoch_end", "compiler_collectives")
    failed = truth[0]["compiler_collectives_error"]
    if failed is None:  # a torch or process group where they work: measured like any strategy
        assert all(f.status == "ok" for f in cc.by_rank.values())
        return
    assert cc.agree is None and cc.note.startswith("not measured: ")
    for f in cc.by_rank.values():
        assert f.status == "unsupported" and failed in f.error


def test_the_comparison_round_trips_and_check_gates_on_it(report, scenario):
    again = from_json(to_json(report))
    assert again.rank_runs == report.rank_runs and again.runs == report.runs
    data = json.loads(to_json(report))
    default = next(c for c in data["rank_runs"]["comparisons"] if c["strategy"] == "default")
    assert set(default["by_rank"]) == {"0", "1"}
    assert {"compiles", "recompiles", "failed", "recompile_limit_hit"} <= set(
        default["by_rank"]["1"]
    )
    gate = replace(scenario, budgets=(Budget("*", "*", "ranks_agree", True, "flag"),))
    judged, _ = judge(report, gate)
    broken = {(r.strategy, r.rank) for r in judged.runs if r.violations}
    expected = {(c.strategy, 0) for c in report.rank_runs.comparisons if c.agree is not True}
    assert broken == expected and ("default", 0) in broken


STALL = """
target: {here}/ranks_stall.py:step
driver: {here}/ranks_stall.py:run
batch_dims: {{0: [0]}}
ranks: 2
distributed: {{timeout_s: 2}}
sequences:
  tail: {{by_rank: {{0: [4, 4], 1: [4, 3]}}}}
strategies: [default]
repeats: 0
"""


def test_a_rank_that_stops_making_progress_is_stopped_and_reported():
    fixtures = ROOT / "tests" / "fixtures"
    scenario = loads(STALL.format(here=fixtures), path=str(fixtures / "stall.yaml"))
    started = time.monotonic()
    report = run_scenario(scenario, timeout=8)
    assert time.monotonic() - started < 90
    by_rank = {r.rank: r for r in report.runs}
    assert by_rank[1].status == "error" and by_rank[1].error.type == "Timeout"
    assert "no rank finished a run for 8 s" in by_rank[1].error.message
    # rank 0 waited in the all_reduce until the process group's timeout
    assert by_rank[0].status == "error"
    assert report.rank_runs.of("tail", "default").agree is not True


def test_the_table_and_markdown_show_each_rank_then_the_ranks(report):
    from helpers import render_report

    best = report.rank_runs.best["epoch_end"]
    for fmt in ("table", "markdown", "html"):
        text = render_report(report, fmt, width=200)
        assert "epoch_end` · rank 1" in text or "epoch_end · rank 1" in text, fmt
        assert "Ranks verdict:" in text and f"{best} makes every rank compile the same" in text
