"""The environment a report records: the compile-relevant variables, and its JSON round trip
(old reports without the compile settings still read)."""

from __future__ import annotations

import json

from helpers import sample_report
from recompile_probe.records.environment import CLEAN_ENV, cleaned, compile_variables, current
from recompile_probe.records.report import Environment, from_json, to_json


def test_compile_variables_are_the_compile_relevant_ones():
    environ = {
        "TORCH_COMPILE_STATIC_SOURCES": ".*:0",
        "TORCHDYNAMO_VERBOSE": "1",
        "TORCH_DYNAMO_AUTOMATIC_DYNAMIC_SHAPES": "0",
        "TORCH_LOGS": "recompiles",
        "TORCH_LOGS_OUT": "x",  # not TORCH_LOGS itself
        "TORCHINDUCTOR_CACHE_DIR": "/tmp/c",
        "PATH": "/bin",
        CLEAN_ENV: "1",  # the tool's own
    }
    assert compile_variables(environ) == {
        "TORCHDYNAMO_VERBOSE": "1",
        "TORCH_COMPILE_STATIC_SOURCES": ".*:0",
        "TORCH_DYNAMO_AUTOMATIC_DYNAMIC_SHAPES": "0",
        "TORCH_LOGS": "recompiles",
    }


def test_current_records_variables_and_config(monkeypatch):
    monkeypatch.setenv("TORCH_COMPILE_DYNAMIC_SOURCES", "L['x']:0")
    env = current(config={"torch._dynamo.config.recompile_limit": "3"})
    assert env.compile_settings["TORCH_COMPILE_DYNAMIC_SOURCES"] == "L['x']:0"
    assert env.compile_settings["torch._dynamo.config.recompile_limit"] == "3"
    assert env.cleared_settings == {}
    gone = cleaned(env, {"TORCH_LOGS": "+dynamo"})
    assert gone.compile_settings == {}
    assert set(gone.cleared_settings) == {
        "TORCH_LOGS",
        "TORCH_COMPILE_DYNAMIC_SOURCES",
        "torch._dynamo.config.recompile_limit",
    }


def test_round_trip_and_old_reports():
    report = sample_report()
    env = Environment("2.15.0", "3.11", "Linux", {"TORCH_COMPILE_STATIC_SOURCES": ".*:0"})
    with_settings = type(report)(report.tool, env, report.scenario, report.runs)
    assert from_json(to_json(with_settings)) == with_settings
    data = json.loads(to_json(report))
    data["environment"] = {"torch": "2.13.0", "python": "3.11", "platform": "Linux"}
    old = from_json(json.dumps(data))
    assert old.environment.compile_settings == {} and old.environment.cleared_settings == {}
