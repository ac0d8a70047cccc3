"""Inline and process isolation agree; a fresh process's hand count agrees with the tool."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

from recompile_probe import scenario as scenario_mod
from recompile_probe.session import run_scenario

pytestmark = pytest.mark.slow


def _counts(report):
    return [(r.sequence_name, r.strategy, r.status, r.graphs, r.compiles, r.recompiles,
             r.cache_entries, r.guard_count, r.shape_env_guard_count, r.leaf_guard_count,
             r.outputs_match, [c.event for c in r.calls]) for r in report.runs]


def test_inline_and_process_produce_identical_counts(write_scenario):
    path = write_scenario("""
        target: user_targets.py:with_graph_break
        inputs: [{shape: [B, 8]}]
        sequences: {rl: [1, 2, 8], chat: [4, 1, 16]}
        strategies: [default, mark_unbacked, as_is]
    """)
    scenario = scenario_mod.load(path)
    inline = run_scenario(scenario)
    process = run_scenario(scenario, isolate="process", timeout=120)
    assert _counts(inline) == _counts(process)
    assert {r.isolation for r in process.runs} == {"process"}


def test_timeout_becomes_status_error(write_scenario):
    path = write_scenario("""
        target: logprobs.count_greater_than
        sequences: {rl: [1, 2]}
        strategies: [default]
    """)
    report = run_scenario(scenario_mod.load(path), isolate="process", timeout=0.5)
    (run,) = report.runs
    assert run.status == "error" and run.error.type == "Timeout"


def test_fresh_process_hand_count_agrees(write_scenario, tmp_path):
    """What an outsider would do: count by hand in a fresh process, compare with our JSON."""
    path = write_scenario("""
        target: user_targets.py:project
        factory: user_targets.py:make_pair
        batch_dims: {0: [0]}
        sequences: {s: [1, 2, 8, 3]}
        strategies: [default, dynamic_true, mark_unbacked]
    """.replace("make_pair", "make_project_inputs"))
    (tmp_path / "user_targets.py").write_text((tmp_path / "user_targets.py").read_text() +
                                             "\n\ndef make_project_inputs(b):\n"
                                             "    return (torch.randn(b, 16),)\n")
    out = tmp_path / "r.json"
    done = subprocess.run([sys.executable, "-m", "recompile_probe", "run", str(path), "-q",
                           "-f", "json", "-o", str(out)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    tool = {r["strategy"]: (r["graphs"], r["status"], r["outputs_match"])
            for r in json.loads(out.read_text())["runs"]}
    script = textwrap.dedent(f"""
        import json, sys, torch
        sys.path.insert(0, {str(tmp_path)!r})
        import user_targets as u
        from torch._dynamo.testing import CompileCounterWithBackend
        result = {{}}
        for name, dynamic, mark in [("default", None, False), ("dynamic_true", True, False),
                                    ("mark_unbacked", None, True)]:
            torch._dynamo.reset()
            cnt = CompileCounterWithBackend("eager")
            f = torch.compile(u.project, backend=cnt, dynamic=dynamic)
            ok = True
            for b in [1, 2, 8, 3]:
                (x,) = u.make_project_inputs(b)
                if mark:
                    torch._dynamo.decorators.mark_unbacked(x, 0)
                ok &= torch.allclose(f(x), u.project(x))
            result[name] = [cnt.frame_count, "ok", bool(ok)]
        print(json.dumps(result))
    """)
    hand = json.loads(subprocess.run([sys.executable, "-c", script], capture_output=True,
                                     text=True, check=True).stdout.strip().splitlines()[-1])
    assert {k: tuple(v) for k, v in hand.items()} == tool


def test_worker_crash_becomes_status_error_and_others_survive(write_scenario):
    path = write_scenario("""
        target: user_targets.py:crashes_when_compiled
        inputs: [{shape: [B, 4]}]
        sequences: {s: [1, 2]}
        strategies: [default, static]
    """)
    report = run_scenario(scenario_mod.load(path), isolate="process", timeout=120)
    assert [r.status for r in report.runs] == ["error", "error"]
    assert all(r.error.type == "WorkerCrashed" and "7" in r.error.message for r in report.runs)
