"""Provenance through a whole run: the user line behind each guard, recompile reason,
specialization and graph break, asserted as the exact file and line (found by its text in
tests/fixtures/provenance_targets.py, without the tool) in the report and explain JSON, on real
torch.compile runs; and each kind only a line can tell (user_specialization) from a real
recompile, with its measured fix."""

from __future__ import annotations

import json

import pytest
import torch
from typer.testing import CliRunner

from helpers import FIXTURES
from recompile_probe.cli import app
from recompile_probe.execution.session import run_scenario
from recompile_probe.records.report import from_json, to_dict, to_json
from recompile_probe.scenario.load import loads

FIXTURE = FIXTURES / "provenance_targets.py"
_LINES = FIXTURE.read_text().splitlines()


def line_of(text: str) -> int:
    """The fixture's line holding text (exactly one), found by reading the file."""
    hits = [i + 1 for i, line in enumerate(_LINES) if text in line]
    assert len(hits) == 1, (text, hits)
    return hits[0]


def at(origin: dict | None, text: str, role: str) -> None:
    assert origin is not None, text
    assert (origin["file"], origin["line"], origin["role"]) == (str(FIXTURE), line_of(text), role)
    assert origin["code"] == text and origin["file_exact"] is True


def report(body: str) -> dict:
    scenario = loads(f"target: {FIXTURE}:{body}")
    data = to_dict(run_scenario(scenario))
    # the JSON contract: what the report writes reads back unchanged
    assert to_dict(from_json(json.dumps(data))) == data
    return data


def run_of(data: dict, strategy: str) -> dict:
    return next(r for r in data["runs"] if r["strategy"] == strategy)


def event(run: dict, compile_id: str) -> dict:
    return next(e for e in run["compile_events"] if e["compile_id"] == compile_id)


def guard(run: dict, compile_id: str, text: str) -> dict:
    entry = next(e for e in run["entries"] if e["compile_id"] == compile_id)
    return next(g for g in entry["guards"] if g["text"] == text)


@pytest.fixture(scope="module")
def branch():
    return report(
        "branch\ninputs: [{shape: [B, 3]}]\nsequences: {s: [8, 9, 3]}\n"
        "strategies: [dynamic_true, default]\n"
    )


def test_shape_branch_guard_and_reason_name_the_branch(branch):
    run = run_of(branch, "dynamic_true")
    assert run["recompiles"] == 1
    at(guard(run, "0/0", "5 <= L['x'].size()[0]")["origin"], "if x.shape[0] > 4:", "created")
    # the range after the branch flipped: created by the same line, folded into one guard
    at(guard(run, "0/1", "2 <= L['x'].size()[0] <= 4")["origin"], "if x.shape[0] > 4:", "created")
    recompile = event(run, "0/1")
    assert recompile["reason_kind"] == "shape_env_guard"
    (origin,) = recompile["reason_origins"]
    at(origin, "if x.shape[0] > 4:", "created")
    # TENSOR_MATCH: where the tensor was first used
    tensor = next(g for g in run["entries"][0]["guards"] if g["kind"] == "TENSOR_MATCH")
    at(tensor["origin"], "y = x * 2", "first_use")


def test_one_recompile_with_several_failing_entries_keeps_every_line(branch):
    run = run_of(branch, "default")
    recompile = event(run, "0/2")
    assert recompile["reason"].count("\n") == 1  # two entries rejected the call: one recompile
    assert run["recompiles"] == 2 == sum(e["recompile"] for e in run["compile_events"])
    shape, static = recompile["reason_origins"]
    at(shape, "if x.shape[0] > 4:", "created")
    at(static, "y = x * 2", "first_use")  # the static entry 0/0: no line created its guard


