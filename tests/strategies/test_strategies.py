"""Strategies against real torch: marks undone after each run, stances, unsupported knobs.

Counts are checked against CompileCounter and get_compilation_metrics(), never a copy of the tool.
"""

from __future__ import annotations

import contextlib

import pytest
import torch
from torch._dynamo.testing import CompileCounter
from torch._dynamo.utils import clear_compilation_metrics, get_compilation_metrics

from helpers import hand_count
from recompile_probe.execution.session import run_scenario
from recompile_probe.scenario.load import load
from recompile_probe.scenario.overrides import with_overrides
from recompile_probe.strategies.apply import marker
from recompile_probe.strategies.builtins import BUILTINS
from recompile_probe.strategies.model import MARKS, LocationMark
from recompile_probe.targets import loader

MEMO = """
import functools

import torch


def count(x, values):
    return (x >= values).sum(-1)


@functools.cache
def make(batch_size):
    # the same tensor objects for every call with this batch size, in every strategy
    g = torch.Generator().manual_seed(batch_size)
    return torch.randn(batch_size, 64, generator=g), torch.randn(batch_size, 1, generator=g)
"""


def _by_strategy(path, **overrides):
    scenario = with_overrides(load(path), **overrides)
    return scenario, {r.strategy: r for r in run_scenario(scenario).runs}


def _marking(t):
    return {k: v for k, v in vars(t).items() if "dynamo" in k or k == "_specialize_on"}


def test_marks_do_not_leak_into_the_next_strategy(write_scenario):
    write_scenario(MEMO, name="memo.py")
    path = write_scenario("""
        target: memo.py:count
        factory: memo.py:make
        batch_dims: {0: [0], 1: [0]}
        sequences: {s: [1, 2, 8]}
        strategies: [mark_unbacked, default]
        repeats: 3
    """)
    scenario, after_unbacked = _by_strategy(path)
    _, alone = _by_strategy(path, strategies=["default"])
    target = loader.load(scenario)
    by_hand, error = hand_count(target.fn, target.make_args, [1, 2, 8])
    assert error is None
    default = after_unbacked["default"]
    assert default.graphs == alone["default"].graphs == by_hand == 2
    assert default.compiles == alone["default"].compiles
    assert after_unbacked["mark_unbacked"].graphs == 1
    assert after_unbacked["mark_unbacked"].marked_dims == 2 and default.marked_dims is None
    for b in (1, 2, 8):  # the memoized tensors are as the factory made them
        assert all(_marking(t) == {} for t in target.make_args(b))


def test_restore_keeps_the_users_own_marks():
    t = torch.randn(4, 8)
    torch._dynamo.maybe_mark_dynamic(t, 1)  # set by the user's factory, before the run
    before = _marking(t)
    strategy = BUILTINS["mark_unbacked"]
    mark = marker(strategy)
    mark((t,), {0: (0,)})
    mark((t,), {0: (0,)})  # re-marked before every call: the first snapshot stands
    assert 0 in t._dynamo_unbacked_indices
    mark.restore()
    assert _marking(t) == before and t._dynamo_weak_dynamic_indices == {1}
    assert not hasattr(t, "_dynamo_unbacked_indices")


STANCES = """
target: user_targets.py:double
inputs: [{shape: [B, 8]}]
sequences: {s: [1, 2, 8]}
strategies: [eager_on_recompile, fail_on_recompile]
repeats: 2
custom_strategies:
  eager_on_recompile: {stance: eager_on_recompile}
  fail_on_recompile: {stance: fail_on_recompile}
"""


def _by_hand_with_stance(fn, make_args, sequence, stance):
    """CompileCounter graphs, successful metrics records, and the call that raised (if any)."""
    torch._dynamo.reset()
    clear_compilation_metrics()
    counter = CompileCounter()
    compiled = torch.compile(fn, backend=counter)
    raised = None
    with torch.compiler.set_stance(stance):
        for i, b in enumerate(sequence):
            try:
                compiled(*make_args(b))
            except Exception:  # noqa: BLE001
                raised = i
                break
    ok = sum(m.fail_type is None for m in get_compilation_metrics())
    torch._dynamo.reset()
    return counter.frame_count, ok, raised


@pytest.mark.parametrize("stance", ["eager_on_recompile", "fail_on_recompile"])
def test_stance_strategies_match_a_hand_count(write_scenario, stance):
    """A stance set for the whole run: nothing was compiled before it, so eager_on_recompile
    never compiles and fail_on_recompile refuses the very first compile (torch 2.13)."""
    scenario, runs = _by_strategy(write_scenario(STANCES), strategies=[stance])
    run = runs[stance]
    target = loader.load(scenario)
    graphs, ok, raised = _by_hand_with_stance(target.fn, target.make_args, [1, 2, 8], stance)
    assert run.graphs == graphs
    assert run.compiles - run.failed_compiles == ok
    if raised is None:
        assert run.status == "ok" and run.outputs_match is True
        # no cache entry ever existed: every call ran without compiled code
        assert [c.event for c in run.calls] == ["eager"] * 3 and graphs == 0
    else:
        assert run.status == "error" and run.error.call_index == raised
        assert "fail_on_recompile" in run.error.message
        assert [c.event for c in run.calls][-1] == "error"


