"""`explain --from-report`: a saved `run` report explained as `explain` explains a fresh run,
without torch when the report holds every run; `explain --strategies`: only these run."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from recompile_probe.cli import app

OPS = """
import torch


def scale_rows(x, w):
    return (x * w.unsqueeze(-1)).sum(-1)


def make_inputs(batch_size):
    g = torch.Generator().manual_seed(batch_size)
    return torch.randn(batch_size, 16, generator=g), torch.rand(batch_size, generator=g) + 0.5
"""

USER = """
name: user-rows
target: ops.py:scale_rows
factory: ops.py:make_inputs
batch_dims: {0: [0], 1: [0]}
sequences: {rl: [1, 2, 8]}
strategies: [default, mark_unbacked, rows_unbacked]
custom_strategies:
  rows_unbacked:
    marks:
      - {argument: 0, dim: 0, kind: unbacked}
      - {argument: 1, dim: 0, kind: unbacked}
repeats: 3
"""

TIMING = re.compile(r"(_us|_ms|_us_cold|_noisy)$")


def _cli(*args: str):
    result = CliRunner().invoke(app, [*args, "-q"])
    return result


def _json(*args: str) -> dict:
    result = _cli(*args, "-f", "json")
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def _masked(value):
    """Timing fields out (µs, ms, guard check costs, noise flags), and measured fixes by name:
    two runs order fixes of equal compiles by their µs."""
    if isinstance(value, dict):
        out = {k: "<t>" if TIMING.search(k) else _masked(v) for k, v in value.items()}
        if "fixes" in out:
            out["fixes"] = sorted(out["fixes"], key=lambda f: f["strategy"])
        return out
    if isinstance(value, list):
        return [_masked(v) for v in value]
    return value


def _same_explanation(a: dict, b: dict, runs: bool = True) -> None:
    assert _masked(a["explanations"]) == _masked(b["explanations"])
    assert _masked(a["costs"]) == _masked(b["costs"])
    if not runs:
        return
    runs_a = [_masked({**r, "notes": None}) for r in a["report"]["runs"]]
    assert runs_a == [_masked({**r, "notes": None}) for r in b["report"]["runs"]]


@pytest.fixture(scope="module")
def user(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("user")
    (root / "ops.py").write_text(OPS)
    (root / "user.yaml").write_text(USER)
    return root / "user.yaml"


@pytest.fixture(scope="module")
def saved(tmp_path_factory, user) -> dict[str, Path]:
    """`run -f json -o` of the built-in and of the user scenario."""
    root = tmp_path_factory.mktemp("reports")
    out = {}
    for name, scenario in (("builtin", []), ("user", [str(user)])):
        out[name] = root / f"{name}.json"
        result = _cli("run", *scenario, "-f", "json", "-o", str(out[name]))
        assert result.exit_code == 0, result.output
    return out


@pytest.mark.parametrize(
    "which", ["builtin", pytest.param("user", marks=pytest.mark.exhaustive)]
)  # a user target's report read back is also explained in the tests below
def test_from_report_explains_as_a_fresh_run_does(saved, user, which):
    scenario = [] if which == "builtin" else [str(user)]
    fresh = _json("explain", *scenario)
    reused = _json("explain", "--from-report", str(saved[which]))
    assert reused["explanations"], "the scenario recompiles: something to explain"
    _same_explanation(fresh, reused)
    if which == "user":
        fixes = [
            f for x in reused["explanations"] for r in x["recompile_reasons"] for f in r["fixes"]
        ]
        custom = [f for f in fixes if f["strategy"] == "rows_unbacked"]
        assert custom, "the custom strategy, defined only in the YAML, is a measured fix"
        assert "torch._dynamo.decorators.mark_unbacked(x, 0)" in custom[0]["change"]


def test_the_report_explain_writes_explains_back_to_the_same_json(tmp_path, user):
    """Same runs, same figures: not one field differs, timings included."""
    fresh = _json("explain", str(user))
    report = tmp_path / "report.json"
    report.write_text(json.dumps(fresh["report"]))
    assert _json("explain", "--from-report", str(report)) == fresh


def test_a_report_that_holds_every_run_is_explained_without_torch(saved, tmp_path):
    code = (
        "import atexit, sys\n"
        "atexit.register(lambda: print('torch imported:', 'torch' in sys.modules))\n"
        "from recompile_probe.cli import main\n"
        f"sys.argv = ['recompile-probe', 'explain', '--from-report', {str(saved['user'])!r}, "
        f"'-f', 'json', '-o', {str(tmp_path / 'x.json')!r}]\n"
        "main()\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env={**os.environ, "NO_COLOR": "1"},
    )
    assert out.returncode == 0, out.stderr
    assert "torch imported: False" in out.stdout
    assert json.loads((tmp_path / "x.json").read_text())["explanations"]


def test_an_older_report_falls_back_to_the_target_and_says_so(saved, tmp_path):
    data = json.loads(saved["user"].read_text())
    del data["scenario"]["sha256"]
    for run in data["runs"]:
        del run["argument_dims"], run["param_names"]
    old = tmp_path / "old.json"
    old.write_text(json.dumps(data))
    result = _cli("explain", "--from-report", str(old), "-f", "json")
    assert result.exit_code == 0, result.output
    assert "cannot tell whether" in result.stderr
    assert "the target was imported" in result.stderr
    now = _json("explain", "--from-report", str(saved["user"]))
    _same_explanation(json.loads(result.stdout), now, runs=False)


def test_a_missing_report_is_a_usage_error(tmp_path):
    result = _cli("explain", "--from-report", str(tmp_path / "nope.json"))
    assert result.exit_code == 2
    assert "nope.json: cannot read" in result.stderr
    assert "Traceback" not in result.output


def test_a_changed_or_gone_scenario_file_is_said_and_a_moved_one_can_be_passed(
    saved, user, tmp_path
):
    moved = tmp_path / "moved"
    shutil.copytree(user.parent, moved)
    data = json.loads(saved["user"].read_text())
    report = tmp_path / "r.json"

    data["scenario"]["path"] = str(tmp_path / "gone.yaml")
    report.write_text(json.dumps(data))
    gone = _cli("explain", "--from-report", str(report))
    assert gone.exit_code == 2
    assert "is gone" in gone.stderr and "gone.yaml" in gone.stderr
    assert _cli("explain", str(moved / "user.yaml"), "--from-report", str(report)).exit_code == 0

    (moved / "user.yaml").write_text(USER.replace("repeats: 3", "repeats: 4"))
    data["scenario"]["path"] = str(moved / "user.yaml")
    report.write_text(json.dumps(data))
    changed = _cli("explain", "--from-report", str(report))
    assert changed.exit_code == 2
    assert "changed since the report was written" in changed.stderr
    assert "Traceback" not in changed.output


def test_strategies_runs_only_these_and_says_fixes_are_among_them(user):
    out = _json("explain", str(user), "--strategies", "default,rows_unbacked")
    assert {r["strategy"] for r in out["report"]["runs"]} == {"default", "rows_unbacked"}
    assert any(
        "only among the strategies that ran (default, rows_unbacked)" in n
        and "mark_unbacked did not run" in n
        for n in out["notes"]
    )


def test_from_report_runs_only_the_strategies_it_lacks(user, tmp_path):
    partial = tmp_path / "partial.json"
    assert _cli("run", str(user), "-s", "default", "-f", "json", "-o", str(partial)).exit_code == 0
    saved = json.loads(partial.read_text())["runs"]
    out = _json("explain", "--from-report", str(partial), "--strategies", "default,rows_unbacked")
    runs = {r["strategy"]: r for r in out["report"]["runs"]}
    assert set(runs) == {"default", "rows_unbacked"}
    assert runs["default"] == saved[0], "the saved run is reused as it was, not run again"
    (x,) = out["explanations"]
    assert [f["strategy"] for r in x["recompile_reasons"] for f in r["fixes"]] == ["rows_unbacked"]
    assert any("mark_unbacked did not run" in n for n in out["notes"])


def test_from_report_refuses_backend_and_an_unknown_strategy(saved):
    backend = _cli("explain", "--from-report", str(saved["user"]), "--backend", "inductor")
    assert backend.exit_code == 2 and "exclude each other" in backend.stderr
    unknown = _cli("explain", "--from-report", str(saved["user"]), "--strategies", "nope")
    assert unknown.exit_code == 2 and "unknown strategy 'nope'" in unknown.stderr
