"""The steady state: compiles while the last point is re-run for timing are counted, against
Dynamo's own compilation metrics of the same run, and void the figure."""

from __future__ import annotations

from torch._dynamo.utils import clear_compilation_metrics, get_compilation_metrics

from recompile_probe.execution.session import run_scenario
from recompile_probe.scenario.load import load


def test_compiles_while_timing_are_counted_and_void_the_figure(write_scenario):
    path = write_scenario("""
        target: user_targets.py:scale_by_call
        driver: user_targets.py:counting_driver
        dims: {B: {x: [0]}}
        sequences: {s: [2, 2]}
        strategies: [default]
        repeats: 3
        compile: {recompile_limit: 64}
        """)
    clear_compilation_metrics()
    (run,) = run_scenario(load(path)).runs
    dynamo = [m for m in get_compilation_metrics() if m.co_name == "scale_by_call"]
    assert run.status == "ok" and run.compiles == len(run.compile_events)
    assert run.timing_compiles == len(dynamo) - run.compiles > 0
    assert run.steady_state_us is None
    assert any(n.startswith(f"timing: {run.timing_compiles} compile(s)") for n in run.notes)
