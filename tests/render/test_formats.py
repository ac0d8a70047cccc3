"""The format table: each row's renderers exist and render what the format promises, nothing a
format module holds is left out of the table, and every command's --format follows it."""

from __future__ import annotations

import importlib
import json
import xml.etree.ElementTree as ET

import pytest
from typer.testing import CliRunner

from helpers import render_report, sample_report
from recompile_probe.cli import app
from recompile_probe.records.report import from_json
from recompile_probe.render import formats
from recompile_probe.render.formats import FORMATS, Document, Layout

DOCUMENT_FUNCTIONS = {"reports", "check", "explain", "suggest", "functions", "diff"}


@pytest.mark.parametrize("fmt", FORMATS, ids=lambda f: f.name)
def test_each_row_names_a_renderer_for_each_of_its_documents_and_no_more(fmt):
    module = importlib.import_module(f"recompile_probe.render.{fmt.module}")
    if hasattr(module, "__path__"):
        found = {
            name
            for name in DOCUMENT_FUNCTIONS
            if importlib.util.find_spec(f"{module.__name__}.{name}") is not None
        }
    else:
        found = {name for name in DOCUMENT_FUNCTIONS if callable(getattr(module, name, None))}
    assert found == {d.function for d in fmt.documents}
    for document in fmt.documents:
        assert callable(formats.renderer(document, fmt.name))


def test_every_report_format_renders_the_report_it_was_given():
    report = sample_report()
    assert from_json(render_report(report, "json")) == report
    suites = ET.fromstring(render_report(report, "junit"))
    assert int(suites.get("tests")) == len(report.runs) == len(suites.findall(".//testcase"))
    md = render_report(report, "markdown")
    assert md.startswith(f"## recompile-probe: {report.scenario.name}\n")
    html = render_report(report, "html")
    assert html.startswith("<!DOCTYPE html>") and f"recompile-probe: {report.scenario.name}" in html
    table = render_report(report, "table")
    for run in report.runs:
        assert run.strategy in table and run.strategy in md and run.strategy in html
    assert "Verdict: rl [1, 2]: default wins with 2 compiles" in table


def test_several_reports_are_one_bundle_in_json_and_one_suite_each_in_junit():
    a = sample_report()
    bundle = json.loads(formats.render(Document.REPORTS, "json", [a, a]))
    assert bundle["schema_version"] == 1 and len(bundle["reports"]) == 2
    suites = ET.fromstring(formats.render(Document.REPORTS, "junit", [a, a]))
    assert len(suites.findall("testsuite")) == 2


def test_a_terminal_caps_prose_and_a_file_gets_the_documents_width():
    assert Document.EXPLAIN.width(300) == 100 and Document.EXPLAIN.width(80) == 80
    assert Document.REPORTS.width(300) == 300
    assert Document.CHECK.width(None) == 240  # a CI log: a reason is never folded
    text = formats.render(Document.REPORTS, "table", [sample_report()], Layout(width=70))
    assert max(len(line) for line in text.splitlines()) <= 70


@pytest.mark.parametrize(
    ("command", "shown"),
    [
        (["run"], "table | json | markdown | junit | html"),
        (["explain"], "table | json | markdown | html"),
        (["suggest"], "table | json | markdown"),
        (["watch"], "table | json | markdown | html"),
        (["summarize"], "table | json | markdown | html"),
        (["diff"], "table | markdown"),
    ],
)
def test_each_commands_format_help_lists_what_the_table_gives_it(command, shown):
    out = CliRunner().invoke(app, [*command, "--help"], env={"COLUMNS": "300"}).output
    assert shown in " ".join(out.split())


def test_a_format_a_command_cannot_write_is_one_usage_error(tmp_path):
    saved = tmp_path / "r.json"
    saved.write_text(render_report(sample_report(), "json"))
    result = CliRunner().invoke(app, ["diff", str(saved), str(saved), "-f", "junit"])
    assert result.exit_code == 2
    assert "junit does not render a diff" in result.output
    assert "Formats: table, markdown." in result.output
    result = CliRunner().invoke(app, ["render", str(saved), "-f", "markdwn"])
    assert result.exit_code == 2 and "did you mean 'markdown'" in result.output.lower()
    assert "Traceback" not in result.output
