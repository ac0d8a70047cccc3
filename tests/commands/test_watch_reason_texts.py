"""`watch` on a program whose recompile texts are easy to misread (tests/programs/
reason_texts.py): aliasing, an inlined helper's int guard with Dynamo's user stack, a new
backend callable per torch.compile call, and torch's own assertion. One watch run (JSON, and a
TORCH_TRACE read back by `summarize` for the text), checked against the program's own counts."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from helpers import PROGRAMS

CLI = [sys.executable, "-m", "recompile_probe"]
PROGRAM = PROGRAMS / "reason_texts.py"


@pytest.fixture(scope="module")
def watched(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("reason_texts")
    out, traces = tmp / "w.json", tmp / "traces"
    result = subprocess.run(
        [
            *CLI,
            "watch",
            "-f",
            "json",
            "-o",
            str(out),
            "--trace-dir",
            str(traces),
            "--",
            sys.executable,
            str(PROGRAM),
        ],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr
    line = next(ln for ln in result.stdout.splitlines() if ln.startswith("COUNTS "))
    summary = subprocess.run([*CLI, "summarize", str(traces)], capture_output=True, text=True)
    assert summary.returncode == 0, summary.stderr
    functions = {f["function"]: f for f in json.loads(out.read_text())["functions"]}
    return json.loads(line[len("COUNTS ") :]), functions, summary.stdout + summary.stderr


@pytest.mark.slow
def test_the_counts_are_dynamos(watched):
    counts, functions, _ = watched
    # "total" (torch's own assertion) compiles only where mark_unbacked takes a shape_id
    assert {"add", "outer", "step"} <= set(counts["dynamo"])
    for name in counts["dynamo"]:
        f, own = functions[name], counts["dynamo"][name]
        assert (f["compiles"], f["recompiles"], f["failed"]) == (
            own["compiles"],
            own["recompiles"],
            own["failed"],
        ), name
    for name in ("add", "outer", "step"):
        assert functions[name]["graphs"] == counts[name]  # the program's CompileCounters


@pytest.mark.slow
def test_aliasing_is_its_own_kind(watched):
    _, functions, _ = watched
    reasons = functions["add"]["reasons"]
    assert [r["kind"] for r in reasons] == ["tensor_aliasing", "tensor_aliasing"]
    assert [r["text"] for r in reasons] == ["a is b", 'Duplicate tensors found: ["a", "b"]']


@pytest.mark.slow
def test_the_user_stack_names_the_callers_line(watched):
    counts, functions, text = watched
    if not counts["outer_user_stack"]:
        pytest.skip("this torch writes no user stack under an int guard")
    (reason,) = functions["outer"]["reasons"]
    said = PROGRAM.read_text().splitlines()
    stack = reason["origin"]["stack"]
    assert [(f["function"], f["code"]) for f in stack] == [
        ("outer", "return helper(y, n)"),
        ("helper", "return y * n"),
    ]
    assert [said[f["line"] - 1].strip() for f in stack] == [f["code"] for f in stack]
    assert "called from reason_texts.py:" in text and "`return helper(y, n)`" in text


@pytest.mark.slow
def test_new_backends_are_one_reason_seen_each_time(watched):
    counts, functions, text = watched
    if not any("BACKEND_MATCH" in r for r in counts["step_reasons"]):
        pytest.skip(f"this torch names no guard for a backend change: {counts['step_reasons']}")
    (reason,) = functions["step"]["reasons"]
    # masked where Dynamo's texts carry the backends' ids (2.13 on; 2.11 writes none)
    has_ids = any("id=0x" in r for r in counts["step_reasons"])
    assert reason["kind"] == "backend_change" and reason["masked"] is has_ids
    assert reason["count"] == counts["dynamo"]["step"]["recompiles"] == 3
    assert "0x" not in reason["text"]
    assert "3× [backend_change] BACKEND_MATCH" in text


@pytest.mark.slow
def test_torchs_own_assertion_is_named_as_such(watched):
    counts, functions, text = watched
    if counts["internal_error"].startswith("n/a"):
        pytest.skip(counts["internal_error"])
    (error,) = functions["total"]["internal_errors"]
    assert error["kind"] == "torch_internal_error" and error["count"] == 1
    assert counts["internal_error"] and counts["internal_error"] in error["text"]
    assert "torch raised an internal assertion; this is not your code" in " ".join(text.split())
