"""The probe against real torch: every count is checked against an independent CompileCounter."""

from __future__ import annotations

import pytest
import torch

from helpers import hand_count
from recompile_probe.execution.session import run_scenario
from recompile_probe.records.report import to_dict
from recompile_probe.scenario.load import load, loads
from recompile_probe.scenario.overrides import with_overrides
from recompile_probe.targets import loader


def _runs(path, **overrides):
    scenario = with_overrides(load(path), **overrides)
    report = run_scenario(scenario)
    return scenario, {(r.sequence_name, r.strategy): r for r in report.runs}, report


MARKS = {
    "mark_dynamic": torch._dynamo.mark_dynamic,
    "maybe_mark_dynamic": torch._dynamo.maybe_mark_dynamic,
    "mark_unbacked": torch._dynamo.decorators.mark_unbacked,
}
DYNAMIC = {"default": None, "static": False, "dynamic_true": True}


def _independent(scenario, run):
    target = loader.load(scenario)
    kwargs = {"dynamic": DYNAMIC.get(run.strategy)}
    if run.strategy in MARKS:
        kwargs.update(mark=MARKS[run.strategy], batch_dims=target.batch_dims)
    return hand_count(
        target.fn,
        target.make_args,
        run.sequence,
        fullgraph=scenario.compile.get("fullgraph", False),
        **kwargs,
    )


def test_default_scenario_matches_the_vllm_story():
    scenario, runs, _ = _runs(
        None,
        strategies=[
            "default",
            "dynamic_true",
            "mark_dynamic",
            "mark_unbacked",
            "unbacked_sources",
            "backed_size_oblivious",
        ],
    )
    reason = "tensor 'x' size mismatch at index 0. expected 1, actual 2"
    for name in ("default", "dynamic_true", "mark_dynamic"):
        run = runs[("rl", name)]
        assert (run.compiles, run.recompiles, run.graphs) == (2, 1, 2), name
        assert [c.event for c in run.calls] == ["compile", "recompile", "hit"]
        assert reason in run.compile_events[1].reason
        assert run.compile_events[1].call_index == 1
    from recompile_probe.torch_compat.knobs import knob_not_honoured

    unhonoured = knob_not_honoured("torch.compiler.config.unbacked_sources")
    for name in ("mark_unbacked", "unbacked_sources", "backed_size_oblivious"):
        run = runs[("rl", name)]
        if name == "unbacked_sources" and unhonoured:  # e.g. torch 2.9: measured, not assumed
            assert run.status == "unsupported" and "not honoured" in run.error.message
            continue
        assert (run.compiles, run.recompiles, run.graphs) == (1, 0, 1), name
    assert all(
        r.outputs_match is True and r.status == "ok"
        for r in runs.values()
        if r.status != "unsupported"
    )


def test_counts_equal_compilation_metrics_and_cache_entries():
    from torch._dynamo.eval_frame import _debug_get_cache_entry_list
    from torch._dynamo.utils import get_compilation_metrics

    from recompile_probe.targets.logprobs import count_greater_than

    _, runs, _ = _runs(None, strategies=["static"], sequence=[1, 2, 8])
    run = runs[("cli", "static")]
    # Right after the last run, Dynamo's own records still describe it.
    metrics = get_compilation_metrics()
    assert run.compiles == len(metrics) == 3
    assert [e.compile_id for e in run.compile_events] == [str(m.compile_id) for m in metrics]
    assert run.guard_count == metrics[-1].guard_count
    assert run.shape_env_guard_count == metrics[-1].shape_env_guard_count
    assert run.cache_entries == len(_debug_get_cache_entry_list(count_greater_than)) == 3
    assert run.recompiles == sum(m.cache_size > 0 for m in metrics) == 2
    assert run.compile_time_ms == round(
        sum(m.dynamo_cumulative_compile_time_us for m in metrics) / 1000, 3
    )
    assert [e.graph_op_count for e in run.compile_events] == [m.graph_op_count for m in metrics]
    # leaf guards of the newest entry: Dynamo's guard objects, each counted once however many
    # managers hold it (pybind hands back one Python object per C++ guard; all kept alive here,
    # so no id is reused)
    newest = max(
        _debug_get_cache_entry_list(count_greater_than),
        key=lambda e: int(str(e.compile_id).split("/")[1]),
    )
    root = newest.guard_manager.root
    held, stack = list(root.get_epilogue_lambda_guards()), [root]
    while stack:
        manager = stack.pop()
        held.extend(manager.get_leaf_guards())
        stack.extend(manager.get_child_managers())
    assert run.leaf_guard_count == len({id(g) for g in held})


