"""The knob strategies (static_sources, shapes_spec, isolate_recompiles, recompile_limit,
mark_unbacked_ranges) on the seed op, against a CompileCounter run of the same calls written
here; each feature-detected: `unsupported`, naming the release that has it, where it is missing.

Behaviour only newer releases have (static_sources in 2.15, dynamic_shapes= from 2.14) runs where
the feature exists.
"""

from __future__ import annotations

import contextlib
import dataclasses
import inspect

import pytest
import torch
from torch._dynamo.decorators import mark_unbacked
from torch._dynamo.testing import CompileCounter

from recompile_probe.execution.session import run_scenario
from recompile_probe.scenario.load import load
from recompile_probe.scenario.overrides import with_overrides
from recompile_probe.strategies.apply import missing_features
from recompile_probe.strategies.builtins import BUILTINS, DEFAULT_STRATEGIES, OPT_IN
from recompile_probe.strategies.model import (
    SYMBOL,
    SYMBOL_MAX,
    SYMBOL_MIN,
    filled,
    symbol_ranges,
)
from recompile_probe.torch_compat.settings import static_matches

KNOBS = list(OPT_IN)
HAS_STATIC_SOURCES = hasattr(torch.compiler.config, "static_sources")
COMPILE_PARAMS = inspect.signature(torch.compile).parameters
MAYBE_RANGES = "min" in inspect.signature(torch._dynamo.maybe_mark_dynamic).parameters
#: 2.13 on (2.11 has shape_id but neither min nor max: the strategy is unsupported there)
UNBACKED_RANGES = {"shape_id", "min", "max"} <= set(inspect.signature(mark_unbacked).parameters)
SPEC_KW = next((k for k in ("dynamic_shapes", "shapes_spec") if k in COMPILE_PARAMS), None)


def _op(x, values):  # the seed op, as targets/logprobs.py has it
    return (x >= values).sum(-1)


def _by_hand(sequence, compile_kwargs=None, mark=None, config=None, records=None):
    """The calls the probe makes, by hand: frames compiled by a CompileCounter (and, into
    ``records`` where given, Dynamo's compilation-metrics records: failed compiles included)."""
    torch._dynamo.reset()
    torch._dynamo.utils.clear_compilation_metrics()
    counter = CompileCounter()
    with contextlib.ExitStack() as stack:
        for attr, value in (config or {}).items():
            stack.enter_context(torch.compiler.config.patch(attr, value))
        compiled = torch.compile(_op, backend=counter, **(compile_kwargs or {}))
        for b in sequence:
            x, values = torch.randn(b, 4096), torch.randn(b, 1)
            if mark is not None:
                mark(x, values)
            assert torch.equal(compiled(x, values), _op(x, values))
    if records is not None:
        records.extend(torch._dynamo.utils.get_compilation_metrics())
    torch._dynamo.reset()
    return counter.frame_count


def _spec(lo, hi):
    from torch.fx.experimental.dynamic_spec import ShapesSpec, ShapeVar, TensorSpec

    b = ShapeVar("B", min=lo, max=hi)
    return ShapesSpec({"x": TensorSpec([b, None]), "values": TensorSpec([b, None])})


def _ranged_unbacked(x, values):
    for t in (x, values):
        mark_unbacked(t, 0, shape_id="B", min=1, max=16)


def _ranged_maybe_dynamic(x, values):
    for t in (x, values):
        torch._dynamo.maybe_mark_dynamic(t, 0, min=1, max=16)


@pytest.fixture(scope="module")
def seed_report():
    """One inline run of every knob strategy over the default scenario's sequences plus [2, 1, 8]
    (the scenario's B range stays 1..16)."""
    scenario = with_overrides(load(None), strategies=KNOBS)
    points = dict(scenario.points)
    extra = with_overrides(scenario, sequence=[2, 1, 8]).points
    scenario = dataclasses.replace(scenario, points={**points, **extra}, repeats=0)
    return run_scenario(scenario)


def _runs(report, strategy):
    return {r.sequence: r for r in report.runs if r.strategy == strategy}


def test_knob_strategies_are_opt_in():
    """The default table is untouched: a scenario without `strategies:` runs none of them."""
    assert set(OPT_IN) <= set(BUILTINS)
    assert not set(OPT_IN) & set(DEFAULT_STRATEGIES)
    assert not set(OPT_IN) & set(load(None).strategies)


@pytest.mark.parametrize(
    "strategy, by_hand",
    [
        ("isolate_recompiles", lambda seq: _by_hand(seq, {"isolate_recompiles": True})),
        ("recompile_limit", lambda seq: _by_hand(seq, {"recompile_limit": 1})),
        ("mark_unbacked_ranges", lambda seq: _by_hand(seq, mark=_ranged_unbacked)),
        ("shapes_spec", lambda seq: _by_hand(seq, {SPEC_KW: _spec(1, 16)})),
        ("maybe_mark_dynamic_ranges", lambda seq: _by_hand(seq, mark=_ranged_maybe_dynamic)),
    ],
)
def test_knob_counts_match_a_compile_counter(seed_report, strategy, by_hand):
    if strategy == "maybe_mark_dynamic_ranges" and not MAYBE_RANGES:
        pytest.skip("maybe_mark_dynamic takes no min/max here (torch 2.15 has them)")
    if strategy in ("isolate_recompiles", "recompile_limit") and strategy not in COMPILE_PARAMS:
        pytest.skip(f"torch.compile has no {strategy}= here")
    if strategy == "shapes_spec" and SPEC_KW is None:
        pytest.skip("torch.compile takes no ShapesSpec here")
    if strategy == "mark_unbacked_ranges" and not UNBACKED_RANGES:
        pytest.skip("mark_unbacked takes no shape_id/min/max here (torch 2.13 has them)")
    runs = _runs(seed_report, strategy)
    assert set(runs) == {(1, 2, 8), (4, 4, 1, 1, 16), (2, 1, 8)}
    for sequence, run in runs.items():
        assert run.status == "ok", run.error
        assert run.graphs == by_hand(sequence), (strategy, sequence)
        assert run.outputs_match is True


