"""`explain` on a real model's generate() loop (examples/hf_generate: a tiny random-weight
Llama): the answers, checked against the same program run outside the tool (Dynamo's metrics,
compiles per call). Needs transformers (a dev dependency: CI installs it)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from helpers import EXAMPLES, PROGRAMS, ROOT

pytest.importorskip("transformers")

SCENARIO = EXAMPLES / "hf_generate" / "generate.yaml"
ENV = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)}


@pytest.fixture(scope="module")
def explained(tmp_path_factory):
    """explain of default, with dynamic_true and the static cache as the candidates."""
    folder = tmp_path_factory.mktemp("hf")
    (folder / "model.py").write_text((SCENARIO.parent / "model.py").read_text())
    text = SCENARIO.read_text()
    start = text.index("strategies: [")
    end = text.index("]", start) + 1
    scenario = folder / "generate.yaml"
    scenario.write_text(
        text[:start] + "strategies: [default, dynamic_true, static_cache]" + text[end:]
    )
    out = folder / "explain.json"
    done = subprocess.run(
        [sys.executable, "-m", "recompile_probe", "explain", str(scenario), "--strategy",
         "default", "-f", "json", "-o", str(out), "-q"],
        capture_output=True, text=True, env=ENV, timeout=900,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    (x,) = json.loads(out.read_text())["explanations"]
    return x


def _plain(cache: str | None) -> list[int]:
    """Compiles per call of the forward in the plain program, outside the tool."""
    done = subprocess.run(
        [sys.executable, str(PROGRAMS / "hf_generate_truth.py"), *([cache] if cache else [])],
        capture_output=True, text=True, env=ENV, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])["compiles_per_call"]


@pytest.fixture(scope="module")
def static_per_call():
    return _plain("static")


def _reason(x, **want):
    return next(
        r
        for r in x["recompile_reasons"]
        if all((r.get("reason_detail") or {}).get(k) == v for k, v in want.items())
    )


def test_the_cache_length_recompile_gets_the_strategies_that_measurably_removed_it(
    explained, static_per_call
):
    grow = _reason(explained, source="L['kwargs']['cache'].layers[0].keys", dim=2)
    fixes = {f["strategy"]: f for f in grow["fixes"]}
    # the plain program with a static cache does not compile at that call
    assert static_per_call[grow["call_index"]] == 0
    assert set(fixes) == {"dynamic_true", "static_cache"}
    assert all(f["outputs_compared"] for f in fixes.values())  # outputs compared: a real fix
    # the static cache's change is the program's, not a torch.compile line
    assert fixes["static_cache"]["change"] == [
        "# in the program (what the driver did with its options): cache_implementation='static'"
    ]


def test_the_cache_state_recompile_names_the_static_cache_and_what_it_measured(
    explained, static_per_call
):
    state = next(r for r in explained["recompile_reasons"] if r["reason_kind"] == "object_state")
    assert state["reason_detail"]["source"].endswith("layers[0].is_initialized")
    assert state["fixes"] == []
    why = state["no_fix_why"]
    assert 'cache_implementation="static"' in why and "advice, not measured" in why
    # and what the report's own static-cache run did there, as the plain program does
    assert static_per_call[state["call_index"]] > 0
    assert "Measured in this report: static_cache recompiled at this call too." in why


def test_a_remedy_for_another_framework_is_not_given():
    from recompile_probe.reasons.frameworks import hints
    from recompile_probe.records.reason_detail import ReasonDetail

    detail = ReasonDetail("object_state", "value", "L['cache'].layers[0].is_initialized")
    assert hints("object_state", detail, ["/src/mymodel/cache.py"]) == ""
    found = hints("object_state", detail, ["/x/site-packages/transformers/cache_utils.py"])
    assert "static cache" in found


VIT = PROGRAMS / "vit_resize" / "resize.yaml"


@pytest.fixture(scope="module")
def vit_explained(tmp_path_factory):
    """explain of every run of a ViT over growing resolutions (tests/programs/vit_resize), with
    the report it explained (`explain --from-report`): the same runs' measured figures."""
    folder = tmp_path_factory.mktemp("vit")
    out, report = folder / "explain.json", folder / "report.json"
    strategies = "default,unbacked_sources,mark_unbacked"
    for command, path in (
        (["run", str(VIT), "-s", strategies], report),
        (["explain", "--from-report", str(report), str(VIT)], out),
    ):
        done = subprocess.run(
            [sys.executable, "-m", "recompile_probe", *command, "-f", "json", "-o", str(path),
             "-q"],
            capture_output=True, text=True, env=ENV, timeout=900,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr[-3000:]
    runs = {r["strategy"]: r for r in json.loads(report.read_text())["runs"]}
    return json.loads(out.read_text())["explanations"], runs


def test_a_measured_fix_never_compiles_more_than_the_run_it_fixes(vit_explained):
    explanations, runs = vit_explained
    listed = 0
    for x in explanations:
        for r in x["recompile_reasons"]:
            for fix in r["fixes"]:
                listed += 1
                # the fix's own run, as `run` measured it in the same scenario
                assert runs[fix["strategy"]]["compiles"] <= runs[x["strategy"]]["compiles"]
    assert listed  # mark_unbacked's recompiles have fixes: default and unbacked_sources


def test_advice_names_a_strategy_the_report_ran_by_what_it_measured(vit_explained):
    explanations, runs = vit_explained
    for x in explanations:
        for r in x["recompile_reasons"]:
            if r["reason_kind"] != "zero_one_specialization" or r["fixes"]:
                continue
            why = r["no_fix_why"]
            # both strategies the kind suggests ran: neither is advised as untried
            assert "try mark_unbacked" not in why and "try unbacked_sources" not in why
            assert "Measured in this report:" in why
            for other in ("mark_unbacked", "unbacked_sources"):
                if other == x["strategy"]:
                    continue
                call = runs[other]["calls"][r["call_index"]]
                if call["event"] == "recompile":
                    assert f"{other} recompiled at this call too" in why