@pytest.mark.parametrize(
    "strategy",
    ["default", "static", "dynamic_true", "mark_dynamic", "maybe_mark_dynamic", "mark_unbacked"],
)
@pytest.mark.parametrize("sequence", [[1, 2, 8], [2, 1, 8], [4, 4, 1, 1, 16]])
def test_graphs_equal_compile_counter_for_the_seed_op(strategy, sequence):
    scenario, runs, _ = _runs(None, strategies=[strategy], sequence=sequence)
    run = runs[("cli", strategy)]
    assert (run.graphs, None) == _independent(scenario, run)


USER = """
name: user
target: user_targets.py:{fn}
{inputs}
sequences: {{s: [1, 2, 3, 8]}}
strategies: [default, static, dynamic_true, mark_dynamic, mark_unbacked]
"""
PAIR_SPECS = """inputs:
  - {shape: [B, 8], dtype: float32, fill: randn}
  - {shape: [B, 1], fill: "randint(0, 5)", dtype: float32}"""


@pytest.mark.parametrize(
    "fn, inputs",
    [
        ("scale_shift", PAIR_SPECS),
        ("scale_shift", "factory: user_targets.py:make_pair\nbatch_dims: {0: [0], 1: [0]}"),
        ("with_graph_break", "inputs:\n  - {shape: [B, 8]}"),
        ("project", "inputs:\n  - {shape: [B, 16]}"),
        ("scaled", "inputs:\n  - {shape: [B, 8]}\n  - 0.5"),
        ("scale_shift", "inputs:\n  - {shape: [B, 8]}\n  - {shape: [8]}"),
    ],
)
def test_user_callables_match_compile_counter(write_scenario, fn, inputs):
    path = write_scenario(USER.format(fn=fn, inputs=inputs))
    scenario, runs, _ = _runs(path)
    for run in runs.values():
        graphs, error = _independent(scenario, run)
        assert run.graphs == graphs, run.strategy
        assert run.status == ("error" if error else "ok")
        assert run.outputs_match is True


def test_graph_break_counts_graphs_and_compiles_separately(write_scenario):
    path = write_scenario(USER.format(fn="with_graph_break", inputs="inputs:\n  - {shape: [B, 8]}"))
    _, runs, _ = _runs(path, strategies=["static"], sequence=[2, 3])
    run = runs[("cli", "static")]
    # Two frames (the function and its resume function), each compiled per batch size.
    assert run.graphs == 4 and run.compiles == 4 and run.recompiles == 2
    functions = {e.function for e in run.compile_events}
    assert "with_graph_break" in functions and any(
        f.startswith("torch_dynamo_resume") for f in functions
    )
    assert run.cache_entries == 4


def test_dtype_change_recompiles_under_every_strategy(write_scenario):
    path = write_scenario("""
        target: user_targets.py:double
        factory: user_targets.py:make_dtype_switch
        batch_dims: {0: [0]}
        sequences: {s: [2, 3]}
        strategies: [dynamic_true, mark_unbacked]
    """)
    scenario, runs, _ = _runs(path)
    for run in runs.values():
        assert run.recompiles == 1 and run.graphs == 2
        assert "dtype" in run.compile_events[1].reason
        assert run.graphs == _independent(scenario, run)[0]


