"""`--cover`, the no_recompile_in budget and the coverage report, from the command line."""

from __future__ import annotations

import json

import jsonschema
from typer.testing import CliRunner

from helpers import CONFIGS
from recompile_probe.cli import app
from recompile_probe.records.report import from_json, to_json
from recompile_probe.schema.documents import report_schema

SCENARIO = str(CONFIGS / "coverage.yaml")


def _invoke(*args):
    return CliRunner().invoke(app, list(args), terminal_width=200)


def test_check_fails_on_the_seeds_zero_one_specialisation_and_passes_the_vllm_fix():
    broken = _invoke("check", SCENARIO, "-q", "-s", "default", "--no-recompile-in", "B=1..4096")
    assert broken.exit_code == 1, broken.output
    assert "B = 1 recompiles" in broken.output
    assert "2 <= L['x'].size()[0]" in broken.output and "logprobs.py:13" in broken.output
    fixed = _invoke("check", SCENARIO, "-q", "-s", "mark_unbacked")
    assert fixed.exit_code == 0, fixed.output


def test_the_report_holds_the_coverage_and_reads_back_equal(tmp_path):
    out = tmp_path / "r.json"
    result = _invoke("run", SCENARIO, "-q", "--cover", "B=0..4096", "-f", "json", "-o", str(out))
    assert result.exit_code == 0, result.output
    data = json.loads(out.read_text())
    jsonschema.validate(data, report_schema(strict=True))
    by = {r["strategy"]: r["coverage"] for r in data["runs"]}
    assert by["default"]["counterexample"] == {"B": 0}
    assert by["default"]["unserved"][0]["sizes"] == {"B": [0, 1]}
    assert by["mark_unbacked"]["proved"] is True
    report = from_json(out.read_text())
    assert from_json(to_json(report)) == report
    table = _invoke("render", str(out))
    assert "covers" in table.output and "✓ 0..4096 proved" in table.output
    assert "smallest unserved: B = 0" in table.output


def test_a_malformed_range_is_one_line_and_exit_2():
    for flag in ("B=4..1", "B=1-", "Q=1..4"):
        result = _invoke("run", SCENARIO, "-q", "--cover", flag)
        assert result.exit_code == 2, (flag, result.output)
        assert "Traceback" not in result.output


def test_explain_shows_the_coverage_of_the_run_it_explains():
    # after B = 1 -> 2 -> 8 the default strategy holds a static entry for B = 1 and a dynamic
    # one for 2 <= B: every size of [1, 4096] is served
    result = _invoke(
        "explain",
        str(CONFIGS / "logprobs.yaml"),
        "-q",
        "-s",
        "default",
        "--sequence",
        "rl",
        "--cover",
        "B=1..4096",
    )
    assert result.exit_code == 0, result.output
    assert "default: B ∈ [1, 4096]: every size served (proved, every frame)" in result.output
    clash = _invoke("explain", "--from-report", "x.json", "--cover", "B=1..4")
    assert clash.exit_code == 2 and "--cover and --from-report" in clash.output


def test_a_budget_over_sizes_the_report_never_decided_fails(tmp_path):
    out = tmp_path / "r.json"
    made = _invoke("run", SCENARIO, "-q", "-s", "mark_unbacked", "-f", "json", "-o", str(out))
    assert made.exit_code == 0, made.output
    inside = _invoke(
        "check",
        SCENARIO,
        "-s",
        "mark_unbacked",
        "--from-report",
        str(out),
        "--no-recompile-in",
        "B=2..64",
    )
    assert inside.exit_code == 0, inside.output
    wider = _invoke(
        "check",
        SCENARIO,
        "-s",
        "mark_unbacked",
        "--from-report",
        str(out),
        "--no-recompile-in",
        "B=1..100000",
    )
    assert wider.exit_code == 1, wider.output
    assert "outside the range decided" in wider.output
