"""Inherited compile settings: recorded in the report, named in the note of each strategy they
override, and kept out of the runs by `--clean-env` (execution.session.clean_environment).

Counts are checked against a CompileCounter run of the same calls under the same setting.
"""

from __future__ import annotations

import ast
import contextlib
import dataclasses
import json
import os
import subprocess
import sys

import pytest
import torch
from torch._dynamo.testing import CompileCounter

from recompile_probe.execution.session import clean_environment, cleared, run_scenario
from recompile_probe.records.environment import CLEAN_ENV
from recompile_probe.scenario.load import load
from recompile_probe.scenario.overrides import with_overrides

BATCH = "L['x']:0,L['values']:0"
HAS_STATIC_SOURCES = hasattr(torch.compiler.config, "static_sources")


def _op(x, values):
    return (x >= values).sum(-1)


def _by_hand(sequence, *, dynamic=None, mark=None, config=None):
    torch._dynamo.reset()
    counter = CompileCounter()
    with contextlib.ExitStack() as stack:
        for attr, value in (config or {}).items():
            stack.enter_context(torch.compiler.config.patch(attr, value))
        compiled = torch.compile(_op, backend=counter, dynamic=dynamic)
        for b in sequence:
            x, values = torch.randn(b, 4096), torch.randn(b, 1)
            for t in (x, values) if mark else ():
                mark(t, 0)
            compiled(x, values)
    torch._dynamo.reset()
    return counter.frame_count


def _scenario(strategies):
    scenario = with_overrides(load(None), strategies=strategies, sequence=[1, 2, 8])
    return dataclasses.replace(scenario, repeats=0)


def test_an_inherited_config_is_recorded_and_clean_env_keeps_it_out(monkeypatch):
    """unbacked_sources set before the tool runs (as a sitecustomize or TORCH_COMPILE_UNBACKED_
    SOURCES would): the default strategy then compiles as unbacked; --clean-env runs it clean."""
    monkeypatch.delenv(CLEAN_ENV, raising=False)
    scenario = _scenario(["default"])
    with torch.compiler.config.patch(unbacked_sources=BATCH):
        inherited = run_scenario(scenario)
        with clean_environment() as kept_out:
            assert os.environ.get(CLEAN_ENV) == "1"
            clean = cleared(run_scenario(scenario), kept_out)
    assert CLEAN_ENV not in os.environ
    key = "torch.compiler.config.unbacked_sources"
    assert ast.literal_eval(inherited.environment.compile_settings[key]) == BATCH
    assert inherited.runs[0].graphs == _by_hand([1, 2, 8], config={"unbacked_sources": BATCH})
    assert clean.runs[0].graphs == _by_hand([1, 2, 8])
    if _by_hand([1, 2, 8]) != _by_hand([1, 2, 8], config={"unbacked_sources": BATCH}):
        # the setting did change the count (torch 2.9 ignores per-dim sources: it cannot)
        assert clean.runs[0].graphs != inherited.runs[0].graphs
    assert clean.environment.compile_settings == {}
    assert key in clean.environment.cleared_settings


@pytest.mark.skipif(not HAS_STATIC_SOURCES, reason="static_sources is new in torch 2.15")
def test_inherited_static_sources_is_named_in_each_note_it_overrides(monkeypatch):
    monkeypatch.setenv("TORCH_COMPILE_STATIC_SOURCES", ".*:0")
    monkeypatch.delenv(CLEAN_ENV, raising=False)
    names = [
        "default",
        "dynamic_true",
        "unbacked_sources",
        "maybe_mark_dynamic",
        "mark_dynamic",
        "mark_unbacked",
        "shapes_spec",
    ]
    with torch.compiler.config.patch(static_sources=".*:0"):
        runs = {r.strategy: r for r in run_scenario(_scenario(names)).runs}
        by_hand = {
            "default": _by_hand([1, 2, 8]),
            "dynamic_true": _by_hand([1, 2, 8], dynamic=True),
            "unbacked_sources": _by_hand([1, 2, 8], config={"unbacked_sources": BATCH}),
            "maybe_mark_dynamic": _by_hand([1, 2, 8], mark=torch._dynamo.maybe_mark_dynamic),
            "mark_dynamic": _by_hand([1, 2, 8], mark=torch._dynamo.mark_dynamic),
        }
    for name, graphs in by_hand.items():
        assert runs[name].status == "ok", runs[name].error  # not "unsupported"
        assert runs[name].graphs == graphs, name
    for name in ("default", "dynamic_true", "unbacked_sources", "maybe_mark_dynamic"):
        assert runs[name].graphs == 3
        assert any("TORCH_COMPILE_STATIC_SOURCES" in n for n in runs[name].notes), name
    # explicit marks and a shapes spec win over static_sources
    for name in ("mark_dynamic", "mark_unbacked", "shapes_spec"):
        assert runs[name].status == "ok", runs[name].error
        assert not any("overridden" in n for n in runs[name].notes), name
    assert runs["mark_unbacked"].graphs == runs["shapes_spec"].graphs == 1


