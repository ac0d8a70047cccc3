"""Renderers read records only: a saved report re-renders identically without a re-run."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from dataclasses import replace

import pytest

from helpers import TESTS, render_report, sample_report
from recompile_probe.analysis.budgets import evaluate
from recompile_probe.analysis.sequence import moved, transitions
from recompile_probe.records.report import Report, from_dict, from_json
from recompile_probe.records.run import Call, RunError
from recompile_probe.render import cells
from recompile_probe.scenario.budgets import Budget


def test_table_has_summary_timeline_reasons_and_verdict():
    text = render_report(sample_report(), "table", width=100)
    assert "Sequence rl: B = 1 → 2" in text
    assert "★ default" in text  # the only eligible run is the best
    timeline = [line.split() for line in text.splitlines() if line.startswith("default ")]
    assert ["default", "●", "▲"] in timeline
    assert "tensor 'x' size mismatch" in text
    assert "mark_unbacked: GuardOnDataDependentSymNode at call 0: Could not guard" in text
    assert "Verdict: rl [1, 2]: default wins with 2 compiles" in text
    assert max(len(line) for line in text.splitlines()) <= 100


def test_missing_figures_read_n_a():
    text = render_report(sample_report(), "table")
    row = next(line for line in text.splitlines() if line.startswith("mark_unbacked"))
    assert "n/a" in row


def test_markdown_tables_and_escaping():
    report = sample_report()
    run = report.runs[0]
    event = replace(run.compile_events[0], reason="a | b\nsecond  # comment")
    report = replace(report, runs=(replace(run, compile_events=(event,)), report.runs[1]))
    text = render_report(report, "markdown")
    assert "| strategy | compiles | recompiles | graphs | guards | shape guards |" in text
    assert "a \\| b<br>second" in text and "# comment" not in text
    assert "**Verdict:**" in text


def test_json_render_is_the_contract():
    assert from_json(render_report(sample_report(), "json")) == sample_report()


def test_incomplete_reports_say_so():
    report = replace(sample_report(), complete=False)
    assert "Interrupted" in render_report(report, "table")
    assert "Interrupted" in render_report(report, "markdown")


def _with_failed_attempt() -> Report:
    """default: call 2 hit the recompile limit (no graph, one failed compile), call 3 ran
    eagerly."""
    report = sample_report()
    run = report.runs[0]
    calls = (
        Call(0, 1, "compile", 100.0, True, 1, 0),
        Call(1, 2, "recompile", 90.0, True, 1, 0),
        Call(2, 3, "recompile", 9.0, True, 0, 1),
        Call(3, 4, "eager", 8.0, True, 0, 0),
    )
    run = replace(
        run,
        sequence=(1, 2, 3, 4),
        calls=calls,
        failed_compiles=1,
        steady_state_us=256000.0,
        steady_state_min_us=80.0,
        steady_state_p90_us=300000.0,
        steady_state_noisy=True,
        marked_dims=0,
        notes=("nothing to mark: no batch dim is a tensor dim",),
    )
    return replace(report, runs=(run, replace(report.runs[1], sequence=(1, 2, 3, 4))))


def test_failed_attempts_glyph_column_notes_and_noise():
    report = _with_failed_attempt()
    text = render_report(report, "table", width=120)
    assert "△ failed compile (no graph)" in text
    row = next(line.split() for line in text.splitlines() if line.startswith("default   "))
    assert row[1:] == ["●", "▲", "△", "○"]
    header = next(line for line in text.splitlines() if "compiles" in line)
    assert header.split()[:4] == ["strategy", "compiles", "failed", "recompiles"]
    summary = next(line.split() for line in text.splitlines() if line.startswith("★ default"))
    assert summary[3] == "1" and "~256000.0" in summary
    assert "default: nothing to mark" in text.split("Notes", 1)[1]
    assert "µs/call too noisy to rank" in text and "default (min 80.0, median 256000.0" in text
    assert max(len(line) for line in text.splitlines()) <= 120
    md = render_report(report, "markdown")
    assert "| strategy | compiles | failed | recompiles |" in md
    assert "`● ▲ △ ○`" in md and "- default: nothing to mark" in md
    assert "failed_compiles=1" in render_report(report, "junit")
    assert from_json(render_report(report, "json")) == report


def test_failed_column_only_when_a_run_failed_a_compile():
    text = render_report(sample_report(), "table")
    header = next(line for line in text.splitlines() if "compiles" in line)
    assert "failed" not in header


# --- named size symbols -----------------------------------------------------------------------


DATA = TESTS / "render" / "data"

TWO = """\
name: two
target: attn.py:attn
inputs:
  - {shape: [B, S, 16]}
  - {shape: [B, S, 16]}
