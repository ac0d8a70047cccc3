"""check --reuse-reports: a saved report stands in for a run only while nothing it measured
could have changed."""

from __future__ import annotations

import json
import os
import shutil

from typer.testing import CliRunner

from helpers import PROGRAMS
from recompile_probe.cli import app


def _check(scenario, folder, *more):
    result = CliRunner().invoke(
        app, ["check", str(scenario), "-q", "--reuse-reports", str(folder), *more]
    )
    return result.exit_code, result.output


def test_a_report_is_reused_until_the_code_it_compiled_or_the_run_asked_for_changes(tmp_path):
    for name in ("serving.py", "serving.yaml"):
        shutil.copy(PROGRAMS / "annotations" / name, tmp_path / name)
    scenario, folder = tmp_path / "serving.yaml", tmp_path / "reports"
    code, out = _check(scenario, folder)
    assert code == 1 and "reused" not in out
    code, out = _check(scenario, folder)
    assert code == 1 and "reused" in out and "1 violated" in out
    # the program the compiles came from is newer than the report: measured again
    saved = folder / "serving-annotations.json"
    edited = (tmp_path / "serving.py").stat().st_mtime
    os.utime(saved, (edited - 1, edited - 1))
    code, out = _check(scenario, folder)
    assert code == 1 and "reused" not in out
    # other strategies or another coverage range are another run
    code, out = _check(scenario, folder, "-s", "default")
    assert "reused" not in out
    code, out = _check(scenario, folder, "-s", "default")
    assert "reused" in out
    code, out = _check(scenario, folder, "-s", "default", "--cover", "B=1..64")
    assert "reused" not in out


def test_reuse_excludes_shards_and_saved_reports(tmp_path):
    scenario = PROGRAMS / "annotations" / "serving.yaml"
    code, out = _check(scenario, tmp_path, "--shard", "1/2")
    assert code == 2 and "--reuse-reports" in out


def test_a_report_another_tool_or_torch_made_is_measured_again(tmp_path):
    for name in ("serving.py", "serving.yaml"):
        shutil.copy(PROGRAMS / "annotations" / name, tmp_path / name)
    scenario, folder = tmp_path / "serving.yaml", tmp_path / "reports"
    _check(scenario, folder, "-s", "default")
    saved = folder / "serving-annotations.json"
    for key, value in (("tool", "version"), ("environment", "torch")):
        data = json.loads(saved.read_text())
        kept = data[key][value]
        data[key][value] = "0.0.0-other"
        written = saved.stat().st_mtime
        saved.write_text(json.dumps(data))
        os.utime(saved, (written, written))
        code, out = _check(scenario, folder, "-s", "default")
        assert "reused" not in out, key
        data = json.loads(saved.read_text())
        assert data[key][value] == kept  # measured again, and saved
