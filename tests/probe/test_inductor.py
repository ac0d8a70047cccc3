"""The inductor backend, kept to one scenario: seconds per compile on CPU.

Counts are cross-checked against CompileCounterWithBackend("inductor") and Dynamo's own metrics.
"""

from __future__ import annotations

import functools

import pytest
import torch
from torch._dynamo.utils import get_compilation_metrics

from helpers import hand_count
from recompile_probe.execution.session import run_scenario
from recompile_probe.scenario.load import load
from recompile_probe.scenario.model import default_path
from recompile_probe.scenario.overrides import with_overrides
from recompile_probe.targets import loader

pytestmark = pytest.mark.inductor


def test_inductor_scenario_counts_and_hint_override():
    scenario = with_overrides(
        load(default_path().parent / "inductor.yaml"), strategies=["default", "mark_unbacked_hint8"]
    )
    report = run_scenario(scenario)
    by = {r.strategy: r for r in report.runs}
    # the last run's records are still in Dynamo's deque: its compiles and compile time
    metrics = get_compilation_metrics()
    hint8 = by["mark_unbacked_hint8"]
    assert hint8.compiles == len(metrics)
    assert (
        hint8.compile_time_ms
        == round(sum(m.dynamo_cumulative_compile_time_us for m in metrics) / 1000, 3)
        > 0
    )
    target = loader.load(scenario)
    mark = functools.partial(torch._dynamo.decorators.mark_unbacked, hint_override=8)
    assert (hint8.graphs, None) == hand_count(
        target.fn,
        target.make_args,
        hint8.sequence,
        mark=mark,
        batch_dims=target.batch_dims,
        backend="inductor",
    )
    default = by["default"]
    assert (default.graphs, None) == hand_count(
        target.fn, target.make_args, default.sequence, backend="inductor"
    )
    assert default.compiles == default.graphs and default.recompiles == default.compiles - 1
    assert all(
        r.outputs_match is True and r.backend == "inductor" and r.failed_compiles == 0
        for r in report.runs
    )
