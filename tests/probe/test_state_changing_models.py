"""A model that changes its own state on its first call (a BERT classifier with labels sets
``config.problem_type``, and Dynamo guards on it), under `run` and `suggest`, against the same
program run outside the tool: its CompileCounter, its compilation metrics and Dynamo's own
recompile log. The eager reference and each earlier strategy (or candidate) call the model
first; the program's count is the one reported. Needs transformers (a dev dependency: CI
installs it)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest

from helpers import PROGRAMS, ROOT

pytest.importorskip("transformers")

PROGRAM = PROGRAMS / "bert_classify"
STRATEGIES = ("default", "dynamic_true")


def _env(**extra):
    return {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT), **extra}


@pytest.fixture(scope="module")
def truth():
    """Per strategy: the plain program's compiles and the guard failures its log names."""
    out = {}
    for strategy in STRATEGIES:
        done = subprocess.run(
            [sys.executable, str(PROGRAM / "model.py"), strategy],
            capture_output=True, text=True, env=_env(TORCH_LOGS="recompiles"), timeout=600,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr[-3000:]
        figures = json.loads(done.stdout.strip().splitlines()[-1])
        # "[0/1] [__recompiles]     - 0/0: self.config.problem_type is None   # ..." per guard
        figures["failures"] = re.findall(
            r"\[(\d+/\d+)\] \[__recompiles\]\s+- (\d+/\d+: .*?)(?:\s+#.*)?$", done.stderr, re.M
        )
        out[strategy] = figures
    return out


#: the process twin runs the same Prepared run in a worker: the exhaustive tier's mode comparison
@pytest.fixture(
    scope="module", params=["inline", pytest.param("process", marks=pytest.mark.exhaustive)]
)
def report(request, tmp_path_factory):
    path = tmp_path_factory.mktemp("bert") / "report.json"
    done = subprocess.run(
        [sys.executable, "-m", "recompile_probe", "run", str(PROGRAM / "classify.yaml"), "-s",
         ",".join(STRATEGIES), "--isolate", request.param, "-f", "json", "-o", str(path), "-q"],
        capture_output=True, text=True, env=_env(), timeout=900,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    return {run["strategy"]: run for run in json.loads(path.read_text())["runs"]}


def test_each_strategy_compiles_as_often_as_the_program_does(report, truth):
    for strategy in STRATEGIES:
        run, plain = report[strategy], truth[strategy]
        assert plain["frames"] == plain["compiles"]  # one frame: the counter sees every compile
        assert run["compiles"] == plain["compiles"], strategy
        assert run["failed_compiles"] == plain["failed"] == 0


def test_the_recompile_on_the_models_own_state_is_the_one_dynamo_logs(report, truth):
    for strategy in STRATEGIES:
        logged: dict[str, list[str]] = {}
        for compile_id, failure in truth[strategy]["failures"]:
            logged.setdefault(compile_id, []).append(failure.strip())
        reported = {
            e["compile_id"]: [re.sub(r"\s+#.*", "", ln).strip() for ln in e["reason"].split("\n")]
            for e in report[strategy]["compile_events"]
            if e["recompile"]
        }
        assert reported == logged, strategy
        assert any("self.config.problem_type is None" in f for f in sum(logged.values(), []))


def test_the_run_says_what_the_model_changed_in_itself(report):
    for strategy in STRATEGIES:
        notes = [n for n in report[strategy]["notes"] if "changes its own state" in n]
        assert len(notes) == 1, report[strategy]["notes"]
        assert "model.config.problem_type (None → 'single_label_classification')" in notes[0]


def test_suggest_counts_each_candidate_as_the_program_compiles(truth, tmp_path):
    """Every candidate starts from the model as loaded, so its compiles are the plain
    program's under the same strategy."""
    out = tmp_path / "suggest.json"
    # the unmarked candidate and the first whole-function one (dynamic_true), measured first
    done = subprocess.run(
        [sys.executable, "-m", "recompile_probe", "suggest", str(PROGRAM / "classify.yaml"),
         "-f", "json", "-o", str(out), "-q", "--budget", "2"],
        capture_output=True, text=True, env=_env(), timeout=900,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    by_name = {c["name"]: c for c in json.loads(out.read_text())["candidates"]}
    assert by_name["no marks"]["compiles"] == truth["default"]["compiles"] == 3
    assert by_name["dynamic_true"]["compiles"] == truth["dynamic_true"]["compiles"] == 2