sequences:
  prefill: {grid: {B: [1, 2], S: [7, 33]}}
  big: {grid: {B: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10], S: [7, 33, 128]}}
strategies: [default, mark_unbacked, mixed]
custom_strategies:
  mixed: {mark: {B: unbacked, S: dynamic}}
repeats: 2
"""
ATTN = "def attn(q, k):\n    return (q @ k.transpose(-1, -2)).softmax(-1).sum(-1)\n"


@pytest.fixture(scope="module")
def two(tmp_path_factory):
    """A real two-symbol report: B and S move, prefill a 2x2 grid, big a 10x3 grid."""
    from recompile_probe.execution.session import run_scenario
    from recompile_probe.scenario.load import load

    folder = tmp_path_factory.mktemp("two")
    (folder / "attn.py").write_text(ATTN)
    (folder / "two.yaml").write_text(TWO)
    return run_scenario(load(str(folder / "two.yaml")))


def _section(text: str, name: str) -> list[str]:
    """The lines of one sequence's section of a table render."""
    lines = text.split(f"\nSequence {name}: ", 1)[1].split("\nSequence ", 1)[0].splitlines()
    return lines


def _timeline(lines: list[str]) -> list[str]:
    start = next(i for i, line in enumerate(lines) if line.startswith("Timeline"))
    return lines[start : lines.index("", start)]


def _rows(lines: list[str], first: str) -> list[list[str]]:
    """The timeline rows headed ``first`` (a symbol or a strategy), one per wrapped table."""
    return [line.split()[1:] for line in _timeline(lines) if line.split()[:1] == [first]]


def test_two_symbols_table_title_timeline_reasons_verdict(two):
    text = render_report(two, "table", width=100)
    assert max(len(line) for line in text.splitlines()) <= 100
    assert "B = 1 → 1" not in text and "B 1 → 1" not in text
    lines = _section(text, "prefill")
    assert lines[0].startswith("(B 1, S 7) → (B 1, S 33) → (B 2, S 7) → (B 2, S 33) · eager")
    # one header row per symbol above the marks
    assert _rows(lines, "B") == [["1", "1", "2", "2"]]
    assert _rows(lines, "S") == [["7", "33", "7", "33"]]
    default = next(r for r in two.runs_for("prefill") if r.strategy == "default")
    (marks,) = _rows(lines, "default")
    assert marks == [cells.glyph(c) for c in default.calls]
    assert marks.count("▲") == default.recompiles >= 2  # Dynamo's own count (metrics)
    # each change agrees with the guard Dynamo says failed: S moved 7 → 33 at call 1 (dim 1)
    reasons = " ".join("\n".join(lines).split("Recompile reasons", 1)[1].split())
    assert (
        "default 1 S 7 → 33 0/1 static_size_change 0/0: tensor 'k' size mismatch at "
        "index 1. expected 7, actual 33" in reasons
    )
    # call 2: both moved; only what changed is named
    assert "default 2 B 1 → 2, S 33 → 7 0/2 zero_one_specialization" in reasons
    verdict = " ".join(" ".join(lines).split("Verdict: ", 1)[1].split())
    assert verdict.startswith("prefill (B 1, S 7) → (B 1, S 33) → (B 2, S 7) → (B 2, S 33): ")
    assert "(first at call 1, S 7 → 33)" in verdict


def test_a_long_grid_wraps_the_timeline_within_100_columns(two):
    text = render_report(two, "table", width=100)
    lines = _section(text, "big")
    assert max(len(line) for line in text.splitlines()) <= 100
    assert "27 more" in lines[0] or "more …" in lines[0]  # the title abbreviates
    b = [v for row in _rows(lines, "B") for v in row]
    s = [v for row in _rows(lines, "S") for v in row]
    assert len(_rows(lines, "B")) >= 2  # wrapped, not squeezed
    assert b == [str(n) for n in range(1, 11) for _ in range(3)]
    assert s == ["7", "33", "128"] * 10
    for run in two.runs_for("big"):
        marks = [m for row in _rows(lines, run.strategy) for m in row]
        assert marks == [cells.glyph(c) for c in run.calls] and len(marks) == 30


