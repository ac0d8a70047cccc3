"""Every shipped scenario in configs/ runs, and each run's graphs equal a CompileCounter count.

The hand count applies the strategy's knobs with torch's own functions and config patches and
counts with torch._dynamo.testing.CompileCounterWithBackend; inductor.yaml is in test_inductor.py.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib

import pytest
import torch

from helpers import hand_count
from recompile_probe.analysis.check import judge
from recompile_probe.execution.session import run_scenario
from recompile_probe.scenario.load import load
from recompile_probe.scenario.model import default_path
from recompile_probe.strategies.model import BATCH_SOURCES
from recompile_probe.targets import loader

CONFIGS = default_path().parent
MARK_FUNCTIONS = {
    "dynamic": torch._dynamo.mark_dynamic,
    "maybe_dynamic": torch._dynamo.maybe_mark_dynamic,
    "unbacked": torch._dynamo.decorators.mark_unbacked,
    "static": torch._dynamo.mark_static,
}
#: the batch dims of each shipped scenario as Dynamo names them, written out by hand
SOURCES = {
    "logprobs.yaml": "L['x']:0,L['values']:0",
    "ci_budgets.yaml": "L['x']:0,L['values']:0",
    "coverage.yaml": "L['x']:0,L['values']:0",
    "non_batch_dim.yaml": "L['q']:1,L['k']:1",
    "user_callable.yaml": "L['hidden']:0,L['temperature']:0",
}


def test_every_shipped_config_is_tested():
    shipped = {p.name for p in CONFIGS.glob("*.yaml")}
    # several size symbols: counted by hand and against `watch` in test_symbols.py
    assert shipped == set(SOURCES) | {
        "inductor.yaml",
        "prefill_decode.yaml",
        "prefill_decode_generate.yaml",
    }


def _by_hand(scenario, target, strategy_name, sequence, sources):
    strategy = scenario.strategy(strategy_name)
    assert strategy.stance is None and not strategy.as_is  # none in the shipped configs
    mark = None
    if strategy.mark:
        mark = functools.partial(MARK_FUNCTIONS[strategy.mark], **strategy.mark_options)
    config = []
    for dotted, value in strategy.config.items():
        module_name, _, attr = dotted.rpartition(".")
        config.append(
            (
                importlib.import_module(module_name),
                attr,
                sources if value == BATCH_SOURCES else value,
            )
        )
    return hand_count(
        target.fn,
        target.make_args,
        sequence,
        dynamic=strategy.dynamic,
        mark=mark,
        batch_dims=target.batch_dims,
        config=config,
        backend=scenario.backend,
        fullgraph=bool({**scenario.compile, **strategy.compile}.get("fullgraph")),
    )


@pytest.mark.parametrize("name", sorted(SOURCES))
def test_shipped_config_runs_and_matches_compile_counter(name):
    scenario = dataclasses.replace(load(CONFIGS / name), repeats=2)
    report = run_scenario(scenario)
    assert report.complete
    assert len(report.runs) == len(scenario.strategies) * len(scenario.sequences)
    target = loader.load(scenario)
    unsupported = {r.strategy for r in report.runs if r.status == "unsupported"}
    for run in report.runs:
        where = f"{name} {run.sequence_name} {run.strategy}"
        if run.strategy in unsupported:  # a knob this torch lacks or ignores (measured): no figures
            assert run.compiles is None and run.error.type == "Unsupported", where
            continue
        graphs, error = _by_hand(scenario, target, run.strategy, run.sequence, SOURCES[name])
        assert error is None and run.status == "ok", where
        assert run.graphs == graphs, where
        assert run.outputs_match is True, where
        assert run.failed_compiles == 0, where
    if name == "ci_budgets.yaml":  # the gate it ships passes on the op it gates
        judged, checked = judge(report, scenario)
        # On a torch that lacks a strategy's knob its budgets cannot be verified, and fail.
        assert (
            checked > 0
            and [
                r.violations for r in judged.runs if r.violations and r.strategy not in unsupported
            ]
            == []
        )


def test_user_callable_is_an_nn_module():
    scenario = load(CONFIGS / "user_callable.yaml")
    assert isinstance(loader.load(scenario).fn, torch.nn.Module)
