"""Where findings land when the user's line is not in the repository, and what goes in them."""

from __future__ import annotations

from typer.testing import CliRunner

from helpers import PROGRAMS
from recompile_probe.analysis.findings import of_reports
from recompile_probe.cli import app
from recompile_probe.records.finding import Kind, Severity
from recompile_probe.records.report import reports_from_json

HERE = PROGRAMS / "annotations"


def _reports(tmp_path, scenario=HERE / "serving.yaml"):
    out = tmp_path / "r.json"
    result = CliRunner().invoke(app, ["run", str(scenario), "-q", "-f", "json", "-o", str(out)])
    assert result.exit_code == 0, result.output
    return reports_from_json(out.read_text(), str(out))


def test_paths_are_relative_to_the_root_and_lines_outside_it_go_to_the_scenario(tmp_path):
    reports = _reports(tmp_path)
    inside = of_reports(reports, base=HERE)
    assert {f.file for f in inside} == {"serving.py"}
    # a root above neither file: no place in the diff, so no file at all
    outside = of_reports(reports, base=tmp_path)
    assert {(f.file, f.line) for f in outside} == {(None, None)}


def test_a_user_line_outside_the_root_goes_on_the_scenarios_first_line(tmp_path):
    program = HERE / "serving.py"
    text = (HERE / "serving.yaml").read_text()
    scenario = tmp_path / "serving.yaml"
    scenario.write_text(
        text.replace("serving.py:step", f"{program}:step").replace(
            "serving.py:make_inputs", f"{program}:make_inputs"
        )
    )
    found = of_reports(_reports(tmp_path, scenario), base=tmp_path)
    assert found and {(f.file, f.line) for f in found} == {("serving.yaml", 1)}


def test_a_run_without_budgets_warns_and_each_finding_has_its_runs(tmp_path):
    found = of_reports(_reports(tmp_path), base=HERE)
    assert {f.kind for f in found} == {Kind.RECOMPILE}
    assert {f.severity for f in found} == {Severity.WARNING}
    loop = next(f for f in found if "python_scalar_change" in f.title)
    assert loop.seen_in == (
        "serving-annotations / serve / default",
        "serving-annotations / serve / mark_dynamic",
    )
    assert len({f.fingerprint for f in found}) == len(found)