def test_unknown_mark_option_is_unsupported_not_a_crash(write_scenario):
    path = write_scenario("""
        target: user_targets.py:double
        inputs: [{shape: [B, 8]}]
        sequences: {s: [1, 2]}
        strategies: [odd, default]
        custom_strategies:
          odd: {extends: mark_unbacked, mark_options: {no_such_option: 1}}
    """)
    _, runs = _by_strategy(path)
    assert runs["odd"].status == "unsupported"
    assert "no option no_such_option" in runs["odd"].error.message
    assert runs["default"].status == "ok" and runs["default"].graphs == 2


def test_missing_mark_function_is_unsupported(write_scenario, monkeypatch):
    """A torch without the mark function (e.g. mark_unbacked before it existed)."""
    from recompile_probe.strategies import apply

    monkeypatch.setattr(
        apply, "MARKS", {**MARKS, "unbacked": ("torch._dynamo.decorators", "mark_gone")}
    )
    path = write_scenario("""
        target: user_targets.py:double
        inputs: [{shape: [B, 8]}]
        sequences: {s: [1, 2]}
        strategies: [mark_unbacked]
    """)
    _, runs = _by_strategy(path)
    assert runs["mark_unbacked"].status == "unsupported"
    assert "mark_gone does not exist" in runs["mark_unbacked"].error.message


def test_marker_counts_only_tensor_dims():
    mark = marker(BUILTINS["mark_dynamic"])
    chunks, x = [torch.randn(3)], torch.randn(2, 3)
    with contextlib.ExitStack() as stack:
        stack.callback(mark.restore)
        mark((chunks, x), {0: (0,), 1: (0, 1)})
        assert mark.marked == {(1, 0), (1, 1)}
    assert _marking(x) == {}


# --- marks: one (argument, dim) at a time, as `suggest` writes them --------------------------

MARKS_SCENARIO = """
target: logprobs.count_greater_than
sequences: {rl: [1, 2, 8]}
backend: eager
strategies: [x_only]
custom_strategies:
  x_only:
    marks:
      - {argument: 0, dim: 0, kind: unbacked}
"""


def test_location_marks_mark_exactly_that_dim(tmp_path):
    """Only x's batch dim unbacked: values still recompiles; the graphs equal a CompileCounter
    with the same single mark done by hand."""
    path = tmp_path / "marks.yaml"
    path.write_text(MARKS_SCENARIO)
    loaded = load(path)
    assert loaded.strategy("x_only").marks == (LocationMark(0, 0, "unbacked"),)
    report = run_scenario(loaded)
    (run,) = report.runs
    target = loader.load(loaded)
    graphs, error = hand_count(
        target.fn,
        target.make_args,
        [1, 2, 8],
        mark=torch._dynamo.decorators.mark_unbacked,
        batch_dims={0: [0]},
    )
    assert error is None and run.status == "ok"
    assert run.graphs == graphs
    assert run.marked_dims == 1
    both, _ = hand_count(
        target.fn,
        target.make_args,
        [1, 2, 8],
        mark=torch._dynamo.decorators.mark_unbacked,
        batch_dims={0: [0], 1: [0]},
    )
    assert both < graphs  # the other mark matters: the single mark really was a single mark


@pytest.mark.parametrize(
    "entry, fragment",
    [
        ("{argument: 0, dim: 0, kind: unbaked}", "unknown mark 'unbaked'"),
        ("{argument: 0, kind: unbacked}", "missing dim"),
        ("{argument: 0, dim: -1, kind: dynamic}", "non-negative"),
        ("{argument: '0[', dim: 0, kind: dynamic}", "cannot read the argument path"),
        ("{argument: 0, dim: 0, kind: dynamic, min: 2}", "unknown key 'min'"),
    ],
)
def test_malformed_marks_exit_2_at_their_line(tmp_path, entry, fragment):
    from typer.testing import CliRunner

    from recompile_probe.cli import app

    path = tmp_path / "bad.yaml"
    path.write_text(MARKS_SCENARIO.replace("{argument: 0, dim: 0, kind: unbacked}", entry))
    result = CliRunner().invoke(app, ["run", str(path), "--quiet"])
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    assert fragment in result.output, result.output
    assert f"{path}:9" in result.output, result.output
