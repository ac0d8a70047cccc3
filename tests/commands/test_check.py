"""`check`, budgets, baselines, `diff` and `render` as a CI job uses them."""

from __future__ import annotations

import json
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest
from typer.testing import CliRunner

from recompile_probe.cli import app

HOLDS = """
name: sampler
target: logprobs.count_greater_than
params: {vocab_size: 64}
sequences: {rl: [1, 2, 8], chat: [4, 1]}
strategies: [default, mark_unbacked]
expect:
  "*": {outputs_match: true, status: ok}
  default: {max_recompiles: 1, max_compiles: 2}
  mark_unbacked: {max_compiles: 1, max_graphs: 1, max_recompiles: 0}
"""
BROKEN = HOLDS.replace(
    "default: {max_recompiles: 1, max_compiles: 2}",
    "default: {max_recompiles: 0, rl: {max_guards: 3}}",
)
NO_TORCH = "import sys; sys.modules['torch'] = None\n"


def check(*args, env=None):
    return CliRunner().invoke(app, ["check", "--quiet", *map(str, args)], env=env)


def test_budgets_that_hold_exit_0(write_scenario, tmp_path):
    result = check(write_scenario(HOLDS))
    assert result.exit_code == 0, result.output
    assert "0 violated" in result.output


def test_broken_budgets_exit_1_with_every_violation_and_reason(write_scenario, tmp_path):
    junit, md, js = tmp_path / "j.xml", tmp_path / "s.md", tmp_path / "r.json"
    summary = tmp_path / "step_summary.md"
    summary.write_text("earlier step\n")
    result = check(
        write_scenario(BROKEN),
        "--junit",
        junit,
        "--markdown",
        md,
        "--json",
        js,
        env={"GITHUB_STEP_SUMMARY": str(summary)},
    )
    assert result.exit_code == 1, result.output
    out = result.stdout
    # both sequences recompile under default, and the rl guard budget breaks too: all reported
    assert out.count("max_recompiles") == 2 and "max_guards" in out
    assert "tensor 'x' size mismatch at index 0. expected 1, actual 2" in out
    assert "expected 4, actual 1" in out

    tree = ET.parse(junit)  # a real XML parser
    root = tree.getroot()
    cases = root.findall(".//testcase")
    assert len(cases) == 4  # one per scenario x sequence x strategy
    failed = {(c.get("classname"), c.get("name")): c.findall("failure") for c in cases}
    assert len(failed[("recompile_probe.sampler.rl", "default")]) == 2
    assert len(failed[("recompile_probe.sampler.chat", "default")]) == 1
    assert failed[("recompile_probe.sampler.rl", "mark_unbacked")] == []
    assert root.get("tests") == "4" and root.get("failures") == "2"
    text = failed[("recompile_probe.sampler.rl", "default")][0].text
    assert "size mismatch" in text and "budget set at" in text

    markdown = md.read_text()
    assert "❌ failed" in markdown and "| sampler | rl | default | `max_recompiles`" in markdown
    assert summary.read_text().startswith("earlier step\n") and markdown in summary.read_text()
    runs = json.loads(js.read_text())["runs"]
    assert sum(len(r["violations"]) for r in runs) == 3


@pytest.mark.parametrize(
    "expect, line, fragment",
    [
        ("expect:\n  default: {max_recompile: 0}\n", 7, "Did you mean 'max_recompiles'"),
        ("expect:\n  defualt: {max_recompiles: 0}\n", 7, "Did you mean 'default'"),
        ("expect:\n  '*': {max_compiles: -1}\n", 7, "non-negative"),
        ("expect:\n  '*': {status: fine}\n", 7, "unknown status"),
        ("expect:\n  '*': {rl: {max_graph: 1}}\n", 7, "Did you mean 'max_graphs'"),
        ("expect:\n  '*': {outputs_match: yes please}\n", 7, "true or false"),
    ],
)
def test_malformed_budget_exits_2_naming_key_and_line(write_scenario, expect, line, fragment):
    text = HOLDS.split("expect:")[0].lstrip() + expect
    path = write_scenario(text)
    result = check(path)
    assert result.exit_code == 2, result.output
    assert f"{path}:{line}" in result.output and fragment in result.output


def test_cli_budget_overrides_the_file_and_strategy_filter(write_scenario):
    path = write_scenario(HOLDS)
    assert check(path, "--max-recompiles", "0").exit_code == 1
    assert check(path, "--max-recompiles", "0", "--strategy", "mark_unbacked").exit_code == 0


def test_directory_of_scenarios_and_eager_failure_exit_3(write_scenario, tmp_path):
    folder = tmp_path / "suite"
    folder.mkdir()
    (folder / "a.yaml").write_text(HOLDS)
    (folder / "b.yaml").write_text(HOLDS.replace("name: sampler", "name: other"))
    bundle = tmp_path / "bundle.json"
    result = check(folder, "--json", bundle)
    assert result.exit_code == 0 and "2 scenarios" in result.output
    data = json.loads(bundle.read_text())
    assert data["schema_version"] == 1
    assert [r["scenario"]["name"] for r in data["reports"]] == ["sampler", "other"]
    rendered = CliRunner().invoke(app, ["render", str(bundle), "--format", "markdown"])
    assert rendered.exit_code == 0 and rendered.stdout.count("## recompile-probe:") == 2
    (folder / "user_targets.py").write_text((tmp_path / "user_targets.py").read_text())
    (folder / "c.yaml").write_text(
        "target: user_targets.py:eager_fails\ninputs: [{shape: [B]}]\nsequences: {s: [1]}\n"
    )
    result = check(folder)
    assert result.exit_code == 3, result.output
    assert "could not run" in result.output and "2 scenarios" in result.output


