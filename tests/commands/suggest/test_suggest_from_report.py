"""`suggest --from-report`: the candidates a saved `run` report already measured are read, not
run again, and the answer is the one a full search gives.

What counts as "not run again" is told by the probe itself: every probe run goes through
``recompile_probe.probe.run.probe``, wrapped here to count them (not the tool's own bookkeeping).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import ROOT
from recompile_probe.commands.suggest.run import suggest
from recompile_probe.errors import ReportError
from recompile_probe.execution import inline as probe_module
from recompile_probe.execution.session import run_scenario
from recompile_probe.records.report import from_json, to_json
from recompile_probe.scenario.load import load
from recompile_probe.scenario.overrides import with_overrides

#: the seed op's two varying dims: 3^2 markings + 5 whole-function strategies (shapes_spec too)
PLANNED = 14
#: the candidates a run of the built-in scenario holds: its default and whole-function runs
READ = ["no marks", "dynamic_true", "unbacked_sources", "backed_size_oblivious", "auto_unbacked"]


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """The built-in scenario untimed (a tie is then decided the same way on every run), and a
    `run` report of it saved as JSON and read back, as --from-report reads it."""
    folder = tmp_path_factory.mktemp("from_report")
    path = folder / "logprobs.yaml"
    path.write_text((ROOT / "configs" / "logprobs.yaml").read_text() + "repeats: 0\n")
    scenario = load(path)
    scenario = with_overrides(
        scenario, strategies=[*scenario.strategies, "backed_size_oblivious", "auto_unbacked"]
    )
    report_file = folder / "report.json"
    report_file.write_text(to_json(run_scenario(scenario)))
    return path, report_file


@pytest.fixture
def probe_runs(monkeypatch):
    calls: list[str] = []
    real = probe_module.probe

    def counted(scenario, target, sequence_name, points, strategy, *args, **kwargs):
        calls.append(strategy.name)
        return real(scenario, target, sequence_name, points, strategy, *args, **kwargs)

    # patched where the prepared scenario calls it (execution/inline.py imports it)
    monkeypatch.setattr(probe_module, "probe", counted)
    return calls


@pytest.mark.slow
def test_the_saved_runs_are_read_and_the_answer_is_the_full_search(saved, probe_runs):
    path, report_file = saved
    report = from_json(report_file.read_text(), str(report_file))
    sequences = len(load(path).points)
    full = suggest(load(path))
    full_probes = len(probe_runs)
    probe_runs.clear()
    reused = suggest(load(path), saved=report, saved_source=str(report_file))
    assert reused.reused == tuple(READ) and reused.from_report == str(report_file)
    # none of the read candidates was probed again; every other one was, once per sequence
    assert not set(READ) & set(probe_runs)
    assert len(probe_runs) == full_probes - len(READ) * sequences
    assert reused.evaluations == full.evaluations == PLANNED and reused.optimal
    assert reused.recommendation is not None and full.recommendation is not None
    assert reused.recommendation.name == full.recommendation.name
    # a read candidate carries the report's own figures: its runs' compiles, summed
    by_name = {c.name: c for c in reused.candidates}
    for strategy, name in [("default", "no marks"), ("dynamic_true", "dynamic_true")]:
        runs = [r for r in report.runs if r.strategy == strategy]
        assert by_name[name].compiles == sum(r.compiles for r in runs)
    assert any("5 candidates read from" in n for n in reused.notes)


def test_a_changed_scenario_file_is_refused(saved, tmp_path):
    path, report_file = saved
    report = from_json(report_file.read_text(), str(report_file))
    changed = tmp_path / "logprobs.yaml"
    changed.write_text(path.read_text() + "# changed\n")
    with pytest.raises(ReportError, match="sha256 differs"):
        suggest(load(changed), saved=report, saved_source=str(report_file))


@pytest.mark.slow
def test_runs_on_another_backend_are_not_reused_and_the_note_says_why(saved, probe_runs):
    path, report_file = saved
    report = from_json(report_file.read_text(), str(report_file))
    other = with_overrides(load(path), backend="aot_eager", strategies=["default"])
    result = suggest(other, saved=report, saved_source=str(report_file), budget=1)
    assert result.reused == ()
    assert probe_runs  # the one candidate the budget allows was measured, not read
    note = next(n for n in result.notes if "read from" in n)
    assert "nothing read from" in note and "on backend aot_eager" in note


@pytest.mark.slow
def test_the_budget_counts_only_what_was_measured(saved, probe_runs):
    path, report_file = saved
    report = from_json(report_file.read_text(), str(report_file))
    result = suggest(load(path), saved=report, saved_source=str(report_file), budget=2)
    measured = [c.name for c in result.candidates if c.name not in result.reused]
    assert len(measured) == 2 and len(result.reused) >= 1
    assert set(probe_runs) == set(measured)
    assert result.stopped_by == "budget"


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "recompile_probe", "suggest", *args],
        capture_output=True,
        text=True,
        env={**os.environ, "OMP_NUM_THREADS": "1"},
        cwd=cwd,
    )


@pytest.mark.slow
def test_the_cli_takes_the_scenario_from_the_report(saved):
    path, report_file = saved
    out = _cli("--from-report", str(report_file), "-f", "json", "-q", cwd=path.parent)
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert data["from_report"] == str(report_file) and data["reused"] == READ
    assert data["scenario"]["path"] == str(path)


def test_the_cli_refuses_a_bundle_and_a_missing_file_without_a_traceback(saved, tmp_path):
    path, report_file = saved
    bundle = tmp_path / "bundle.json"
    one = json.loads(report_file.read_text())
    bundle.write_text(json.dumps({"schema_version": one["schema_version"], "reports": [one, one]}))
    for given, words in [(bundle, "holds 2 reports"), (tmp_path / "nope.json", "cannot read")]:
        out = _cli("--from-report", str(given), "-q", cwd=tmp_path)
        assert out.returncode == 2, out.stderr
        assert words in out.stderr and "Traceback" not in out.stderr
