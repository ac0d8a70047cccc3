"""The result model and its JSON contract."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from helpers import sample_report
from recompile_probe.errors import ReportError
from recompile_probe.records.report import (
    from_dict,
    from_json,
    to_json,
)
from recompile_probe.records.run import ArgumentDim, Call

CONTRACT_RUN_KEYS = {
    "target",
    "sequence_name",
    "sequence",
    "strategy",
    "backend",
    "status",
    "error",
    "graphs",
    "compiles",
    "recompiles",
    "cache_entries",
    "guard_count",
    "shape_env_guard_count",
    "leaf_guard_count",
    "compile_time_ms",
    "outputs_match",
    "calls",
    "compile_events",
}
CONTRACT_CALL_KEYS = {"index", "batch_size", "event", "latency_us", "outputs_match"}
CONTRACT_EVENT_KEYS = {
    "compile_id",
    "function",
    "call_index",
    "reason",
    "guard_count",
    "shape_env_guard_count",
    "graph_op_count",
    "compile_time_ms",
    "failed",
}


def test_json_round_trips():
    report = sample_report()
    assert from_json(to_json(report)) == report


def test_json_carries_the_contract_fields():
    data = json.loads(to_json(sample_report()))
    assert list(data)[0] == "schema_version" and data["schema_version"] == 1
    assert set(data["tool"]) == {"name", "version"}
    assert set(data["environment"]) == {
        "torch",
        "python",
        "platform",
        "compile_settings",
        "cleared_settings",
        "worker_start",
    }
    assert set(data["scenario"]) == {"name", "path", "sha256"}
    run = data["runs"][0]
    assert CONTRACT_RUN_KEYS <= set(run)
    assert CONTRACT_CALL_KEYS <= set(run["calls"][0])
    assert CONTRACT_EVENT_KEYS <= set(run["compile_events"][0])
    assert data["runs"][1]["error"] == {
        "type": "GuardOnDataDependentSymNode",
        "message": "Could not guard",
        "call_index": 0,
        "kind": None,  # torch_internal_error only where torch raised its own assertion
    }


def test_the_target_argument_names_and_the_scenario_digest_round_trip():
    report = sample_report()
    run = replace(
        report.runs[0],
        argument_dims=(ArgumentDim(source="L['x']", dim=0, symbol="B"),),
        param_names=("x", None),
    )
    report = replace(report, scenario=replace(report.scenario, sha256="ab" * 32), runs=(run,))
    assert from_json(to_json(report)) == report


def test_unknown_fields_from_newer_writers_are_ignored():
    data = json.loads(to_json(sample_report()))
    data["runs"][0]["something_new"] = 1
    data["runs"][0]["calls"][0]["also_new"] = True
    assert from_dict(data).runs[0].graphs == 2


@pytest.mark.parametrize(
    "text, fragment",
    [
        ("{not json", "not valid JSON"),
        ('{"schema_version": 99}', "unsupported schema_version"),
        (
            '{"schema_version": 1, "tool": {"name": "x", "version": "1"}, "environment": '
            '{"torch": null, "python": "3", "platform": "p"}, '
            '"scenario": {"name": "s", "path": null}, "runs": [{"target": "t"}]}',
            "missing field",
        ),
        ("[]", "not a recompile-probe report"),
    ],
)
def test_bad_reports_raise_report_errors(text, fragment):
    with pytest.raises(ReportError, match=fragment):
        from_json(text, "r.json")


def test_new_run_and_call_fields_round_trip():
    report = sample_report()
    run = replace(
        report.runs[0],
        failed_compiles=1,
        guard_compile_id="0/1",
        steady_state_us=20.0,
        steady_state_min_us=18.0,
        steady_state_p90_us=25.0,
        steady_state_noisy=False,
        marked_dims=2,
        notes=("a note",),
        calls=(Call(0, 1, "recompile", 9.0, True, 0, 1),),
    )
    report = replace(report, runs=(run,))
    data = json.loads(to_json(report))["runs"][0]
    assert (
        data["failed_compiles"],
        data["guard_compile_id"],
        data["marked_dims"],
        data["notes"],
    ) == (1, "0/1", 2, ["a note"])
    assert (
        data["steady_state_min_us"],
        data["steady_state_p90_us"],
        data["steady_state_noisy"],
    ) == (18.0, 25.0, False)
    assert (data["calls"][0]["graphs"], data["calls"][0]["failed_compiles"]) == (0, 1)
    assert from_json(to_json(report)) == report
    # a report written before these fields reads them as n/a
    old = json.loads(to_json(sample_report()))
    for key in ("failed_compiles", "guard_compile_id", "notes", "steady_state_noisy"):
        del old["runs"][0][key]
    read = from_dict(old).runs[0]
    assert (read.failed_compiles, read.guard_compile_id, read.notes, read.steady_state_noisy) == (
        None,
        None,
        (),
        None,
    )
