"""Outputs that cannot be compared are unknown, never a match or a mismatch: the verdict, the
measured fixes (labelled as measured by counts), check's outputs budget and suggest's budget."""

from __future__ import annotations

import json

import yaml
from typer.testing import CliRunner

from recompile_probe.cli import app

SCENARIO = """
    target: user_targets.py:count_with_handle
    inputs:
      - {shape: [B, 8], dtype: float32, fill: randn}
      - {shape: [B, 1], dtype: float32, fill: randn}
    sequences: {rl: [1, 2, 3]}
    strategies: [default, mark_unbacked]
    repeats: 0
    """


def test_explain_gives_a_fix_measured_by_counts_and_says_so(write_scenario):
    path = write_scenario(SCENARIO)
    result = CliRunner().invoke(app, ["explain", str(path), "--strategy", "default", "-q"])
    assert result.exit_code == 0, result.output
    as_json = CliRunner().invoke(
        app, ["explain", str(path), "--strategy", "default", "-q", "-f", "json"]
    )
    (x,) = json.loads(as_json.stdout)["explanations"]
    (first,) = [r for r in x["recompile_reasons"] if r["call_index"] == 1]
    (fix,) = first["fixes"]
    assert fix["strategy"] == "mark_unbacked" and fix["outputs_compared"] is False
    assert "mark_unbacked (1 compile, n/a µs/call; measured by counts, outputs not compared)" in (
        result.output
    )


def test_run_and_check_treat_not_compared_as_unknown(write_scenario):
    path = write_scenario(
        SCENARIO.rstrip(" ") + "    expect:\n      mark_unbacked: {outputs_match: true}\n"
    )
    run = CliRunner().invoke(app, ["run", str(path), "-q", "-f", "json"])
    runs = {r["strategy"]: r for r in json.loads(run.stdout)["runs"]}
    for r in runs.values():
        assert r["outputs_match"] is None
        assert r["outputs_detail"] == "not compared: [1] is a lock"
    # unknown is not a mismatch: a run whose outputs were not compared can still win
    assert "outputs differ" not in run.stdout
    checked = CliRunner().invoke(app, ["check", str(path), "--quiet"])
    assert checked.exit_code == 1, checked.output  # a budget that cannot be verified fails
    assert "not compared (not compared: [1] is a lock)" in checked.output


def test_suggest_never_writes_an_outputs_budget_it_did_not_verify(write_scenario):
    path = write_scenario(SCENARIO)
    result = CliRunner().invoke(app, ["suggest", str(path), "--write", "-q"])
    assert result.exit_code == 0, result.output
    expect = yaml.safe_load(path.read_text())["expect"]
    (budget,) = expect.values()
    assert "outputs_match" not in budget and budget["max_compiles"] == 1