def test_failing_strategy_is_recorded_and_others_still_run(write_scenario):
    path = write_scenario("""
        target: user_targets.py:branch_on_batch
        inputs: [{shape: [B, 8]}]
        sequences: {s: [1, 2]}
        compile: {fullgraph: true}
        strategies: [default, mark_unbacked, min2]
        custom_strategies:
          min2: {extends: mark_dynamic, mark_options: {min: 2, max: 1024}}
    """)
    scenario, runs, _ = _runs(path)
    unbacked = runs[("s", "mark_unbacked")]
    assert unbacked.status == "error"
    assert unbacked.error.call_index == 0
    assert unbacked.compile_events[-1].failed and unbacked.compile_events[-1].call_index == 0
    assert [c.event for c in unbacked.calls] == ["error"]
    assert (
        "GuardOnDataDependentSymNode" in unbacked.error.type
        or "data-dependent" in unbacked.error.message
    )
    min2 = runs[("s", "min2")]
    assert min2.status == "error" and min2.error.call_index == 0
    assert "Constraint" in min2.error.type
    default = runs[("s", "default")]
    assert default.status == "ok" and default.graphs == 2
    graphs, error = hand_count(
        loader.load(scenario).fn,
        loader.load(scenario).make_args,
        [1, 2],
        mark=torch._dynamo.decorators.mark_unbacked,
        batch_dims={0: (0,)},
        fullgraph=True,
    )
    assert error is not None and unbacked.graphs == graphs


def test_as_is_runs_the_users_decoration(write_scenario):
    path = write_scenario("""
        target: user_targets.py:decorated
        inputs: [{shape: [B, 8]}]
        sequences: {s: [1, 2, 8]}
        strategies: [as_is, default]
    """)
    _, runs, _ = _runs(path)
    as_is = runs[("s", "as_is")]
    # dynamic=True as decorated: B=1 specializes, then one dynamic graph.
    assert (as_is.status, as_is.graphs, as_is.compiles) == ("ok", 2, 2)
    assert runs[("s", "default")].graphs == 2
    assert as_is.outputs_match is True


def test_unsupported_strategy_is_reported_not_raised(write_scenario):
    path = write_scenario("""
        target: user_targets.py:scaled
        inputs: [{shape: [B, 8]}, 2.0]
        sequences: {s: [1, 2]}
        strategies: [future, default]
        custom_strategies:
          future: {config: {torch._dynamo.config.no_such_knob_in_this_torch: true}}
    """)
    _, runs, _ = _runs(path)
    assert runs[("s", "future")].status == "unsupported"
    assert "no_such_knob_in_this_torch" in runs[("s", "future")].error.message
    assert runs[("s", "default")].status == "ok"


def test_config_and_logging_are_restored():
    import logging

    before = (
        torch._dynamo.config.automatic_dynamic_shapes_mark_as,
        torch.fx.experimental._config.backed_size_oblivious,
        torch.compiler.config.unbacked_sources,
        logging.getLogger("torch._dynamo.guards.__recompiles").level,
        logging.getLogger("torch._utils_internal").level,
        set(torch._logging._internal.log_state.artifact_names),
    )
    _runs(
        None,
        strategies=["auto_unbacked", "backed_size_oblivious", "unbacked_sources"],
        sequence=[1, 2],
    )
    after = (
        torch._dynamo.config.automatic_dynamic_shapes_mark_as,
        torch.fx.experimental._config.backed_size_oblivious,
        torch.compiler.config.unbacked_sources,
        logging.getLogger("torch._dynamo.guards.__recompiles").level,
        logging.getLogger("torch._utils_internal").level,
        set(torch._logging._internal.log_state.artifact_names),
    )
    assert before == after


def test_same_matrix_twice_in_one_process_gives_identical_counts():
    def counts(report):
        return [
            (
                r.strategy,
                r.sequence_name,
                r.graphs,
                r.compiles,
                r.recompiles,
                r.cache_entries,
                r.guard_count,
                r.shape_env_guard_count,
                r.leaf_guard_count,
                [c.event for c in r.calls],
                [e.reason for e in r.compile_events],
            )
            for r in report.runs
        ]

    _, _, first = _runs(None)
    _, _, second = _runs(None)
    assert counts(first) == counts(second)


