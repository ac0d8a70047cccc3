"""The rank comparison's rules on records: functions of per-rank summaries made by hand (their
figures against real ranks: tests/commands/test_watch_ranks.py), and per-rank runs of strategies
(which figures must agree, which strategy wins, what a rank that failed or could not run a
strategy makes of the comparison, that ranks_agree is judged once per strategy; real 2-rank
runs: tests/execution/test_ranks.py)."""

from __future__ import annotations

import json
from dataclasses import replace

from helpers import sample_report, sample_run
from recompile_probe.analysis.budgets import evaluate
from recompile_probe.analysis.functions import by_function
from recompile_probe.analysis.ranks import compare, divergences, rank_of, verdict
from recompile_probe.records.ranks import CallDivergence
from recompile_probe.records.report import from_json, to_json
from recompile_probe.records.run import Call, CompileEvent, RunError
from recompile_probe.scenario.budgets import Budget


def _event(cid: str, name: str = "step", recompile: bool = False, **kw) -> CompileEvent:
    fields = dict(
        compile_id=cid,
        function=name,
        call_index=None,
        reason=None,
        guard_count=1,
        shape_env_guard_count=0,
        graph_op_count=1,
        compile_time_ms=1.0,
        failed=False,
        filename="/x/train.py",
        line=10 if name == "step" else 20,
        recompile=recompile,
        graphs=1,
    )
    fields.update(kw)
    return CompileEvent(**fields)


def _recompile(cid: str, entry: str, name: str = "step", **kw) -> CompileEvent:
    reason = f"{entry}: tensor 'x' size mismatch at index 0. expected 4, actual 3"
    return _event(cid, name, True, reason=reason, reason_kind="static_size_change", **kw)


def _compare(per_rank: dict[int, list[CompileEvent]]):
    return divergences({r: by_function(e) for r, e in per_rank.items()}, per_rank)


def test_rank_of_roles():
    assert rank_of("rank 3") == 3
    assert rank_of("DataLoader worker 0") is None and rank_of(None) is None


def test_one_rank_compares_nothing():
    assert divergences({0: by_function([_event("0/0")])}) == ()


def test_same_reason_under_other_frame_ids_agrees():
    # the ranks numbered their frames differently: the guard is the same
    a = [_event("0/0"), _recompile("0/1", "0/0")]
    b = [_event("1/0"), _recompile("1/1", "1/0")]
    assert _compare({0: a, 1: b}) == ()


def test_the_odd_rank_out_of_three_and_the_call_from_the_events():
    same = [_event("0/0", call_index=0)]
    odd = [_event("0/0", call_index=0), _recompile("0/1", "0/0", call_index=2)]
    (d,) = _compare({0: same, 1: odd, 2: list(same)})
    assert d.first is not None
    assert (d.first.rank, d.first.others, d.first.compile_index) == (1, (0, 2), 2)
    assert d.first.call_index == 3  # 1-based
    assert d.risk.startswith("rank 1 recompiled `step` at call 3 while ranks 0, 2 did not")
    assert d.by_rank["1"].recompiles == 1 and d.by_rank["2"].recompiles == 0


def test_a_function_only_one_rank_compiled_and_one_they_agree_on():
    a = [_event("0/0"), _event("1/0", "other")]
    b = [_event("0/0")]
    (d,) = _compare({0: a, 1: b})
    assert d.function == "other" and d.by_rank["1"].compiles == 0
    assert d.first is not None and d.first.event == "compile"
    assert "rank 0 compiled `other`" in d.risk


def test_without_events_the_parting_is_unknown():
    a, b = [_event("0/0")], [_event("0/0"), _recompile("0/1", "0/0")]
    (d,) = divergences({0: by_function(a), 1: by_function(b)})
    assert d.first is None and "differently" in d.risk


# --- per-rank runs of strategies ------------------------------------------------------------


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
    assert default.first_divergence == CallDivergence(
        call=2, events={"0": "hit", "1": "recompile"}, sizes={"0": {"B": 8}, "1": {"B": 8}}
    )
    # in a report's JSON it is the documented object, and it reads back as the record
    report = replace(sample_report(), rank_runs=ranks)
    data = json.loads(to_json(report))["rank_runs"]["comparisons"]
    assert data[0]["first_divergence"] == {
        "call": 2,
        "events": {"0": "hit", "1": "recompile"},
        "sizes": {"0": {"B": 8}, "1": {"B": 8}},
    }
    assert from_json(to_json(report)).rank_runs == ranks
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
