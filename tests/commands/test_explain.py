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


INLINED = """
import torch


def helper(y, n):
    return y * n


def outer(y, n):
    return helper(y, n)


def run(fn, B):
    fn(torch.ones(3), B)
"""
INLINED_SCENARIO = """
name: inlined
target: inlined.py:outer
driver: inlined.py:run
dims:
  B: {}
sequences:
  s: [{B: 3}, {B: 4}]
strategies: [default]
repeats: 0
"""


def test_explain_names_the_caller_of_an_inlined_helpers_guard(tmp_path):
    # the int guard `n == 3` is made in helper; Dynamo's user stack (torch 2.13) also names the
    # line of outer that called it: explain keeps it in the origin and prints it
    (tmp_path / "inlined.py").write_text(INLINED)
    path = tmp_path / "inlined.yaml"
    path.write_text(INLINED_SCENARIO)
    result = CliRunner().invoke(app, ["explain", str(path), "-q", "-f", "json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    (x,) = data["explanations"]
    # the program's own count: outer compiled for n = 3, then again for n = 4
    scope: dict = {}
    exec((tmp_path / "inlined.py").read_text(), scope)  # noqa: S102 - the target, as written
    counter = CompileCounter()
    torch._dynamo.reset()
    compiled = torch.compile(scope["outer"], backend=counter)
    for n in (3, 4):
        scope["run"](compiled, n)
    torch._dynamo.reset()
    assert x["compiles"] == counter.frame_count == 2
    (recompile,) = x["recompile_reasons"]
    origin = recompile["reason_origins"][0]
    said = INLINED.splitlines()
    if "stack" not in origin:  # a torch that writes no user stack under int guards
        assert origin["function"] == "helper"
        return
    assert [(f["function"], f["code"]) for f in origin["stack"]] == [
        ("outer", "return helper(y, n)"),
        ("helper", "return y * n"),
    ]
    assert [said[f["line"] - 1].strip() for f in origin["stack"]] == [
        "return helper(y, n)",
        "return y * n",
    ]
    # and the text of the same report says so
    saved = tmp_path / "report.json"
    saved.write_text(json.dumps(data["report"]))
    text = CliRunner().invoke(app, ["explain", "--from-report", str(saved)])
    assert text.exit_code == 0, text.output
    line = said.index("    return helper(y, n)") + 1
    words = " ".join(text.stdout.split())  # wrapped at the terminal's width
    assert f"called from inlined.py:{line} in outer `return helper(y, n)`" in words


ALONE = """
name: alone
target: logprobs.count_greater_than
sequences: {rl: [1, 2, 8]}
strategies: [default]
repeats: 0
"""


def test_a_strategy_the_report_did_not_run_is_advised_as_not_measured(tmp_path):
    path = tmp_path / "alone.yaml"
    path.write_text(ALONE)
    result = CliRunner().invoke(app, ["explain", str(path), "-q", "-f", "json"])
    assert result.exit_code == 0, result.output
    (x,) = json.loads(result.stdout)["explanations"]
    (recompile,) = x["recompile_reasons"]
    # the seed's 1 -> 2 recompile, and no other strategy ran
    assert recompile["reason_kind"] == "zero_one_specialization" and recompile["fixes"] == []
    why = recompile["no_fix_why"]
    assert "Not measured in this report: try mark_unbacked or unbacked_sources." in why
    assert "Measured in this report" not in why