def test_gather_logprobs_pipeline_matches_eager():
    _, runs, report = _runs(None, strategies=["default", "mark_unbacked"])
    scenario = with_overrides(
        loads(
            "target: logprobs.gather_logprobs\nparams: {vocab_size: 256, num_logprobs: 3}\n"
            "sequences: {rl: [1, 2, 8]}\nstrategies: [default, mark_unbacked]\n"
        )
    )
    report = run_scenario(scenario)
    by = {r.strategy: r for r in report.runs}
    target = loader.load(scenario)
    from torch._dynamo.decorators import mark_unbacked

    assert (by["default"].graphs, None) == hand_count(target.fn, target.make_args, [1, 2, 8])
    assert (by["mark_unbacked"].graphs, None) == hand_count(
        target.fn, target.make_args, [1, 2, 8], mark=mark_unbacked, batch_dims=target.batch_dims
    )
    assert all(r.outputs_match for r in report.runs)
    assert to_dict(report)["runs"][0]["calls"][0]["event"] == "compile"


def test_wrong_outputs_are_caught(write_scenario, monkeypatch):
    """A backend that computes garbage must read DIFFER, not match."""
    from recompile_probe.probe import run as probe_run

    def bad_backend(gm, example_inputs):
        def run(*args):
            return [o + 1 if isinstance(o, torch.Tensor) else o for o in gm(*args)]

        return run

    monkeypatch.setattr(probe_run, "resolve_backend", lambda *a, **k: bad_backend)
    _, runs, _ = _runs(None, strategies=["default"], sequence=[2, 3])
    run = runs[("cli", "default")]
    assert run.outputs_match is False and [c.outputs_match for c in run.calls] == [False, False]


@pytest.mark.parametrize("strategy", ["default", "mark_unbacked"])
def test_aot_eager_backend_matches_compile_counter(strategy):
    scenario, runs, _ = _runs(None, strategies=[strategy], sequence=[1, 2, 8], backend="aot_eager")
    run = runs[("cli", strategy)]
    assert run.backend == "aot_eager" and run.outputs_match is True
    kwargs = {"dynamic": DYNAMIC.get(strategy)}
    if strategy in MARKS:
        kwargs.update(mark=MARKS[strategy], batch_dims=loader.load(scenario).batch_dims)
    target = loader.load(scenario)
    assert (run.graphs, None) == hand_count(
        target.fn, target.make_args, run.sequence, backend="aot_eager", **kwargs
    )


def test_non_tensor_batch_argument_runs_unmarked(write_scenario):
    """A list of B tensors: marks have nothing to mark, the counts are still Dynamo's."""
    path = write_scenario("""
        target: user_targets.py:stack_sum
        factory: user_targets.py:make_list
        batch_dims: {0: [0]}
        sequences: {s: [1, 2, 3]}
        strategies: [default, mark_unbacked]
    """)
    with pytest.warns(UserWarning, match="not a tensor"):
        scenario, runs, _ = _runs(path)
    target = loader.load(scenario)
    for run in runs.values():
        assert run.status == "ok" and run.outputs_match is True
        assert run.graphs == hand_count(target.fn, target.make_args, run.sequence)[0]