def test_explain_json_and_text_carry_the_lines(tmp_path):
    path = tmp_path / "branch.yaml"
    path.write_text(
        f"target: {FIXTURE}:branch\ninputs: [{{shape: [B, 3]}}]\n"
        "sequences: {s: [8, 9, 3]}\nstrategies: [default]\n"
    )
    result = CliRunner().invoke(
        app, ["explain", str(path), "--strategy", "default", "--quiet", "--format", "json"]
    )
    assert result.exit_code == 0, result.output
    (x,) = json.loads(result.stdout)["explanations"]
    entry = next(e for e in x["entries"] if e["compile_id"] == "0/1")
    (shape,) = [g for g in entry["guards"] if g["kind"] == "SHAPE_ENV"]
    at(shape["origin"], "if x.shape[0] > 4:", "created")
    first, second = x["recompile_reasons"]
    at(first["reason_origins"][0], "y = x * 2", "first_use")
    at(second["reason_origins"][0], "if x.shape[0] > 4:", "created")
    text = (
        CliRunner()
        .invoke(app, ["explain", str(path), "--strategy", "default", "--quiet"], terminal_width=100)
        .stdout
    )
    branch_line = line_of("if x.shape[0] > 4:")
    assert (
        f"    at provenance_targets.py:{branch_line}  `if x.shape[0] > 4:`  "
        "(created this guard)" in text.splitlines()
    )
    assert (
        f"    at provenance_targets.py:{line_of('y = x * 2')}  `y = x * 2`  (first use; "
        "static by design)" in text.splitlines()
    )
    assert (
        f"      at provenance_targets.py:{branch_line}  `if x.shape[0] > 4:`  (created this "
        "guard)" in text.splitlines()
    )  # under the guard diff's + SHAPE_ENV line
    assert max(map(len, text.splitlines())) <= 100
    table = CliRunner().invoke(app, ["run", str(path), "--quiet"], terminal_width=120).stdout
    assert f"at provenance_targets.py:{branch_line}  `if x.shape[0] > 4:`  (created)" in table
    assert max(map(len, table.splitlines())) <= 120


def test_int_forced_to_a_constant_by_range_is_a_user_specialization():
    data = report(
        "loop\nfactory: "
        f"{FIXTURE}:make_loop\nbatch_dims: {{}}\n"
        "sequences: {s: [3, 4]}\nstrategies: [dynamic_true, default]\n"
    )
    run = run_of(data, "dynamic_true")
    recompile = event(run, "0/1")
    assert recompile["reason_kind"] == "user_specialization"
    assert recompile["reason_detail"]["kind"] == "user_specialization"
    at(recompile["reason_origins"][0], "for _ in range(n):", "specialized")
    first = [s for s in run["specializations"] if s["compile_id"] == "0/0"]
    assert [(s["source"], s["value"]) for s in first] == [("L['n']", 3)]
    at(first[0]["origin"], "for _ in range(n):", "specialized")
    # default: the int was static by design (a constant guard), not the loop's doing
    static = event(run_of(data, "default"), "0/1")
    assert static["reason_kind"] == "python_scalar_change"
    at(static["reason_origins"][0], "for _ in range(n):", "first_use")


def test_dim_specialized_by_user_code_and_the_measured_marking():
    data = report(
        "size_loop\ninputs: [{shape: [B, 2]}]\nsequences: {s: [3, 4]}\n"
        "strategies: [dynamic_true, mark_dynamic]\n"
    )
    run = run_of(data, "dynamic_true")
    recompile = event(run, "0/1")
    assert recompile["reason_kind"] == "user_specialization"
    at(recompile["reason_origins"][0], "for i in range(x.size(0)):", "specialized")
    (spec,) = [s for s in run["specializations"] if s["compile_id"] == "0/0"]
    assert (spec["source"], spec["value"]) == ("L['x'].size()[0]", 3)
    marked = run_of(data, "mark_dynamic")
    assert marked["status"] == "error" and marked["error"]["type"] == "ConstraintViolationError"
    from recompile_probe.analysis.explain import explain
    from recompile_probe.records.report import from_dict
    from recompile_probe.strategies.builtins import BUILTINS

    rep = from_dict(data)
    xs, _ = explain(rep, BUILTINS, {}, chosen=["dynamic_true"])
    (r,) = xs[0].recompiles
    assert f"provenance_targets.py:{line_of('for i in range(x.size(0)):')}" in r.specialization
    assert "Marking alone cannot help" in r.specialization
    assert (
        f"mark_dynamic raised ConstraintViolationError: {marked['error']['message']}"
        in r.specialization
    )


def test_duck_sizing_from_a_real_recompile():
    data = report(
        "duck\nfactory: "
        f"{FIXTURE}:make_duck\nbatch_dims: {{0: [0]}}\n"
        "sequences: {s: [3, 4]}\nstrategies: [dynamic_true]\n"
    )
    run = run_of(data, "dynamic_true")
    recompile = event(run, "0/1")
    assert recompile["reason_kind"] == "duck_sizing"
    assert recompile["reason_detail"]["source"] == "L['v']"
    at(recompile["reason_origins"][0], "b = v.sum(1)", "first_use")
    at(
        guard(run, "0/0", "L['v'].size()[0] == L['x'].size()[0]")["origin"],
        "b = v.sum(1)",
        "first_use",
    )


