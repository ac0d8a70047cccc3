"""The typed reader (records/decode.py): a record comes back equal from its JSON form and from
``dataclasses.asdict`` itself (tuples, not lists), nested records included; mistakes are
ReportErrors naming the field."""

from __future__ import annotations

import dataclasses
import json

import pytest

from helpers import sample_function, sample_report
from recompile_probe.errors import ReportError
from recompile_probe.records.decode import build
from recompile_probe.records.report import Report, Tool
from recompile_probe.records.watch import FunctionSummary


@pytest.mark.parametrize("through_json", [True, False], ids=["json", "asdict"])
def test_a_report_and_a_function_come_back_equal(through_json):
    for record in (sample_report(), sample_function(5)):
        data = dataclasses.asdict(record)
        if through_json:
            data = json.loads(json.dumps(data))
        again = build(type(record), data, "r")
        assert again == record
        if isinstance(record, Report):
            assert all(type(r.calls) is tuple for r in again.runs)


def test_mistakes_name_the_field():
    with pytest.raises(ReportError, match="missing field 'version'"):
        build(Tool, {"name": "x"}, "tool")
    with pytest.raises(ReportError, match=r"f\.reasons\[0\]: expected an object"):
        data = dataclasses.asdict(sample_function(3))
        build(FunctionSummary, {**data, "reasons": ["text"]}, "f")
    assert build(Tool, {"name": "x", "version": "1", "newer": 1}, "tool") == Tool("x", "1")
