"""watch --fail-on-rank-divergence: which exit code wins. The processes' streams are written by
hand here (the figures of real ranks are checked in tests/commands/test_watch_ranks.py)."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from recompile_probe.cli import app
from recompile_probe.commands import watch as watch_mod
from recompile_probe.records import encode
from recompile_probe.records.run import CompileEvent


def _event(cid: str, recompile: bool = False) -> dict:
    event = CompileEvent(
        compile_id=cid,
        function="step",
        call_index=None,
        reason="0/0: tensor 'x' size mismatch" if recompile else None,
        guard_count=1,
        shape_env_guard_count=0,
        graph_op_count=1,
        compile_time_ms=1.0,
        failed=False,
        filename="/x/train.py",
        line=10,
        recompile=recompile,
        graphs=1,
    )
    return {"event": encode.data(event)}


def _streams(diverge: bool) -> dict[int, list[dict]]:
    def rank(r: int, events: list[dict]) -> list[dict]:
        head = {"process": {"pid": 10 + r, "ppid": 1, "argv": ["train.py"], "role": f"rank {r}"}}
        final = {"final": {"frames": [], "role": f"rank {r}", "recorder": True}}
        return [head, *events, final]

    second = [_event("0/0"), _event("0/1", True)] if diverge else [_event("0/0")]
    return {10: rank(0, [_event("0/0")]), 11: rank(1, second)}


@pytest.mark.parametrize(
    ("code", "diverge", "flag", "expected"),
    [
        (0, True, True, 1),  # the gate fails a program that succeeded
        (3, True, True, 3),  # the program's own failure wins
        (0, False, True, 0),  # the ranks agree
        (0, True, False, 0),  # no gate asked for: the report only
    ],
)
def test_exit_codes(monkeypatch, code, diverge, flag, expected):
    outcome = watch_mod.Outcome(code, False, 1, _streams(diverge))
    monkeypatch.setattr(watch_mod, "run", lambda command, trace_dir=None: outcome)
    args = ["watch", *(["--fail-on-rank-divergence"] if flag else []), "--", "torchrun", "t.py"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == expected, result.output
    if diverge:  # the section is in the report, gate or not
        assert "Ranks that compiled differently" in result.output
    if diverge and flag:
        assert "rank 1 recompiled `step` at its compile 2 while rank 0 did not" in result.output


def test_one_rank_says_nothing_was_compared(monkeypatch):
    streams = {10: _streams(False)[10]}
    outcome = watch_mod.Outcome(0, False, 1, streams)
    monkeypatch.setattr(watch_mod, "run", lambda command, trace_dir=None: outcome)
    result = CliRunner().invoke(app, ["watch", "--fail-on-rank-divergence", "--", "x.py"])
    assert result.exit_code == 0
    assert "fewer than two ranks were seen" in result.output