def test_graph_break_two_calls_deep():
    data = report(
        "deep_break\ninputs: [{shape: [B]}]\nsequences: {s: [2, 3]}\nstrategies: [default]\n"
    )
    run = run_of(data, "default")
    (found,) = run["graph_breaks"]
    at(found["origin"], "torch._dynamo.graph_break()", "graph_break")
    assert found["reason"].startswith("Call to `torch._dynamo.graph_break()`")
    # independent count: Dynamo's own list after the same calls, read by hand
    import importlib.util

    spec = importlib.util.spec_from_file_location("provenance_targets_hand", FIXTURE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    torch._dynamo.reset()
    compiled = torch.compile(module.deep_break, backend="eager")
    for size in (2, 3):
        compiled(torch.randn(size))
    assert found["count"] == len(torch._dynamo.utils.graph_break_reasons) > 0
    torch._dynamo.reset()
    assert list(run["specializations"]) == []


def test_report_without_provenance_reads_back():
    # a report written before these fields: defaults, not errors
    data = report("branch\ninputs: [{shape: [B, 3]}]\nsequences: {s: [2]}\nstrategies: [default]\n")
    for run in data["runs"]:
        del run["specializations"], run["graph_breaks"]
        for e in run["compile_events"]:
            del e["reason_origins"]
        for entry in run["entries"]:
            for g in entry["guards"]:
                del g["origin"], g["origins"]
    back = from_json(json.dumps(data))
    assert back.runs[0].specializations == () and back.runs[0].entries[0].guards[0].origin is None
    assert "specializations" in to_json(back)


def test_the_users_own_backend_is_seen_too():
    # as_is runs the user's torch.compile(backend="eager"): no counting backend of ours
    data = report(
        "decorated\ninputs: [{shape: [B, 2]}]\nsequences: {s: [8, 3]}\nstrategies: [as_is]\n"
    )
    run = run_of(data, "as_is")
    assert run["recompiles"] == 1
    at(guard(run, "0/0", "7 <= L['x'].size()[0]")["origin"], "if x.shape[0] > 6:", "created")
    at(event(run, "0/1")["reason_origins"][0], "if x.shape[0] > 6:", "created")


def test_view_divisibility_guard_names_the_view():
    data = report(
        "view_rows\ninputs: [{shape: [B, 8]}]\nsequences: {s: [6, 7]}\nstrategies: [dynamic_true]\n"
    )
    run = run_of(data, "dynamic_true")
    shape = [g for g in run["entries"][0]["guards"] if g["kind"] == "SHAPE_ENV"]
    viewed = [g for g in shape if "%" in g["text"]]
    assert viewed, shape
    for g in viewed:
        at(g["origin"], "rows = x.view(-1, 4)", "created")


def test_explain_of_an_errored_mark_dynamic_names_the_error_and_the_line(tmp_path):
    # torch's own answer, without the tool: mark_dynamic on a dim the code compares to 3 raises
    import importlib.util

    spec = importlib.util.spec_from_file_location("provenance_targets_truth", FIXTURE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    torch._dynamo.reset()
    x = torch.randn(3, 2)
    torch._dynamo.mark_dynamic(x, 0)
    with pytest.raises(Exception) as raised:
        torch.compile(module.size_branch, backend="eager")(x)
    torch._dynamo.reset()
    truth = type(raised.value).__name__
    assert "L['x'].size()[0]" in str(raised.value)

    path = tmp_path / "size_branch.yaml"
    path.write_text(
        f"target: {FIXTURE}:size_branch\ninputs: [{{shape: [B, 2]}}]\n"
        "sequences: {s: [3, 4]}\nstrategies: [default, mark_dynamic]\nrepeats: 0\n"
    )
    result = CliRunner().invoke(app, ["explain", str(path), "--quiet", "--format", "json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    # covered by default: it errored, though it compiled only once
    (x,) = [e for e in data["explanations"] if e["strategy"] == "mark_dynamic"]
    error = x["error"]
    assert error["type"] == truth == "ConstraintViolationError"
    assert error["sources"] == ["L['x'].size()[0]"]
    first = error["specialized"][0]
    assert (first["source"], first["value"]) == ("L['x'].size()[0]", 3)
    at(first["origin"], "if x.shape[0] == 3:", "specialized")
    assert "mark_dynamic insists that L['x'].size()[0] stays dynamic" in error["why"]
    assert f"provenance_targets.py:{line_of('if x.shape[0] == 3:')}" in error["why"]
    text = CliRunner().invoke(app, ["explain", str(path), "-q", "-s", "mark_dynamic"]).stdout
    assert "mark_dynamic raised ConstraintViolationError at call 0" in text
    assert f"at provenance_targets.py:{line_of('if x.shape[0] == 3:')}" in text
    assert "Why it cannot help" in text
