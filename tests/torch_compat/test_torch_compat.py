"""An older or newer torch without some private API: figures read n/a, nothing crashes.

Real torch runs; only the private attribute under test is removed for the duration.
"""

from __future__ import annotations

import inspect
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from helpers import render_report
from recompile_probe.execution.session import run_scenario
from recompile_probe.scenario.load import load
from recompile_probe.scenario.overrides import with_overrides


def _run(**overrides):
    scenario = with_overrides(load(None), strategies=["default"], sequence=[1, 2, 8], **overrides)
    (run,) = run_scenario(scenario).runs
    return run


def test_without_cache_entry_api_guard_tree_figures_are_n_a(monkeypatch):
    monkeypatch.delattr(torch._dynamo.eval_frame, "_debug_get_cache_entry_list")
    run = _run()
    assert run.status == "ok" and run.graphs == 2 and run.compiles == 2
    assert run.cache_entries is None and run.leaf_guard_count is None
    # guard_count is a metrics figure (the target frame's newest successful compile): it needs
    # no cache entry, and it is Dynamo's own number.
    from torch._dynamo.utils import get_compilation_metrics

    newest = [
        m
        for m in get_compilation_metrics()
        if str(m.compile_id).startswith("0/") and m.fail_type is None
    ][-1]
    assert (run.guard_compile_id, run.guard_count) == (str(newest.compile_id), newest.guard_count)


def test_without_the_metrics_log_the_deque_is_read(monkeypatch):
    monkeypatch.delattr(torch._utils_internal, "log_compilation_event")
    run = _run()
    assert (run.compiles, run.recompiles, run.graphs) == (2, 1, 2)
    assert "size mismatch" in run.compile_events[1].reason


def test_without_any_metrics_counts_read_n_a(monkeypatch):
    monkeypatch.delattr(torch._utils_internal, "log_compilation_event")
    monkeypatch.delattr(torch._dynamo.utils, "get_compilation_metrics")
    run = _run()
    assert run.graphs == 2  # the counting backend still works
    assert run.compiles is None and run.recompiles is None
    # the per-call event falls back to the only compile signal left: a new backend graph
    assert [c.event for c in run.calls] == ["compile", "recompile", "hit"]


def test_without_the_recompiles_log_reasons_fall_back_to_metrics(monkeypatch):
    import contextlib

    from recompile_probe.torch_compat import logs

    @contextlib.contextmanager
    def unavailable(on_message):
        yield False

    monkeypatch.setattr(logs, "recompiles_stream", unavailable)
    run = _run()
    assert (
        run.compile_events[1].reason == "0/0: tensor 'x' size mismatch at index 0. "
        "expected 1, actual 2"
    )


def test_n_a_figures_render(monkeypatch):
    monkeypatch.delattr(torch._dynamo.eval_frame, "_debug_get_cache_entry_list")
    from recompile_probe.records.report import Environment, Report, ScenarioRef, Tool

    report = Report(
        Tool("recompile-probe", "0"), Environment(None, "3", "p"), ScenarioRef("s", None), (_run(),)
    )
    assert "n/a" in render_report(report, "table")


TLPARSE = shutil.which("tlparse") or shutil.which("tlparse", path=str(Path(sys.executable).parent))


@pytest.mark.skipif(TLPARSE is None, reason="tlparse is not installed (pip install -e .[dev])")
def test_every_trace_file_carries_its_own_file_names(tmp_path):
    # torch interns file names once per process; without a table per trace, the second file
    # holds no "str" records and tlparse prints "(unknown)" for every frame.
    from typer.testing import CliRunner

    from recompile_probe.cli import app
    from recompile_probe.targets import logprobs

    result = CliRunner().invoke(
        app,
        [
            "run",
            "--strategies",
            "default,static",
            "--sequence",
            "1,2",
            "--quiet",
            "-f",
            "json",
            "--trace-dir",
            str(tmp_path),
        ],
    )
    assert result.exit_code == 0, result.output
    line = inspect.getsourcelines(logprobs.count_greater_than)[1]
    for run in json.loads(result.stdout)["runs"]:
        out = tmp_path / f"parsed-{run['strategy']}"
        subprocess.run(
            [TLPARSE, run["trace_file"], "-o", str(out), "--no-browser"],
            check=True,
            capture_output=True,
        )
        index = (out / "index.html").read_text()
        assert f"logprobs.py:{line} in count_greater_than" in index, run["strategy"]
        assert "(unknown)" not in index


def test_unbacked_sources_canary_agrees_with_a_hand_count():
    # the canary's verdict, against CompileCounter runs of the same config by hand: per-dim
    # names (L['x']:0) are honoured where one graph serves sizes 1, 2, 3 (2.13+); 2.9 honours
    # whole tensor names only, and the reason says so
    from helpers import hand_count
    from recompile_probe.torch_compat.knobs import knob_not_honoured

    def count(value):
        return hand_count(
            lambda x: x * 2,
            lambda n: (torch.ones(n),),
            [1, 2, 3],
            config=[(torch.compiler.config, "unbacked_sources", value)],
        )

    per_dim, whole, neither = count("L['x']:0"), count("L['x']"), count("")
    assert neither == (2, None)  # without the knob, sizes 1, 2, 3 take two graphs
    why = knob_not_honoured("torch.compiler.config.unbacked_sources")
    assert (why is None) == (per_dim == (1, None)), (why, per_dim)
    if why is not None:
        assert f"compiled {per_dim[0]} times" in why
        assert ("whole tensors only" in why) == (whole == (1, None)), (why, whole)
