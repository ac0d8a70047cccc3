"""Verdicts over records (no torch)."""

from __future__ import annotations

import statistics
from dataclasses import replace

import pytest

from helpers import sample_report, sample_run, timed_run
from recompile_probe.analysis.sequence import (
    at_call,
    moved,
    points_of,
    run_points,
    sequence_label,
    transitions,
)
from recompile_probe.analysis.verdicts import best, too_noisy, verdict
from recompile_probe.records.run import Call, CompileEvent, Run, RunError, figureless_run


def test_best_is_fewest_compiles_then_guards_then_cost():
    runs = [
        sample_run("a", 2, 5, 1.0),
        sample_run("b", 1, 9, 50.0),
        sample_run("c", 1, 8, 60.0),
        sample_run("d", 1, 8, 40.0),
    ]
    assert best(runs).strategy == "d"


def test_errors_and_wrong_outputs_never_win():
    runs = [
        sample_run("a", 2, 5, 1.0),
        sample_run("b", 1, 5, 1.0, status="error"),
        sample_run("c", 1, 5, 1.0, match=False),
    ]
    assert best(runs).strategy == "a"
    line = verdict("rl", runs)
    assert "a wins with 2 compiles" in line and "error: b" in line
    assert "outputs differ from eager: c" in line


def test_transitions_place_each_recompile():
    report = sample_report()
    (t,) = transitions(report.runs[0])
    assert (t.call_index, t.batch_before, t.batch_after, t.compile_id) == (1, 1, 2, "0/1")


def test_no_winner():
    assert "no strategy finished" in verdict("rl", [sample_run("a", 1, 1, 1.0, status="error")])


# docs/output.md (Noise): a figure whose median is more than 1.3x its fastest sample is too noisy.
# Sample sets (µs) on both sides of that boundary, with the answer the docs give for each.
NOISE_SAMPLES = [
    ([100.0, 100.0, 100.0], False),
    ([100.0, 120.0, 129.9, 131.0, 900.0], False),  # median 1.299x: a wide p90 does not count
    ([100.0, 130.0, 5000.0], False),  # exactly 1.3x is not "more than"
    ([100.0, 130.1, 131.0], True),
    ([18.3, 24.3, 47.7], True),  # the example the docs print: median 1.33x
    ([20.0, 60.0, 256000.0], True),
]


@pytest.mark.parametrize("samples, noisy", NOISE_SAMPLES)
def test_noise_rule(samples, noisy):
    assert too_noisy(min(samples), statistics.median(samples)) is noisy


def test_noise_rule_needs_both_figures():
    assert too_noisy(None, 80.0) is None and too_noisy(80.0, None) is None


def test_a_noisy_figure_never_decides_the_winner():
    # b's median reads low, but its samples spread too wide to rank: the tie goes by order
    runs = [
        timed_run("a", 1, 9, 80.0, 82.0, 90.0),
        timed_run("b", 1, 9, 20.0, 60.0, 256000.0),
        timed_run("c", 2, 9, 10.0, 10.0, 11.0),
    ]
    assert best(runs).strategy == "a"
    line = verdict("rl", runs)
    assert "µs/call too noisy to rank (b: median > 1.3x min)" in line
    assert "a wins the tie by scenario order" in line
    # the noisy run winning the tie by order is labelled, not ranked
    first = [runs[1], runs[0]]
    assert best(first).strategy == "b"
    assert "60.0 µs/call, too noisy to rank" in verdict("rl", first)
    # quiet figures still rank
    quiet = [timed_run("a", 1, 9, 80.0, 82.0, 90.0), timed_run("b", 1, 9, 50.0, 55.0, 60.0)]
    assert best(quiet).strategy == "b"
    assert "too noisy" not in verdict("rl", quiet)


def test_noise_outside_the_tie_does_not_matter():
    runs = [timed_run("a", 1, 9, 80.0, 82.0, 90.0), timed_run("b", 2, 9, 10.0, 60.0, 90.0)]
    assert best(runs).strategy == "a"
    assert "too noisy" not in verdict("rl", runs)


def _points_run(points, events_at, strategy="default", steps=1):
    """A run over named points; ``steps`` calls per point (a driver); a recompile at each
    call index in ``events_at``."""
    calls = tuple(
        Call(
            k * steps + j,
            p.get("B", 0),
            "recompile" if k * steps + j in events_at else "hit",
            1.0,
            True,
            sizes=p,
            point_index=k,
            step=j,
        )
        for k, p in enumerate(points)
        for j in range(steps)
    )
    events = tuple(
        CompileEvent(
            compile_id=f"0/{n + 1}",
            function="f",
            call_index=i,
            reason="r",
            guard_count=9,
            shape_env_guard_count=0,
            graph_op_count=1,
            compile_time_ms=1.0,
            failed=False,
            recompile=True,
        )
        for n, i in enumerate(events_at)
    )
    return Run(
        target="t",
        sequence_name="rl",
        sequence=tuple(p.get("B", 0) for p in points),
        strategy=strategy,
        backend="eager",
        status="ok",
        error=None,
        graphs=1 + len(events),
        compiles=1 + len(events),
        recompiles=len(events),
        cache_entries=1,
        guard_count=9,
        shape_env_guard_count=0,
        leaf_guard_count=9,
        compile_time_ms=1.0,
        outputs_match=True,
        calls=calls,
        compile_events=events,
        steady_state_us=1.0,
        points=tuple(points),
    )