@pytest.mark.slow
def test_clean_env_from_the_command_line(tmp_path):
    """The variable inherited from the shell, as users meet it, kept out of a fresh worker
    process's runs with --clean-env, and listed as kept out."""
    env = {**os.environ, "TORCH_COMPILE_UNBACKED_SOURCES": BATCH}
    env.pop(CLEAN_ENV, None)
    out = tmp_path / "r.json"
    args = ["run", "-s", "default", "--sequence", "1,2,8", "-q", "-f", "json", "-o", str(out)]
    code = "import sys; from recompile_probe.cli import main; sys.argv = sys.argv[1:]; main()"
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            code,
            "recompile-probe",
            *args,
            "--clean-env",
            "--isolate",
            "process",
        ],
        env=env,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(out.read_text())
    assert report["environment"]["compile_settings"] == {}
    assert report["environment"]["cleared_settings"]["TORCH_COMPILE_UNBACKED_SOURCES"] == BATCH
    assert report["runs"][0]["graphs"] == _by_hand([1, 2, 8])


@pytest.mark.slow
@pytest.mark.skipif(not HAS_STATIC_SOURCES, reason="static_sources is new in torch 2.15")
def test_static_sources_from_the_shell_is_in_the_report_and_the_notes(tmp_path):
    env = {**os.environ, "TORCH_COMPILE_STATIC_SOURCES": ".*:0"}
    env.pop(CLEAN_ENV, None)
    out = tmp_path / "r.json"
    args = ["run", "-s", "default,unbacked_sources,mark_unbacked", "--sequence", "1,2,8"]
    code = "import sys; from recompile_probe.cli import main; sys.argv = sys.argv[1:]; main()"
    done = subprocess.run(
        [sys.executable, "-c", code, "recompile-probe", *args, "-q", "-f", "json", "-o", str(out)],
        env=env,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(out.read_text())
    assert report["environment"]["compile_settings"]["TORCH_COMPILE_STATIC_SOURCES"] == ".*:0"
    runs = {r["strategy"]: r for r in report["runs"]}
    with torch.compiler.config.patch(static_sources=".*:0"):
        assert runs["default"]["graphs"] == _by_hand([1, 2, 8]) == 3
        assert runs["unbacked_sources"]["graphs"] == _by_hand(
            [1, 2, 8], config={"unbacked_sources": BATCH}
        )
    assert runs["unbacked_sources"]["status"] == "ok"  # not "not honoured in this torch"
    for name in ("default", "unbacked_sources"):
        assert any("TORCH_COMPILE_STATIC_SOURCES" in n for n in runs[name]["notes"]), name
    assert runs["mark_unbacked"]["graphs"] == 1
    assert not any("overridden" in n for n in runs["mark_unbacked"]["notes"])


@pytest.mark.slow
def test_check_clean_env_judges_the_strategies_without_the_inherited_setting(tmp_path):
    """check as CI runs it: the inherited unbacked_sources would pass a one-compile budget that
    the default strategy, run clean, does not meet (as many compiles as a CompileCounter counts
    without the setting)."""
    scenario = tmp_path / "ce.yaml"
    scenario.write_text(
        "name: ce\ntarget: logprobs.count_greater_than\nparams: {vocab_size: 64}\n"
        "sequences:\n  rl: [1, 2, 8]\nbackend: eager\nrepeats: 0\nstrategies: [default]\n"
        "expect:\n  default: {max_compiles: 1}\n"
    )
    env = {**os.environ, "TORCH_COMPILE_UNBACKED_SOURCES": BATCH}
    env.pop(CLEAN_ENV, None)
    code = "import sys; from recompile_probe.cli import main; sys.argv = sys.argv[1:]; main()"
    outcomes = {}
    for clean in (False, True):
        out = tmp_path / f"clean-{clean}.json"
        args = ["check", str(scenario), "-q", "--json", str(out)]
        done = subprocess.run(
            [sys.executable, "-c", code, "recompile-probe", *args, *(["--clean-env"] * clean)],
            env=env,
            capture_output=True,
            text=True,
        )
        assert done.returncode in (0, 1), done.stderr  # 1: a budget violated, not a crash
        outcomes[clean] = (done.returncode, json.loads(out.read_text()))
    inherited_code, inherited = outcomes[False]
    clean_code, clean = outcomes[True]
    assert inherited["environment"]["compile_settings"]["TORCH_COMPILE_UNBACKED_SOURCES"] == BATCH
    assert clean["environment"]["compile_settings"] == {}
    assert clean["environment"]["cleared_settings"]["TORCH_COMPILE_UNBACKED_SOURCES"] == BATCH
    assert clean["runs"][0]["graphs"] == _by_hand([1, 2, 8])
    if _by_hand([1, 2, 8]) > 1 and inherited["runs"][0]["graphs"] == 1:
        # the setting is honoured here (2.13 on): it alone made the budget pass
        assert (inherited_code, clean_code) == (0, 1)