def test_baseline_regression_update_and_diff_without_torch(write_scenario, tmp_path):
    base = tmp_path / "baseline.json"
    good = write_scenario(HOLDS.replace("rl: [1, 2, 8]", "rl: [2, 2, 2]"), "good.yaml")
    missing = check(good, "--baseline", base)
    assert missing.exit_code == 2 and "cannot read" in missing.output
    created = check(good, "--baseline", base, "--update-baseline")
    assert created.exit_code == 0 and base.exists()
    # the same scenario, now called 1 -> 2 -> 8: more compiles than the baseline
    current = write_scenario(
        HOLDS.replace("max_recompiles: 1, max_compiles: 2", "max_recompiles: 5"), "good.yaml"
    )
    regressed = check(current, "--baseline", base, "--json", tmp_path / "new.json")
    assert regressed.exit_code == 1, regressed.output
    assert "Changes against the baseline" in regressed.stdout
    assert "1 → 2" in regressed.stdout and "regressions" in regressed.stdout
    assert check(current, "--baseline", base, "--tolerance", "1").exit_code == 0
    before = base.read_text()
    accepted = check(current, "--baseline", base, "--update-baseline")
    assert accepted.exit_code == 0 and base.read_text() != before
    assert check(current, "--baseline", base).exit_code == 0

    code = NO_TORCH + (
        "import sys; from recompile_probe.cli import main; "
        "sys.argv = ['recompile-probe'] + sys.argv[1:]; main()"
    )
    for args in (
        ["diff", str(base), str(tmp_path / "new.json")],
        ["render", str(base), "--format", "junit"],
        ["render", str(base), "--format", "markdown"],
    ):
        done = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        assert done.stdout.strip()


def test_diff_shows_regressions_and_can_fail(tmp_path):
    from dataclasses import replace

    from helpers import sample_report
    from recompile_probe.records.report import to_json

    old = sample_report()
    worse_run = replace(old.runs[0], compiles=4, recompiles=3, graphs=4)
    new = replace(old, runs=(worse_run, old.runs[1]))
    (tmp_path / "old.json").write_text(to_json(old))
    (tmp_path / "new.json").write_text(to_json(new))
    result = CliRunner().invoke(
        app, ["diff", str(tmp_path / "old.json"), str(tmp_path / "new.json")]
    )
    assert result.exit_code == 0 and "2 → 4" in result.stdout and "3 regressions" in result.stdout
    failing = CliRunner().invoke(
        app,
        ["diff", str(tmp_path / "old.json"), str(tmp_path / "new.json"), "--fail-on-regression"],
    )
    assert failing.exit_code == 1
    md = CliRunner().invoke(
        app,
        ["diff", str(tmp_path / "old.json"), str(tmp_path / "new.json"), "--format", "markdown"],
    )
    assert "2 → 4 ❌" in md.stdout


def test_update_baseline_needs_baseline(write_scenario):
    result = check(write_scenario(HOLDS), "--update-baseline")
    assert result.exit_code == 2 and "--update-baseline needs --baseline" in result.output


TWO = """
name: two
target: attn.py:attn
inputs:
  - {shape: [B, S, 16]}
  - {shape: [B, S, 16]}
sequences:
  prefill: {grid: {B: [1, 2], S: [7, 33]}}
strategies: [default, mark_unbacked]
repeats: 0
expect:
  "*": {max_recompiles: 0}
"""


def test_two_symbols_violations_junit_markdown_and_diff_name_the_change(write_scenario, tmp_path):
    """B and S move: every reason says what moved ("S 7 → 33", not "B 1 → 1"), next to the guard
    Dynamo says failed; `diff` says which points each side ran."""
    (tmp_path / "attn.py").write_text(
        "def attn(q, k):\n    return (q @ k.transpose(-1, -2)).softmax(-1).sum(-1)\n"
    )
    junit, md, old = tmp_path / "j.xml", tmp_path / "s.md", tmp_path / "old.json"
    result = check(
        write_scenario(TWO, "two.yaml"), "--junit", junit, "--markdown", md, "--json", old
    )
    assert result.exit_code == 1, result.output
    reason = "call 1 (S 7 → 33): 0/0: tensor 'k' size mismatch at index 1. expected 7, actual 33"
    assert reason in result.stdout and "B 1 → 1" not in result.stdout
    assert "call 2 (B 1 → 2, S 33 → 7): " in result.stdout
    failure = (
        next(c for c in ET.parse(junit).getroot().iter("testcase") if c.get("name") == "default")
        .find("failure")
        .text
    )
    assert f"- {reason}" in failure
    assert failure.startswith("sequence (B 1, S 7) → (B 1, S 33) → (B 2, S 7) → (B 2, S 33):")
    rows = [line for line in md.read_text().splitlines() if line.startswith("| two ")]
    assert len(rows) == 1 and reason in rows[0] and rows[0].endswith(" |")  # one table row

    new = tmp_path / "new.json"
    check(write_scenario(TWO.replace("S: [7, 33]", "S: [7, 65]"), "two.yaml"), "--json", new)
    diff = CliRunner().invoke(app, ["diff", str(old), str(new)])
    assert diff.exit_code == 0, diff.output
    lines = diff.stdout.splitlines()
    assert "Sequence prefill differs between the two sides:" in lines
    assert "  old (B 1, S 7) → (B 1, S 33) → (B 2, S 7) → (B 2, S 33)" in lines
    assert "  new (B 1, S 7) → (B 1, S 65) → (B 2, S 7) → (B 2, S 65)" in lines
    same = CliRunner().invoke(app, ["diff", str(old), str(old), "--format", "markdown"])
    assert "- Sequence prefill: (B 1, S 7) → (B 1, S 33) → (B 2, S 7) → (B 2, S 33)" in same.stdout
