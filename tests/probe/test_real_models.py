"""A real model's generate() loop under `run` (examples/hf_generate: a tiny random-weight Llama),
against the same program run outside the tool: its compilation metrics and Dynamo's own
recompile log. Needs transformers (a dev dependency: CI installs it)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from helpers import EXAMPLES, PROGRAMS, ROOT, import_file

pytest.importorskip("transformers")

SCENARIO = EXAMPLES / "hf_generate" / "generate.yaml"


def _env(**extra):
    return {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT), **extra}


@pytest.fixture(scope="module")
def probed(tmp_path_factory):
    """`run` of default and dynamic_true with Dynamo's recompile log on: (report, stderr)."""
    out = tmp_path_factory.mktemp("hf") / "report.json"
    done = subprocess.run(
        [sys.executable, "-m", "recompile_probe", "run", str(SCENARIO), "-s",
         "default,dynamic_true", "-f", "json", "-o", str(out), "-q"],
        capture_output=True, text=True, env=_env(TORCH_LOGS="recompiles"), timeout=900,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(out.read_text()), done.stderr


@pytest.fixture(scope="module")
def plain():
    """The program's own compiles, outside the tool (compilation metrics of a plain run)."""
    done = subprocess.run(
        [sys.executable, str(PROGRAMS / "hf_generate_truth.py"), "none", "plain"],
        capture_output=True, text=True, env=_env(), timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])["metrics"]


def test_model_outputs_holding_a_cache_are_compared_call_by_call(probed):
    report, _ = probed
    for run in report["runs"]:
        assert run["status"] == "ok", run["error"]
        # every call returns a CausalLMOutputWithPast holding a DynamicCache that grows after
        # the call: compared against eager as it was when each call returned
        assert [c["outputs_match"] for c in run["calls"]] == [True] * len(run["calls"])
        assert run["outputs_match"] is True and run["outputs_detail"] is None


def test_the_recompiles_dynamo_logs_are_the_ones_reported(probed):
    report, stderr = probed
    logged = stderr.count("Recompiling function")
    # timing re-runs the last point through generate() (its no_grad, fresh inputs): a steady
    # state, so no compile hides there
    assert [r["timing_compiles"] for r in report["runs"]] == [0, 0]
    assert all(r["steady_state_us"] is not None for r in report["runs"])
    assert logged == sum(r["recompiles"] for r in report["runs"]) > 0


def test_guard_counts_equal_the_same_compiles_made_outside_the_tool(probed, plain):
    report, _ = probed
    default = next(r for r in report["runs"] if r["strategy"] == "default")
    mine = [
        (e["compile_id"], e["guard_count"], e["shape_env_guard_count"])
        for e in default["compile_events"]
    ]
    assert mine == [(m["compile_id"], m["guard_count"], m["shape_env_guard_count"]) for m in plain]


def test_a_difference_inside_the_models_cache_is_caught_with_its_path():
    """The real output type (CausalLMOutputWithPast holding a DynamicCache), compared in this
    process: equal calls match, a changed cache tensor is named by its path."""

    import torch

    from recompile_probe.probe.compare import compare, snapshot

    hf = import_file(SCENARIO.parent / "model.py", "hf_model")
    ids = torch.randint(1, hf.config.vocab_size, (1, 4), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        eager, again = hf.forward(input_ids=ids), hf.forward(input_ids=ids)
    assert type(eager.cache).__name__ == "DynamicCache"  # transformers 5 names it cache
    kept = snapshot(eager)
    assert compare(again, kept, None, None).match is True
    again.cache.layers[0].keys.add_(1.0)  # the logits stay equal
    outcome = compare(again, kept, None, None)
    assert outcome.match is False
    assert outcome.detail.startswith("cache.layers[0].keys:"), outcome.detail
