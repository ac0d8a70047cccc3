"""`suggest` on a real model's generate() loop (examples/hf_generate), then `check` of what it
wrote: the budget it writes is one it verified, and the program passes it; and the whole search
on BERT over B x S (exhaustive tier). The candidates of a model that changes its own state are
held to its plain program in tests/probe/test_state_changing_models.py. Needs transformers."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
import yaml

from helpers import EXAMPLES, ROOT

pytest.importorskip("transformers")

SCENARIO = EXAMPLES / "hf_generate" / "generate.yaml"
ENV = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)}


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "recompile_probe", *args],
        capture_output=True, text=True, env=ENV, timeout=900,
    )  # fmt: skip


@pytest.mark.slow
def test_the_yaml_suggest_writes_for_a_real_model_passes_check(tmp_path):
    (tmp_path / "model.py").write_text((SCENARIO.parent / "model.py").read_text())
    text = SCENARIO.read_text()
    start = text.index("strategies: [")
    end = text.index("]", start) + 1
    scenario = tmp_path / "generate.yaml"
    scenario.write_text(text[:start] + "strategies: [default, dynamic_true]" + text[end:])
    out = tmp_path / "suggest.json"
    # A budget keeps this to the unmarked candidate and two whole-function ones
    # (the search itself is covered on synthetic targets and timed on real models in
    # benchmarks/suggest.py): what matters here is that what it writes, a stopped search's answer
    # included, is a budget the real program passes.
    done = _cli(
        "suggest", str(scenario), "--write", "-f", "json", "-o", str(out), "-q", "--budget", "3"
    )
    assert done.returncode == 0, done.stderr[-3000:]
    best = json.loads(out.read_text())["recommendation"]
    written = yaml.safe_load(scenario.read_text())["expect"]
    (name,) = written
    assert name == best["name"]
    # outputs_match is promised only because the search compared them (every call, eager)
    assert best["outputs_match"] is True and written[name]["outputs_match"] is True
    assert written[name]["max_compiles"] == best["compiles"]
    report = tmp_path / "check.json"
    # the written strategy alone: the others' budgets are not what suggest wrote
    checked = _cli("check", str(scenario), "-s", name, "--json", str(report), "-q")
    assert checked.returncode == 0, checked.stdout[-3000:] + checked.stderr[-3000:]
    doc = json.loads(report.read_text())
    found = doc["reports"][0] if "reports" in doc else doc  # one scenario: the report itself
    run = next(r for r in found["runs"] if r["strategy"] == name)
    assert run["violations"] == [] and run["outputs_match"] is True
    assert run["compiles"] <= best["compiles"]


BERT = ROOT / "tests" / "programs" / "bert_classify"


@pytest.mark.slow
@pytest.mark.exhaustive
def test_suggest_on_bert_over_b_and_s_writes_marks_the_plain_program_compiles_with(tmp_path):
    """The whole search on BERT over B x S (5 varying dims, its config changed on the first
    call), under the default time limit: it finishes, and its answer pasted into the plain
    program (model.py --bs: the marks on the inputs before each call) compiles as claimed."""
    out = tmp_path / "suggest.json"
    done = _cli("suggest", str(BERT / "classify_bs.yaml"), "-f", "json", "-o", str(out), "-q")
    assert done.returncode == 0, done.stderr[-3000:]
    doc = json.loads(out.read_text())
    assert doc["complete"] is True and doc["stopped_by"] is None
    best = doc["recommendation"]
    assert best["outputs_match"] is True
    change = best["whole_function"] or ",".join(
        f"{m['argument']}:{m['dim']}={m['kind']}" for m in best["marks"]
    )
    assert change in ("dynamic_true",) or best["marks"], best
    plain = subprocess.run(
        [sys.executable, str(BERT / "model.py"), "--bs", change],
        capture_output=True, text=True, env=ENV, timeout=600,
    )  # fmt: skip
    assert plain.returncode == 0, plain.stderr[-3000:]
    truth = json.loads(plain.stdout.strip().splitlines()[-1])
    assert truth["compiles"] == best["compiles"], (change, truth, best["compiles"])
    unmarked = subprocess.run(
        [sys.executable, str(BERT / "model.py"), "--bs", "none"],
        capture_output=True, text=True, env=ENV, timeout=600,
    )  # fmt: skip
    assert json.loads(unmarked.stdout.strip().splitlines()[-1])["compiles"] > truth["compiles"]
