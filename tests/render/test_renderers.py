"""Renderers read records only: a saved report re-renders identically without a re-run."""

from __future__ import annotations

import pytest

from recompile_probe import model
from recompile_probe.render import FORMATS, render
from test_model import sample_report


@pytest.mark.parametrize("fmt", FORMATS)
def test_every_format_renders_the_sample(fmt):
    text = render(sample_report(), fmt)
    assert text.strip()


def test_table_has_summary_timeline_reasons_and_verdict():
    text = render(sample_report(), "table", width=100)
    assert "Sequence rl: B = 1 → 2" in text
    assert "★ default" in text  # the only eligible run is the best
    timeline = [line.split() for line in text.splitlines() if line.startswith("default ")]
    assert ["default", "●", "▲"] in timeline
    assert "tensor 'x' size mismatch" in text
    assert "mark_unbacked: GuardOnDataDependentSymNode at call 0: Could not guard" in text
    assert "Verdict: rl [1, 2]: default wins with 2 compiles" in text
    assert max(len(line) for line in text.splitlines()) <= 100


def test_missing_figures_read_n_a():
    text = render(sample_report(), "table")
    row = next(line for line in text.splitlines() if line.startswith("mark_unbacked"))
    assert "n/a" in row


def test_markdown_tables_and_escaping():
    report = sample_report()
    run = report.runs[0]
    event = model.replace(run.compile_events[0], reason="a | b\nsecond  # comment")
    report = model.replace(report, runs=(model.replace(run, compile_events=(event,)),
                                         report.runs[1]))
    text = render(report, "markdown")
    assert "| strategy | compiles | recompiles | graphs | guards | shape guards |" in text
    assert "a \\| b<br>second" in text and "# comment" not in text
    assert "**Verdict:**" in text


def test_json_render_is_the_contract():
    assert model.from_json(render(sample_report(), "json")) == sample_report()


def test_incomplete_reports_say_so():
    report = model.replace(sample_report(), complete=False)
    assert "Interrupted" in render(report, "table")
    assert "Interrupted" in render(report, "markdown")