def test_batch_that_is_not_a_tensor_dim_runs_every_strategy(write_scenario):
    """batch_dims: {}: the batch is the length of a list (guards like len(L['xs']) == B)."""
    path = write_scenario("""
        target: user_targets.py:stack_sum
        factory: user_targets.py:make_list
        batch_dims: {}
        sequences: {s: [1, 2, 3]}
        strategies: [default, static, dynamic_true, mark_unbacked, unbacked_sources]
        repeats: 2
    """)
    scenario, runs, report = _runs(path)
    target = loader.load(scenario)
    from helpers import unbacked_sources_honoured

    honoured = unbacked_sources_honoured()
    for name, run in runs.items():
        if name[1] == "unbacked_sources" and not honoured:
            assert run.status == "unsupported"
            continue
        graphs, error = _independent(scenario, run)
        assert error is None and run.status == "ok" and run.outputs_match is True
        assert run.compiles == run.graphs == graphs, name[1]
    assert runs[("s", "mark_unbacked")].marked_dims == 0
    if not honoured:
        return
    assert runs[("s", "unbacked_sources")].marked_dims == 0
    assert runs[("s", "default")].marked_dims is None and runs[("s", "default")].notes == ()
    assert "nothing to mark" in runs[("s", "mark_unbacked")].notes[0]
    assert "nothing to name" in runs[("s", "unbacked_sources")].notes[0]
    assert target.batch_dims == {}
    data = to_dict(report)["runs"]
    assert {r["strategy"]: r["marked_dims"] for r in data}["mark_unbacked"] == 0
    from helpers import render_report

    table = render_report(report, "table")
    assert "mark_unbacked: nothing to mark" in table.split("Notes", 1)[1]


def _per_call_by_hand(fn, make_args, sequence, **compile_kwargs):
    """(graphs, failed metrics records) per call: a CompileCounter and get_compilation_metrics()."""
    import inspect

    from torch._dynamo.testing import CompileCounter
    from torch._dynamo.utils import clear_compilation_metrics, get_compilation_metrics

    torch._dynamo.reset()
    clear_compilation_metrics()
    counter = CompileCounter()
    limit = None
    if (
        "recompile_limit" in compile_kwargs
        and "recompile_limit" not in inspect.signature(torch.compile).parameters
    ):
        limit = compile_kwargs.pop("recompile_limit")  # older torch: the config does it
    compiled = torch.compile(fn, backend=counter, **compile_kwargs)
    out = []
    with torch._dynamo.config.patch(**({} if limit is None else {"recompile_limit": limit})):
        for b in sequence:
            graphs, records = counter.frame_count, len(get_compilation_metrics())
            compiled(*make_args(b))
            failed = sum(m.fail_type is not None for m in get_compilation_metrics()[records:])
            out.append((counter.frame_count - graphs, failed))
    torch._dynamo.reset()
    return out


def test_a_failed_recompile_attempt_says_no_graph_was_made(write_scenario):
    path = write_scenario("""
        target: user_targets.py:double
        inputs: [{shape: [B, 8]}]
        sequences: {s: [1, 2, 3, 4]}
        compile: {recompile_limit: 2}
        strategies: [static]
        repeats: 2
    """)
    scenario, runs, report = _runs(path)
    run = runs[("s", "static")]
    target = loader.load(scenario)
    by_hand = _per_call_by_hand(
        target.fn, target.make_args, [1, 2, 3, 4], dynamic=False, recompile_limit=2
    )
    assert [(c.graphs, c.failed_compiles) for c in run.calls] == by_hand
    limit_call = next(i for i, (_, failed) in enumerate(by_hand) if failed)
    call = run.calls[limit_call]
    # still a recompile attempt (the documented event), but no graph and a failed compile
    assert (call.event, call.graphs, call.failed_compiles) == ("recompile", 0, 1)
    assert run.failed_compiles == sum(f for _, f in by_hand) == 1
    assert run.status == "ok" and run.outputs_match is True
    from helpers import render_report
    from recompile_probe.render import cells

    assert cells.timeline(run).split()[limit_call] == cells.FAILED_GLYPH
    table = render_report(report, "table")
    assert "△ failed compile" in table and " failed " in table.splitlines()[4]


WRAPPED = """
import functools

import torch


def deco(fn):
    @functools.wraps(fn)  # as transformers' deprecate_kwarg does: the frame is `wrapper`
    def wrapper(*args, **kwargs):
        return fn(*args, **kwargs)
    return wrapper


class Wrapped(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(8, 8)

    @deco
    def forward(self, x):
        y = self.lin(x).sin()
        torch._dynamo.graph_break()
        return y.cos() * 2  # compiled in a resume frame, where y is not marked


model = Wrapped()


def make(batch_size):
    return (torch.randn(batch_size, 8),)
"""


