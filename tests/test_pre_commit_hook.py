"""The pre-commit hook (.pre-commit-hooks.yaml) run by pre-commit itself, `pre-commit try-repo`
on this working tree, in a temp git repository holding a scenario: it fails the commit on a
broken budget, passes a kept one, and reuses the saved report until the scenario changes."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import PROGRAMS, ROOT

BIN = Path(sys.executable).parent
pytestmark = pytest.mark.skipif(
    not (BIN / "pre-commit").exists() and not os.environ.get("CI"), reason="no pre-commit"
)


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True)


@pytest.fixture
def repo(tmp_path):
    repo = tmp_path / "repo"
    (repo / "scenarios").mkdir(parents=True)
    shutil.copy(PROGRAMS / "annotations" / "serving.py", repo / "scenarios" / "serving.py")
    shutil.copy(PROGRAMS / "annotations" / "serving.yaml", repo / "scenarios" / "serving.yaml")
    # as the hook's comment asks: the saved reports are not committed
    (repo / ".gitignore").write_text(".recompile-probe/\n")
    _git(repo, "init", "-q")
    _git(repo, "add", ".")
    return repo


def _hook(repo: Path, tmp_path: Path) -> subprocess.CompletedProcess:
    env = {
        **os.environ,
        "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
        "PRE_COMMIT_HOME": str(tmp_path / "pre-commit-home"),
        "OMP_NUM_THREADS": "1",
    }
    return subprocess.run(
        [
            str(BIN / "pre-commit"),
            "try-repo",
            str(ROOT),
            "recompile-probe-check",
            "--files",
            "scenarios/serving.yaml",
            "--color",
            "never",
        ],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )


def test_the_hook_fails_a_broken_budget_then_reuses_the_report_until_the_scenario_changes(
    repo, tmp_path
):
    first = _hook(repo, tmp_path)
    assert first.returncode == 1, first.stdout + first.stderr
    assert "recompile-probe check" in first.stdout and "Failed" in first.stdout
    assert "max_recompiles" in first.stdout and "1 violated" in first.stdout
    saved = repo / ".recompile-probe" / "reports" / "serving-annotations.json"
    assert saved.is_file()
    again = _hook(repo, tmp_path)
    assert again.returncode == 1
    assert f"reused .recompile-probe/reports/{saved.name}" in again.stdout.replace("\n", " ")
    # the budget loosened: the scenario changed, so it runs again, and passes
    scenario = repo / "scenarios" / "serving.yaml"
    scenario.write_text(scenario.read_text().replace("max_recompiles: 0", "max_recompiles: 2"))
    _git(repo, "add", ".")
    fixed = _hook(repo, tmp_path)
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
    assert "Passed" in fixed.stdout and "reused" not in fixed.stdout
