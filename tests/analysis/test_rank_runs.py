"""The per-rank comparison of strategy runs, on records: which figures must agree, which
strategy wins, what a rank that failed or could not run a strategy makes of the comparison, and
that ranks_agree is judged once per strategy. Real 2-rank runs: tests/execution/test_ranks.py."""

from __future__ import annotations

from dataclasses import replace

from helpers import sample_run
from recompile_probe.analysis.budgets import evaluate
from recompile_probe.analysis.rank_runs import compare, verdict
from recompile_probe.records.run import Call, RunError
from recompile_probe.scenario.budgets import Budget


def on(rank, run, *events):
    calls = tuple(Call(i, 8, e, None, True, sizes={"B": 8}) for i, e in enumerate(events))
    return replace(run, rank=rank, calls=calls, failed_compiles=0)


RUNS = [
    on(0, sample_run("default", 1, 9, 1.0), "compile", "hit", "hit"),
    on(1, sample_run("default", 2, 9, 1.0), "compile", "hit", "recompile"),
    on(0, sample_run("dynamic_true", 1, 9, 1.0), "compile", "hit", "hit"),
    on(1, sample_run("dynamic_true", 1, 9, 1.0), "compile", "hit", "hit"),
    on(0, sample_run("guard_collectives", 2, 9, 1.0), "compile", "hit", "recompile"),
    on(1, sample_run("guard_collectives", 2, 9, 1.0), "compile", "hit", "recompile"),
]
ORDER = ("default", "guard_collectives", "dynamic_true")


def test_ranks_agree_when_every_figure_is_equal_and_the_fewest_compiles_win():
    ranks = compare(RUNS, 2, "gloo", ORDER)
    default = ranks.of("rl", "default")
    assert default.agree is False and default.differs == ("compiles", "recompiles")
    assert default.first_divergence == {
        "call": 2,
        "events": {"0": "hit", "1": "recompile"},
        "sizes": {"0": {"B": 8}, "1": {"B": 8}},
    }
    assert ranks.of("rl", "guard_collectives").agree is True
    # guard_collectives comes first in the scenario but compiles twice per rank
    assert ranks.best == {"rl": "dynamic_true"}
    line = verdict(ranks, "rl")
    assert line.startswith("rl on 2 ranks (gloo): dynamic_true makes every rank compile the same")
    assert "also agree: guard_collectives (2)" in line
    assert "ranks diverge under default" in line


def test_not_measured_failed_and_missing_ranks_never_agree():
    why = RunError("Unsupported", "enable_compiler_collectives fails here", None)
    unsupported = [
        replace(
            sample_run("compiler_collectives", 0, 0, None, status="unsupported"),
            rank=r,
            compiles=None,
            recompiles=None,
            graphs=None,
            error=why,
        )
        for r in (0, 1)
    ]
    lost = [on(0, sample_run("static", 1, 9, 1.0), "compile")]
    timeout = RunError("Timeout", "no rank finished a run for 6 s", None)
    half = [
        on(0, sample_run("mark_dynamic", 1, 9, 1.0), "compile"),
        replace(
            on(1, sample_run("mark_dynamic", 1, 9, 1.0), "compile"), status="error", error=timeout
        ),
    ]
    ranks = compare([*unsupported, *lost, *half], 2, "gloo")
    cc = ranks.of("rl", "compiler_collectives")
    assert cc.agree is None and cc.note == "not measured: enable_compiler_collectives fails here"
    assert ranks.of("rl", "static").agree is None
    assert "rank 1" in ranks.of("rl", "static").note
    mixed = ranks.of("rl", "mark_dynamic")
    assert mixed.agree is False and mixed.differs == ("status",)
    assert "Timeout" in mixed.note
    assert ranks.best == {"rl": None}
    assert "no strategy makes all 2 ranks compile the same" in verdict(ranks, "rl")


def test_ranks_agree_is_one_violation_on_the_lowest_rank():
    ranks = compare(RUNS, 2, "gloo", ORDER)
    budget = Budget("*", "*", "ranks_agree", True, "s.yaml:9")
    found = {(r.strategy, r.rank): evaluate(r, [budget], ranks) for r in RUNS}
    (violation,) = found[("default", 0)]
    assert (violation.actual, violation.limit, violation.source) == (False, True, "s.yaml:9")
    assert violation.reasons[0].startswith("rank 0: 1 compile; rank 1: 2 compiles (1 recompile)")
    assert found[("default", 1)] == ()
    assert all(v == () for (s, _), v in found.items() if s != "default")
