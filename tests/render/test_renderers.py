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


def _with_failed_attempt() -> model.Report:
    """default: call 2 hit the recompile limit (no graph, one failed compile), call 3 ran eagerly."""
    report = sample_report()
    run = report.runs[0]
    calls = (model.Call(0, 1, "compile", 100.0, True, 1, 0),
             model.Call(1, 2, "recompile", 90.0, True, 1, 0),
             model.Call(2, 3, "recompile", 9.0, True, 0, 1),
             model.Call(3, 4, "eager", 8.0, True, 0, 0))
    run = model.replace(run, sequence=(1, 2, 3, 4), calls=calls, failed_compiles=1,
                        steady_state_us=256000.0, steady_state_min_us=80.0,
                        steady_state_p90_us=300000.0, steady_state_noisy=True,
                        marked_dims=0, notes=("nothing to mark: no batch dim is a tensor dim",))
    return model.replace(report, runs=(run, model.replace(report.runs[1], sequence=(1, 2, 3, 4))))


def test_failed_attempts_glyph_column_notes_and_noise():
    report = _with_failed_attempt()
    text = render(report, "table", width=120)
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
    md = render(report, "markdown")
    assert "| strategy | compiles | failed | recompiles |" in md
    assert "`● ▲ △ ○`" in md and "- default: nothing to mark" in md
    assert "failed_compiles=1" in render(report, "junit")
    assert model.from_json(render(report, "json")) == report


def test_failed_column_only_when_a_run_failed_a_compile():
    text = render(sample_report(), "table")
    header = next(line for line in text.splitlines() if "compiles" in line)
    assert "failed" not in header
