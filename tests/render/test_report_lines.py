"""A run report's prepared lines (render/lines/reports.py), against real runs: one recompile row
per recompile Dynamo made (its compile events), and every format shows the same verdicts and
rows, built once."""

from __future__ import annotations

import html
import re

import pytest

from helpers import CONFIGS
from recompile_probe.execution.session import run_scenario
from recompile_probe.render.formats import Document, render
from recompile_probe.render.lines.reports import SequenceLines, of_report
from recompile_probe.scenario.load import load
from recompile_probe.scenario.overrides import with_overrides

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def report():
    scenario = with_overrides(
        load(CONFIGS / "logprobs.yaml"), strategies=["default", "static", "dynamic_true"]
    )
    return run_scenario(scenario)


def test_a_row_per_recompile_dynamo_made(report):
    parts = of_report(report)
    assert [p.name for p in parts] == [name for name, _ in report.sequences()]
    for seq in parts:
        assert isinstance(seq, SequenceLines)
        for run in seq.runs:
            # the compile events of frames that already had an entry, as Dynamo's metrics say
            recompiled = [e for e in run.compile_events if e.recompile]
            rows = [t for t in seq.recompiles if t.run is run]
            assert [t.compile_id for t in rows] == [e.compile_id for e in recompiled]
            assert all(t.call_index == e.call_index for t, e in zip(rows, recompiled))
    assert any(seq.recompiles for seq in parts)  # static recompiles on 1 -> 2 -> 8


def test_every_format_shows_the_verdicts_and_rows_it_was_given(report):
    parts = [p for p in of_report(report) if isinstance(p, SequenceLines)]
    table = render(Document.REPORTS, "table", [report])
    page = html.unescape(render(Document.REPORTS, "html", [report]))
    markdown = render(Document.REPORTS, "markdown", [report])
    for seq in parts:
        for shown in (table, page, markdown):
            assert seq.verdict in " ".join(shown.split()), seq.verdict[:60]
    rows = sum(len(seq.recompiles) for seq in parts)
    assert page.count('<span class="kind">') == rows
    # the Markdown reasons table: a row per recompile, after its header
    assert len(re.findall(r"^\| \w+ \| \d+ \| .+ \| \d+/\d+ \|", markdown, re.M)) == rows


def test_the_reasons_column_gets_the_room_the_headers_leave(report):
    """The fixed columns are measured with the header they show ("B" for a batch-only
    sequence), so a user line that fits the width is shown whole."""
    table = render(Document.REPORTS, "table", [report])
    assert "`return (x >= values).sum(-1)`" in table
    assert max(len(line) for line in table.splitlines()) <= Document.REPORTS.file_width