@pytest.mark.skipif(not UNBACKED_RANGES, reason="mark_unbacked takes no shape_id/min/max here")
def test_range_and_shape_id_reach_the_marks(seed_report):
    """mark_unbacked_ranges marks with shape_id B and the scenario's range 1..16: one compile
    whose shape guards hold that range (measured 2026-12-02: a min of 2 makes B=1 fail)."""
    for run in _runs(seed_report, "mark_unbacked_ranges").values():
        assert run.compiles == 1
        texts = [g.text for e in run.entries for g in e.guards]
        assert any("16" in t and "size()[0]" in t for t in texts), texts


@pytest.mark.skipif(
    "recompile_limit" not in COMPILE_PARAMS, reason="torch.compile has no recompile_limit= here"
)
def test_recompile_limit_caps_the_compiles(seed_report):
    """One graph; the compile past the limit is a metrics record of its own, failed (so the
    seed op's B = 1, 2, 8 reads 2 compiles, as docs/strategies.md says)."""
    for sequence, run in _runs(seed_report, "recompile_limit").items():
        records: list = []
        assert run.graphs == _by_hand(sequence, {"recompile_limit": 1}, records=records) == 1
        assert run.compiles == len(records), (sequence, records)
        failed = [m for m in records if getattr(m, "fail_reason", None)]
        assert run.failed_compiles == len(failed) >= 1  # the calls past the limit
    assert _runs(seed_report, "recompile_limit")[(1, 2, 8)].compiles == 2


@pytest.mark.skipif(HAS_STATIC_SOURCES, reason="this torch has static_sources")
def test_static_sources_is_unsupported_naming_the_release(seed_report):
    for run in _runs(seed_report, "static_sources").values():
        assert run.status == "unsupported"
        assert "static_sources" in run.error.message and "torch 2.15" in run.error.message


@pytest.mark.skipif(not HAS_STATIC_SOURCES, reason="static_sources is new in torch 2.15")
def test_static_sources_holds_the_batch_dims_static(seed_report):
    batch = "L['x']:0,L['values']:0"
    for sequence, run in _runs(seed_report, "static_sources").items():
        assert run.status == "ok", run.error
        assert run.graphs == _by_hand(sequence, config={"static_sources": batch})
        assert run.graphs == len(set(sequence))  # every new size compiles again


def test_a_missing_compile_keyword_is_unsupported_with_its_release(monkeypatch):
    import recompile_probe.torch_compat.compile_keywords as keywords
    import recompile_probe.torch_compat.knobs as knobs

    older = lambda: frozenset({"dynamic", "backend"})  # noqa: E731 - a torch before 2.13
    monkeypatch.setattr(knobs, "compile_keywords", older)
    monkeypatch.setattr(keywords, "compile_keywords", older)
    why = missing_features(BUILTINS["isolate_recompiles"])
    assert why is not None and "isolate_recompiles=" in why and "torch 2.13" in why
    why = missing_features(BUILTINS["shapes_spec"])
    assert why is not None and "dynamic_shapes=" in why and "shapes_spec=" in why


@pytest.mark.skipif(MAYBE_RANGES, reason="this torch's maybe_mark_dynamic takes min/max")
def test_maybe_mark_dynamic_range_is_unsupported_before_2_15(seed_report):
    for run in _runs(seed_report, "maybe_mark_dynamic_ranges").values():
        assert run.status == "unsupported"
        assert "min" in run.error.message and "torch 2.15" in run.error.message


@pytest.mark.skipif(UNBACKED_RANGES, reason="this torch's mark_unbacked takes shape_id/min/max")
def test_mark_unbacked_ranges_is_unsupported_before_2_13(seed_report):
    for run in _runs(seed_report, "mark_unbacked_ranges").values():
        assert run.status == "unsupported"
        missing = {"shape_id", "min", "max"} - set(inspect.signature(mark_unbacked).parameters)
        assert all(option in run.error.message for option in missing), run.error.message
        assert "torch 2.13" in run.error.message


@pytest.mark.skipif(
    "recompile_limit" in COMPILE_PARAMS, reason="torch.compile has recompile_limit="
)
def test_recompile_limit_is_unsupported_before_2_13(seed_report):
    for run in _runs(seed_report, "recompile_limit").values():
        assert run.status == "unsupported"
        assert "recompile_limit=" in run.error.message and "torch 2.13" in run.error.message


def test_placeholders_and_ranges():
    ranges = symbol_ranges(load(None).points)
    assert ranges == {"B": (1, 16)}
    options = {"shape_id": SYMBOL, "min": SYMBOL_MIN, "max": SYMBOL_MAX, "strict": False}
    assert filled(options, "B", ranges) == {"shape_id": "B", "min": 1, "max": 16, "strict": False}
    assert filled(options, "S", ranges) == {"shape_id": "S", "strict": False}


def test_static_matches_follows_torchs_rule():
    sources = [("L['x']", 0), ("L['values']", 0), ("L['x']", 1)]
    assert static_matches(".*:0", sources) == [("L['x']", 0), ("L['values']", 0)]
    assert static_matches("L['x']", sources) == [("L['x']", 0), ("L['x']", 1)]
    assert static_matches("L['y']:0, [", sources) == []  # no match, a bad regex ignored