def test_verdict_and_changes_name_what_moved():
    two = [{"B": 1, "S": 7}, {"B": 1, "S": 33}, {"B": 2, "S": 7}]
    run = _points_run(two, [1, 2])
    labels = [moved(run, t) for t in transitions(run)]
    assert labels == ["S 7 → 33", "B 1 → 2, S 33 → 7"]
    line = verdict("prefill", [run, replace(_points_run(two, []), strategy="fixed")])
    assert line.startswith("prefill (B 1, S 7) → (B 1, S 33) → (B 2, S 7): fixed wins")
    assert "recompile: default (first at call 1, S 7 → 33)." in line
    # a batch-only run reads in B alone, whether its calls carry points or not
    batch = _points_run([{"B": 1}, {"B": 2}], [1])
    assert moved(batch, transitions(batch)[0]) == "B 1 → 2"
    assert verdict("rl", [batch]).startswith("rl [1, 2]: ")
    assert "(first at call 1, B 1 → 2)" in verdict("rl", [batch])
    pointless = sample_report().runs[0]  # calls without points
    assert moved(pointless, transitions(pointless)[0]) == "B 1 → 2"
    assert at_call(pointless, 1) == "B 2"
    assert sequence_label(run_points(pointless)) == "B = 1 → 2"


def test_a_driver_recompile_inside_a_point_names_its_step():
    run = _points_run([{"B": 1, "S": 7}, {"B": 2, "S": 7}], [1, 3, 4], steps=3)
    labels = [moved(run, t) for t in transitions(run)]
    assert labels == ["step 1 at B 1, S 7", "B 1 → 2", "step 1 at B 2, S 7"]
    assert at_call(run, 5) == "B 2, S 7, step 2"
    assert "(first at call 1, step 1 at B 1, S 7)" in verdict("gen", [run])


def test_points_come_from_a_run_that_recorded_them():
    run = _points_run([{"B": 1, "S": 7}, {"B": 1, "S": 33}], [1])
    lost = figureless_run(
        "t", "rl", (1, 1), "lost", "eager", "error", RunError("WorkerCrashed", "x", None)
    )
    assert points_of([lost, run]) == run_points(run)
    assert verdict("rl", [lost, run]).startswith("rl (B 1, S 7) → (B 1, S 33): ")


def test_a_run_that_compiled_nothing_is_no_candidate(write_scenario):
    """Real runs: eager_on_recompile set from the first call never compiles (CompileCounter
    agrees), so its 0 compiles must not beat default's; the verdict says why it is out."""
    import torch
    from torch._dynamo.testing import CompileCounter

    from recompile_probe.execution.session import run_scenario
    from recompile_probe.scenario.load import load
    from recompile_probe.targets import loader

    path = write_scenario("""
        target: user_targets.py:double
        inputs: [{shape: [B, 8]}]
        sequences: {s: [1, 2]}
        strategies: [eager_on_recompile, default]
        repeats: 2
        custom_strategies:
          eager_on_recompile: {stance: eager_on_recompile}
    """)
    scenario = load(path)
    runs = list(run_scenario(scenario).runs)
    target = loader.load(scenario)
    torch._dynamo.reset()
    counter = CompileCounter()
    compiled = torch.compile(target.fn, backend=counter)
    with torch.compiler.set_stance("eager_on_recompile"):
        for b in (1, 2):
            compiled(*target.make_args(b))
    torch._dynamo.reset()
    assert counter.frame_count == 0  # the independent truth: nothing was compiled
    by_name = {r.strategy: r for r in runs}
    assert by_name["eager_on_recompile"].compiles == 0
    assert by_name["default"].compiles and by_name["default"].compiles > 0
    assert best(runs).strategy == "default"
    line = verdict("s", runs)
    assert "default wins" in line and "eager_on_recompile wins" not in line
    assert "eager_on_recompile compiled nothing: not a candidate" in line

    only = [by_name["eager_on_recompile"]]
    assert best(only) is None
    assert "compiled nothing" in verdict("s", only) and " wins" not in verdict("s", only)


def test_with_a_declared_range_proven_coverage_ranks_before_the_compile_count():
    # dynamic_true and mark_unbacked both compile once on B = 4 -> 8; only mark_unbacked
    # serves B = 1 (dynamic_true's entry guards 2 <= B), so it wins whatever the timings say
    from helpers import CONFIGS
    from recompile_probe.execution.session import run_scenario
    from recompile_probe.scenario.load import load

    scenario = replace(
        load(CONFIGS / "coverage.yaml"), strategies=("dynamic_true", "mark_unbacked"), repeats=0
    )
    runs = list(run_scenario(scenario).runs)
    assert [r.compiles for r in runs] == [1, 1]
    assert best(runs).strategy == "mark_unbacked"
    assert "proved over B ∈ [1, 4096]" in verdict("warm", runs)
    without = [replace(r, coverage=None) for r in runs]
    assert best(without).strategy == "dynamic_true"  # untimed: the tie goes by scenario order
