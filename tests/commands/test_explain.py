"""`explain` end to end: the measured fix it prints works when applied to the user's program."""

from __future__ import annotations

import json

import torch
from torch._dynamo.testing import CompileCounter
from typer.testing import CliRunner

from recompile_probe.cli import app
from recompile_probe.targets.logprobs import count_greater_than

# What `suggest --write` writes for the seed op: a custom strategy given as marks.
SUGGESTED = """
name: suggested
target: logprobs.count_greater_than
sequences: {rl: [1, 2, 8]}
strategies: [default, suggested]
custom_strategies:
  suggested:
    marks:
      - {argument: 0, dim: 0, kind: unbacked}
      - {argument: 1, dim: 0, kind: unbacked}
repeats: 0
"""


def _applied(change: list[str], sizes: list[int]) -> int:
    """The printed change run as the user would: its lines right before each call of a freshly
    compiled target; the compiles a CompileCounter saw."""
    torch._dynamo.reset()
    counter = CompileCounter()
    compiled = torch.compile(count_greater_than, backend=counter)
    code = "\n".join(line for line in change if not line.lstrip().startswith("#"))
    for b in sizes:
        scope = {"torch": torch, "x": torch.randn(b, 64), "values": torch.randn(b, 1)}
        exec(code, scope)  # noqa: S102 - the advice, executed as printed
        out = compiled(scope["x"], scope["values"])
        torch.testing.assert_close(out, count_greater_than(scope["x"], scope["values"]))
    torch._dynamo.reset()
    return counter.frame_count


def test_explain_prints_the_marks_of_a_marks_strategy_and_they_work(tmp_path):
    path = tmp_path / "suggested.yaml"
    path.write_text(SUGGESTED)
    result = CliRunner().invoke(
        app, ["explain", str(path), "--strategy", "default", "-q", "-f", "json"]
    )
    assert result.exit_code == 0, result.output
    (x,) = json.loads(result.stdout)["explanations"]
    (recompile,) = x["recompile_reasons"]
    (fix,) = [f for f in recompile["fixes"] if f["strategy"] == "suggested"]
    marks = [line for line in fix["change"] if not line.startswith("#")]
    assert marks == [
        "torch._dynamo.decorators.mark_unbacked(x, 0)",
        "torch._dynamo.decorators.mark_unbacked(values, 0)",
    ]
    assert not any("the defaults" in line for line in fix["change"])
    # applied to the program, the change does what the run measured
    assert _applied(fix["change"], list(x["sequence"])) == fix["compiles"] == 1
    assert _applied([], list(x["sequence"])) == x["compiles"] == 2  # and without it, as default