def test_two_symbols_markdown_junit_and_json(two):
    md = render_report(two, "markdown")
    assert "### Sequence `prefill`: (B 1, S 7) → (B 1, S 33) → (B 2, S 7) → (B 2, S 33)" in md
    assert "| strategy | call | change | compile id | kind | reason |" in md
    assert (
        "| default | 1 | S 7 → 33 | 0/1 | static_size_change | 0/0: tensor 'k' size "
        "mismatch at index 1. expected 7, actual 33 |" in md
    )
    assert "(first at call 1, S 7 → 33)" in md
    # a failure's text names the change; budgets evaluated as `check` does
    runs = tuple(
        replace(r, violations=evaluate(r, [Budget("*", "*", "max_recompiles", 0)]))
        for r in two.runs
    )
    root = ET.fromstring(render_report(replace(two, runs=runs), "junit"))
    case = next(
        c
        for c in root.iter("testcase")
        if c.get("classname") == "recompile_probe.two.prefill" and c.get("name") == "default"
    )
    default = next(r for r in two.runs_for("prefill") if r.strategy == "default")
    assert case.find("system-out").text.startswith(
        "sequence (B 1, S 7) → (B 1, S 33) → (B 2, S 7) → (B 2, S 33): "
        f"compiles={default.compiles} "
    )
    failure = case.find("failure").text
    assert (
        "- call 1 (S 7 → 33): 0/0: tensor 'k' size mismatch at index 1. expected 7, "
        "actual 33" in failure
    )
    big = next(c for c in root.iter("testcase") if c.get("classname").endswith(".big"))
    assert "more …" in big.find("system-out").text.split(":")[0]
    # points survive a saved report: it re-renders the same without torch
    again = from_json(render_report(two, "json"))
    assert again == two and render_report(again, "table", width=100) == render_report(
        two, "table", width=100
    )


def test_two_symbols_error_line_names_the_point(two):
    run = next(r for r in two.runs_for("prefill") if r.strategy == "mark_unbacked")
    failed = replace(run, status="error", error=RunError("X", "boom", 2), calls=run.calls[:3])
    assert cells.error_line(failed) == "mark_unbacked: X at call 2 (B 2, S 7): boom"


DRIVER = """\
target: prog.py:step
driver: prog.py:run
dims: {B: {0: [0]}, S: {0: [1]}}
sequences:
  gen: [{B: 1, S: 7}, {B: 2, S: 7}]
strategies: [default, mark_unbacked]
repeats: 0
"""
PROG = '''\
import torch


def step(x):
    return x.softmax(-1).sum(-1)


def run(fn, B, S):
    """A prefill call, then two decode calls: three calls per point, like generate()."""
    torch.manual_seed(0)
    out = [fn(torch.randn(B, S, 16))]
    out += [fn(torch.randn(B, 1, 16)) for _ in range(2)]
    return out
'''


@pytest.fixture(scope="module")
def driven(tmp_path_factory):
    from recompile_probe.execution.session import run_scenario
    from recompile_probe.scenario.load import load

    folder = tmp_path_factory.mktemp("driver")
    (folder / "prog.py").write_text(PROG)
    (folder / "driver.yaml").write_text(DRIVER)
    return run_scenario(load(str(folder / "driver.yaml")))


def test_a_driver_groups_its_calls_by_point(driven):
    text = render_report(driven, "table", width=100)
    assert cells.GROUPED in text
    lines = _section(text, "gen")
    assert _rows(lines, "B") == [["1", "2"]] and _rows(lines, "S") == [["7", "7"]]
    for run in driven.runs:
        assert len(run.calls) == 6  # the driver's calls, every one recorded
        (groups,) = _rows(lines, run.strategy)
        assert groups == [
            "".join(cells.glyph(c) for c in run.calls if c.point_index == k) for k in (0, 1)
        ]
        assert "".join(groups).count("▲") == run.recompiles
    default = next(r for r in driven.runs if r.strategy == "default")
    assert default.recompiles >= 1
    # call 1 recompiled inside the first point (the decode call's S): not a point change
    labels = [moved(default, t) for t in transitions(default)]
    assert "step 1 at B 1, S 7" in labels
    assert "step 1 at B 1, S 7" in text.split("Recompile reasons", 1)[1]
    md = render_report(driven, "markdown")
    assert cells.GROUPED in md
    assert f"`{' '.join(groups)}`" in md


# --- batch-only reports (no points) read unchanged ------------------------------------------------


def _renderings(report: Report) -> dict[str, str]:
    """Every view of a report: what tests/render/data/*.expected.json holds, rendered by the
    renderers of commit 082a408 (before size symbols reached the views)."""
    from recompile_probe.analysis import baseline
    from recompile_probe.analysis.explain import Explained, explain
    from recompile_probe.render.formats import Document, Layout, render
    from recompile_probe.strategies.advice import Arguments
    from recompile_probe.strategies.builtins import BUILTINS

    out = {f"table{w}": render_report(report, "table", width=w) for w in (100, 120)}
    out["markdown"] = render_report(report, "markdown")
    out["junit"] = render_report(report, "junit")
    xs, notes = explain(
        report,
        dict(BUILTINS),
        Arguments([("L['x']", 0, "B"), ("L['values']", 0, "B")]),
        ["default", "static"],
    )
    explained = Explained(report, tuple(xs), tuple(notes))
    out["explain"] = render(Document.EXPLAIN, "table", explained, Layout(width=100))
    out["explain_markdown"] = render(Document.EXPLAIN, "markdown", explained)
    bs = [Budget("*", "*", "max_recompiles", 0), Budget("*", "*", "outputs_match", True)]
    out["reasons"] = "\n".join(
        r for run in report.runs for v in evaluate(run, bs) for r in v.reasons
    )
    same = baseline.Comparison(tuple(baseline.pair([report], [report])))
    out["diff"] = render(Document.DIFF, "table", same, Layout(width=120))
    return out


