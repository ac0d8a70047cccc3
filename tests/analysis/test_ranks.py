"""The rank comparison's rules, on hand-made summaries (its figures against real ranks are in
tests/commands/test_watch_ranks.py)."""

from __future__ import annotations

from recompile_probe.analysis.functions import by_function
from recompile_probe.analysis.ranks import divergences, rank_of
from recompile_probe.records.run import CompileEvent


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