def test_guard_figures_come_from_the_targets_own_frame(write_scenario):
    """A wrapped forward with a graph break: the inner resume frame fails its recompile (limit 1),
    the run still finishes; guards are the outer frame's, failed compiles are counted."""
    from torch._dynamo.utils import get_compilation_metrics

    write_scenario(WRAPPED, name="wrapped.py")
    path = write_scenario("""
        target: wrapped.py:model
        factory: wrapped.py:make
        batch_dims: {0: [0]}
        sequences: {s: [1, 2, 3]}
        compile: {recompile_limit: 1}
        strategies: [mark_unbacked]
        repeats: 2
    """)
    scenario, runs, _ = _runs(path)
    run = runs[("s", "mark_unbacked")]
    metrics = {str(m.compile_id): m for m in get_compilation_metrics()}  # this run's records
    assert run.status == "ok" and run.outputs_match is True
    assert run.failed_compiles == sum(m.fail_type is not None for m in metrics.values()) >= 1
    own = metrics[run.guard_compile_id]
    assert run.guard_compile_id.split("/")[0] == "0"
    code = type(loader.load(scenario).fn).forward.__code__
    assert (
        (own.co_name, own.co_firstlineno)
        == (code.co_name, code.co_firstlineno)
        == ("wrapper", code.co_firstlineno)
    )
    assert (run.guard_count, run.shape_env_guard_count, run.guard_latency_us) == (
        own.guard_count,
        own.shape_env_guard_count,
        own.guard_latency_us,
    )
    # the newest record overall is an inner frame's, with other figures
    newest_ok = [m for m in metrics.values() if m.fail_type is None][-1]
    assert str(newest_ok.compile_id).split("/")[0] != "0"
    assert newest_ok.guard_count != own.guard_count
    target = loader.load(scenario)
    mark = torch._dynamo.decorators.mark_unbacked
    by_hand = _per_call_by_hand(
        target.fn, lambda b: _marked(mark, target.make_args(b)), [1, 2, 3], recompile_limit=1
    )
    assert [(c.graphs, c.failed_compiles) for c in run.calls] == by_hand
    assert run.graphs == sum(g for g, _ in by_hand)


def _marked(mark, args):
    mark(args[0], 0)
    return args


def test_steady_state_spread_is_reported():
    _, runs, _ = _runs(None, strategies=["default"], sequence=[1, 2])
    run = runs[("cli", "default")]
    assert 0 < run.steady_state_min_us <= run.steady_state_us <= run.steady_state_p90_us
    # the documented rule (docs/output.md, Noise): median more than 1.3x the fastest sample
    documented = run.steady_state_us > 1.3 * run.steady_state_min_us
    assert run.steady_state_noisy is documented


WIDENED = """
target: logprobs.count_greater_than
params: {vocab_size: 64}
sequences: {warm: [4, 8]}
strategies: [default]
repeats: 0
coverage: {B: [2, 64]}
expect: {"*": {no_recompile_in: {B: [1, 64]}}}
"""


def test_a_coverage_range_widened_by_a_budget_says_so():
    (run,) = run_scenario(loads(WIDENED)).runs
    assert run.coverage.ranges == {"B": (1, 64)}
    assert run.coverage.notes[0] == (
        "asked B ∈ [2, 64], decided B ∈ [1, 64]: widened to every no_recompile_in budget's "
        "range, so each budget is judged on what was decided"
    )
    # B = 1 lies in the budget's part only: the decided range answers for it
    assert run.coverage.counterexample == {"B": 1}
    (same,) = run_scenario(loads(WIDENED.replace("[2, 64]", "[1, 64]"))).runs
    assert same.coverage.ranges == {"B": (1, 64)} and not any(
        "widened" in n for n in same.coverage.notes
    )