def _with_points(data: dict) -> dict:
    """The same report as today's probe writes it for a batch-only scenario."""
    data = json.loads(json.dumps(data))
    for run in data["runs"]:
        run["points"] = [{"B": b} for b in run["sequence"]]
        for i, call in enumerate(run["calls"]):
            call.update(sizes={"B": call["batch_size"]}, point_index=i, step=0)
        for event in run["compile_events"]:
            if event.get("reason_detail"):
                event["reason_detail"]["symbol"] = "B"
        for entry in run["entries"]:
            entry["sizes"] = {"B": entry["batch_size"]}
    return data


def test_a_batch_only_report_without_points_renders_byte_for_byte():
    """A real batch-only report without size symbols (no points, no sizes), and the same report
    with them as the probe writes it: every view equals the saved expected renderings."""
    data = json.loads((DATA / "batch_only_without_points.json").read_text())
    assert "points" not in data["runs"][0] and "sizes" not in data["runs"][0]["calls"][0]
    expected = json.loads((DATA / "batch_only_without_points.expected.json").read_text())
    old = _renderings(from_dict(data))
    assert old.keys() == expected.keys()
    for name in expected:
        assert old[name] == expected[name], name
    now = _renderings(from_dict(_with_points(data)))
    for name in expected:
        assert now[name] == expected[name], name


def test_a_noisy_eager_figure_is_marked_in_the_terminal_and_html():
    from dataclasses import replace

    from helpers import render_report, sample_report

    report = sample_report()

    def eager(median, fastest, noisy):
        runs = tuple(
            replace(r, eager_us=median, eager_min_us=fastest, eager_noisy=noisy)
            for r in report.runs
        )
        return replace(report, runs=runs)

    steady, noisy = eager(50.0, 45.0, False), eager(90.0, 40.0, True)
    assert "eager 50.0 µs/call" in render_report(steady)
    table, html = render_report(noisy), render_report(noisy, "html")
    for text in (table, html):
        assert "eager ~90.0 µs/call (too noisy to compare: fastest 40.0)" in text


def test_a_strategy_name_is_never_broken_where_the_columns_are_many():
    """backed_size_oblivious beside a failed column and a wide µs figure at a pipe's width (120):
    one line, every cell whole (the gaps narrow instead)."""
    report = _with_failed_attempt()
    names = ("backed_size_oblivious", "unsupported_one")
    runs = (
        replace(report.runs[0], strategy=names[0]),
        replace(report.runs[1], strategy=names[1], status="unsupported"),
    )
    text = render_report(replace(report, runs=runs), "table", width=120)
    lines = text.splitlines()
    assert any(line.startswith("★ backed_size_oblivious ") for line in lines), text
    assert any(
        line.startswith(names[1] + " ") and line.rstrip().endswith("unsupported") for line in lines
    ), text
    assert max(len(line) for line in lines) <= 120


def test_past_a_pipes_width_the_coverage_cell_folds_and_every_strategy_keeps_its_name():
    """Many columns, a failed column and a long coverage cell at a pipe's width (120): the
    coverage cell folds onto a second line; the strategy column and every figure stay whole."""
    from recompile_probe.records.coverage import Coverage, Unserved

    report = _with_failed_attempt()
    partial = Coverage(
        ranges={"B": (1, 64)},
        method="enumerated",
        scope="every frame",
        proved=False,
        unserved=(
            Unserved(
                sizes={"B": (1, 1)},
                outcome="recompile",
                guard=None,
                reason_kind=None,
                origin=None,
            ),
        ),
        counterexample={"B": 1},
        complete=False,
    )
    names = ("backed_size_oblivious", "mark_unbacked")
    runs = tuple(
        replace(run, strategy=name, coverage=partial, steady_state_us=123456.7)
        for run, name in zip(report.runs, names)
    )
    text = render_report(replace(report, runs=runs), "table", width=120)
    lines = text.splitlines()
    assert any(line.startswith("strategy ") for line in lines), text
    for name in names:
        row = next(line for line in lines if line.lstrip("★ ").startswith(name + " "))
        assert "123456.7" in row, text
    assert "partial list)" in text, text  # the coverage cell, folded or not
    assert max(len(line) for line in lines) <= 120
