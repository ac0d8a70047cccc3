"""Verdicts over records (no torch)."""

from __future__ import annotations

from recompile_probe import analysis, model
from test_model import sample_report


def _run(strategy, compiles, guards, us, status="ok", match=True):
    return model.Run("t", "rl", (1, 2, 8), strategy, "eager", status, None, compiles, compiles,
                     compiles - 1, compiles, guards, 0, guards, 1.0, match,
                     steady_state_us=us)


def test_best_is_fewest_compiles_then_guards_then_cost():
    runs = [_run("a", 2, 5, 1.0), _run("b", 1, 9, 50.0), _run("c", 1, 8, 60.0),
            _run("d", 1, 8, 40.0)]
    assert analysis.best(runs).strategy == "d"


def test_errors_and_wrong_outputs_never_win():
    runs = [_run("a", 2, 5, 1.0), _run("b", 1, 5, 1.0, status="error"),
            _run("c", 1, 5, 1.0, match=False)]
    assert analysis.best(runs).strategy == "a"
    line = analysis.verdict("rl", runs)
    assert "a wins with 2 compiles" in line and "error: b" in line
    assert "outputs differ from eager: c" in line


def test_transitions_place_each_recompile():
    report = sample_report()
    (t,) = analysis.transitions(report.runs[0])
    assert (t.call_index, t.batch_before, t.batch_after, t.compile_id) == (1, 1, 2, "0/1")


def test_no_winner():
    assert "no strategy finished" in analysis.verdict("rl", [_run("a", 1, 1, 1.0,
                                                                  status="error")])


def _timed(strategy, compiles, guards, low, median, high):
    return model.replace(_run(strategy, compiles, guards, median), steady_state_min_us=low,
                         steady_state_p90_us=high,
                         steady_state_noisy=analysis.too_noisy(low, median))


def test_noise_rule():
    assert analysis.too_noisy(80.0, 80.0 * analysis.NOISE_RATIO) is False
    assert analysis.too_noisy(80.0, 80.0 * analysis.NOISE_RATIO + 0.1) is True
    assert analysis.too_noisy(None, 80.0) is None and analysis.too_noisy(80.0, None) is None


def test_a_noisy_figure_never_decides_the_winner():
    # b's median reads low, but its samples spread too wide to rank: the tie goes by order
    runs = [_timed("a", 1, 9, 80.0, 82.0, 90.0), _timed("b", 1, 9, 20.0, 60.0, 256000.0),
            _timed("c", 2, 9, 10.0, 10.0, 11.0)]
    assert analysis.best(runs).strategy == "a"
    line = analysis.verdict("rl", runs)
    assert "µs/call too noisy to rank (b: median > 1.3x min)" in line
    assert "a wins the tie by scenario order" in line
    # the noisy run winning the tie by order is labelled, not ranked
    first = [runs[1], runs[0]]
    assert analysis.best(first).strategy == "b"
    assert "60.0 µs/call, too noisy to rank" in analysis.verdict("rl", first)
    # quiet figures still rank
    quiet = [_timed("a", 1, 9, 80.0, 82.0, 90.0), _timed("b", 1, 9, 50.0, 55.0, 60.0)]
    assert analysis.best(quiet).strategy == "b"
    assert "too noisy" not in analysis.verdict("rl", quiet)


def test_noise_outside_the_tie_does_not_matter():
    runs = [_timed("a", 1, 9, 80.0, 82.0, 90.0), _timed("b", 2, 9, 10.0, 60.0, 90.0)]
    assert analysis.best(runs).strategy == "a"
    assert "too noisy" not in analysis.verdict("rl", runs)


def _points_run(points, events_at, strategy="default", steps=1):
    """A run over named points; ``steps`` calls per point (a driver); a recompile at each
    call index in ``events_at``."""
    calls = tuple(model.Call(k * steps + j, p.get("B", 0), "recompile"
                             if k * steps + j in events_at else "hit", 1.0, True,
                             sizes=p, point_index=k, step=j)
                  for k, p in enumerate(points) for j in range(steps))
    events = tuple(model.CompileEvent(f"0/{n + 1}", "f", i, "r", 9, 0, 1, 1.0, False,
                                      recompile=True) for n, i in enumerate(events_at))
    return model.Run("t", "rl", tuple(p.get("B", 0) for p in points), strategy, "eager", "ok",
                     None, 1 + len(events), 1 + len(events), len(events), 1, 9, 0, 9, 1.0, True,
                     calls, events, steady_state_us=1.0, points=tuple(points))


def test_verdict_and_changes_name_what_moved():
    two = [{"B": 1, "S": 7}, {"B": 1, "S": 33}, {"B": 2, "S": 7}]
    run = _points_run(two, [1, 2])
    labels = [analysis.moved(run, t) for t in analysis.transitions(run)]
    assert labels == ["S 7 → 33", "B 1 → 2, S 33 → 7"]
    line = analysis.verdict("prefill", [run, model.replace(_points_run(two, []),
                                                          strategy="fixed")])
    assert line.startswith("prefill (B 1, S 7) → (B 1, S 33) → (B 2, S 7): fixed wins")
    assert "recompile: default (first at call 1, S 7 → 33)." in line
    # batch-only, old or new, reads as it always did
    batch = _points_run([{"B": 1}, {"B": 2}], [1])
    assert analysis.moved(batch, analysis.transitions(batch)[0]) == "B 1 → 2"
    assert analysis.verdict("rl", [batch]).startswith("rl [1, 2]: ")
    assert "(first at call 1, B 1 → 2)" in analysis.verdict("rl", [batch])
    old = sample_report().runs[0]
    assert analysis.moved(old, analysis.transitions(old)[0]) == "B 1 → 2"
    assert analysis.at_call(old, 1) == "B 2"
    assert analysis.sequence_label(analysis.run_points(old)) == "B = 1 → 2"


def test_a_driver_recompile_inside_a_point_names_its_step():
    run = _points_run([{"B": 1, "S": 7}, {"B": 2, "S": 7}], [1, 3, 4], steps=3)
    labels = [analysis.moved(run, t) for t in analysis.transitions(run)]
    assert labels == ["step 1 at B 1, S 7", "B 1 → 2", "step 1 at B 2, S 7"]
    assert analysis.at_call(run, 5) == "B 2, S 7, step 2"
    assert "(first at call 1, step 1 at B 1, S 7)" in analysis.verdict("gen", [run])


def test_points_come_from_a_run_that_recorded_them():
    run = _points_run([{"B": 1, "S": 7}, {"B": 1, "S": 33}], [1])
    lost = model.figureless_run("t", "rl", (1, 1), "lost", "eager", "error",
                                model.RunError("WorkerCrashed", "x", None))
    assert analysis.points_of([lost, run]) == analysis.run_points(run)
    assert analysis.verdict("rl", [lost, run]).startswith("rl (B 1, S 7) → (B 1, S 33): ")
