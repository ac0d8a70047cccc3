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
