"""What a TORCH_TRACE log says about user lines, where its records are partial: a graph-break
record holding only a traceback, a specialization without sources, a frame without its line.
Each is still a record the watch schema accepts, with n/a (null) where the log says nothing."""

import json

import jsonschema

from recompile_probe.provenance.trace import TraceEvidence
from recompile_probe.records import encode
from recompile_probe.records.decode import build
from recompile_probe.records.origin import GraphBreakSite, Specialization
from recompile_probe.schema.catalog import shipped_path


def _accepts(name: str, value) -> None:
    schema = json.loads(shipped_path("watch").read_text())
    jsonschema.validate(
        json.loads(json.dumps(encode.data(value))),
        {"$schema": schema["$schema"], "$defs": schema["$defs"], "$ref": f"#/$defs/{name}"},
    )


def test_a_graph_break_record_with_only_a_traceback():
    found = build(
        GraphBreakSite, TraceEvidence().graph_break("Traceback (most recent call last):"), "b"
    )
    assert (found.reason, found.origin, found.count) == (None, None, 1)
    _accepts("GraphBreakSite", found)


def test_a_specialization_without_sources_and_a_frame_without_its_line():
    where = TraceEvidence()
    where.files[0] = "/src/model.py"
    record = {"value": 3, "user_stack": [{"filename": 0, "name": "forward", "loc": "x"}]}
    found = build(Specialization, where.specialization("0/0", record), "s")
    # no line in the frame: no origin (never "model.py:None")
    assert (found.source, found.value, found.origin) == (None, 3, None)
    _accepts("Specialization", found)
    record["user_stack"][0]["line"] = 12
    found = build(Specialization, where.specialization("0/0", record), "s")
    assert found.origin is not None and (found.origin.file, found.origin.line) == (
        "/src/model.py",
        12,
    )
