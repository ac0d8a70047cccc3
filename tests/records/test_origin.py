"""The records that carry a user line, on a real run: typed all the way, written as the JSON
contract says (an origin leaves out an empty stack, a shared-code field is written only when set),
read back equal."""

import dataclasses
import json
from pathlib import Path

from typer.testing import CliRunner

from recompile_probe.cli import app
from recompile_probe.records import encode
from recompile_probe.records.decode import build
from recompile_probe.records.origin import GraphBreakSite, Origin, RunSpecialization, StackFrame
from recompile_probe.records.reason_detail import ReasonDetail
from recompile_probe.records.report import from_json, to_json

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _walk(value, path="run"):
    """Every (path, value) below a record."""
    yield path, value
    if dataclasses.is_dataclass(value):
        for f in dataclasses.fields(value):
            yield from _walk(getattr(value, f.name), f"{path}.{f.name}")
    elif isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            yield from _walk(v, f"{path}[{i}]")


def test_a_real_runs_user_lines_are_records_and_its_json_reads_back_byte_equal(tmp_path):
    out = tmp_path / "report.json"
    result = CliRunner().invoke(
        app,
        [
            "run",
            str(EXAMPLES / "which_line.yaml"),
            "-s",
            "default",
            "-q",
            "-f",
            "json",
            "-o",
            str(out),
        ],
    )
    assert result.exit_code in (0, 1), result.output
    text = out.read_text()
    report = from_json(text)
    # read back and written again: the same bytes
    assert to_json(report).strip() == text.strip()
    (run,) = report.runs
    found = list(_walk(run))
    # no plain dict where a user line, a failing guard, a specialization or a graph break lives
    named = (
        "origin",
        "origins",
        "reason_origins",
        "reason_detail",
        "specializations",
        "graph_breaks",
    )
    for path, value in found:
        if path.rsplit(".", 1)[-1].split("[")[0] in named:
            assert not isinstance(value, dict), path
    origins = [v for _, v in found if isinstance(v, Origin)]
    assert origins and run.specializations
    assert all(isinstance(v, RunSpecialization) for v in run.specializations)
    assert run.graph_breaks and all(isinstance(b, GraphBreakSite) for b in run.graph_breaks)
    # the graph break and the loop the example names, at the lines its source holds
    source = (EXAMPLES / "which_line.py").read_text().splitlines()
    for origin in origins:
        if Path(origin.file).name == "which_line.py" and origin.code:
            assert source[origin.line - 1].strip() == origin.code
    data = json.loads(text)["runs"][0]
    written = [g["origin"] for e in data["entries"] for g in e["guards"] if g["origin"]]
    # an origin without a user stack is written without the key, never as "stack": []
    assert written and not any(o.get("stack") == [] for o in written)


def test_empty_and_unset_fields_are_left_out_and_come_back():
    frame = StackFrame("/p/f.py", 16, "outer", "return helper(y, n)")
    bare = Origin("/p/f.py", 14, "helper", "return y * n", "created")
    stacked = dataclasses.replace(bare, stack=(frame,))
    assert list(encode.data(bare)) == ["file", "line", "function", "code", "role", "file_exact"]
    assert json.loads(json.dumps(encode.data(stacked)))["stack"] == [
        {"file": "/p/f.py", "line": 16, "function": "outer", "code": "return helper(y, n)"}
    ]
    for origin in (bare, stacked):
        assert build(Origin, json.loads(json.dumps(encode.data(origin))), "origin") == origin
    detail = ReasonDetail("size_change", "size", "L['x']", 0, "1", "2", "0/0", "text")
    assert "function" not in encode.data(detail) and "isolate_recompiles" not in encode.data(detail)
    shared = dataclasses.replace(detail, function="f", compiled_for=(), isolate_recompiles=False)
    # set, even where empty or false: written, and read back
    written = json.loads(json.dumps(encode.data(shared)))
    assert (written["compiled_for"], written["isolate_recompiles"]) == ([], False)
    assert build(ReasonDetail, written, "detail") == shared
