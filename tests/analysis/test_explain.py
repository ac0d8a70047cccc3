"""`explain`: entries, guard diffs, measured fixes and costs on real runs."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from recompile_probe.analysis.diffs import guard_diff, kinds, shape_env_guards
from recompile_probe.analysis.explain import explain, to_dict
from recompile_probe.analysis.notes import noise_note, slow_winner
from recompile_probe.cli import app
from recompile_probe.execution.session import run_scenario
from recompile_probe.scenario.load import load
from recompile_probe.scenario.overrides import with_overrides


@pytest.fixture(scope="module")
def default_report():
    scenario = load(None)
    return scenario, run_scenario(scenario)


def test_explain_default_shows_entries_diff_kind_and_measured_fixes():
    result = CliRunner().invoke(
        app, ["explain", "--strategy", "default", "--sequence", "rl", "--quiet"], terminal_width=100
    )
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "0/0  call 0, B=1" in out and "0/1  call 1, B=2" in out
    assert "~ TENSOR_MATCH L['x'] size=[1, 4096] → size=[None, 4096]" in out
    assert "+ SHAPE_ENV 2 <= L['x'].size()[0]" in out
    assert "Recompile at call 1 (B 1 → 2), 0/1: zero_one_specialization" in out
    fixes = out.split("Measured fixes")[1].split("Runtime cost")[0]
    from recompile_probe.torch_compat.knobs import knob_not_honoured

    for name in ("mark_unbacked", "unbacked_sources", "backed_size_oblivious"):
        if name == "unbacked_sources" and knob_not_honoured(
            "torch.compiler.config.unbacked_sources"
        ):
            assert "    unbacked_sources (" not in fixes  # unsupported here: no fix claimed
            continue
        assert f"    {name} (1 compile," in fixes
    assert "torch._dynamo.decorators.mark_unbacked(x, 0)" in fixes
    # the template checks were never run on this target: printed apart, as advice
    measured, advice = fixes.split("    mark_unbacked (")[1].split("not measured, advice", 1)
    assert "torch._check" not in measured
    assert "        torch._check(x.shape[0] == values.shape[0])" in advice.splitlines()
    assert "default " not in fixes.split("\n", 1)[1].split("Runtime")[0].replace(
        "default)", ""
    )  # default itself recompiled: never its own fix
    assert "guard check µs" in out and "cold guard µs" in out
    assert max(len(line) for line in out.splitlines()) <= 100


def test_guard_diff_on_a_real_pair(default_report):
    _, report = default_report
    run = next(r for r in report.runs if r.strategy == "default" and r.sequence_name == "rl")
    old, new = run.entries
    diff = guard_diff(old, new)
    changed = {c.source: c.fields for c in diff.changed}
    assert changed["L['x']"] == {"size": ("[1, 4096]", "[None, 4096]")}
    assert changed["L['values']"] == {"size": ("[1, 1]", "[None, 1]")}
    assert {g.text for g in diff.added} == {
        "2 <= L['x'].size()[0]",
        "L['values'].size()[0] == L['x'].size()[0]",
    }
    assert diff.removed == ()
    assert shape_env_guards(new) == [
        "L['values'].size()[0] == L['x'].size()[0]",
        "2 <= L['x'].size()[0]",
    ]
    # relational guards hang under both tensors but are counted once
    assert kinds(new)["NO_TENSOR_ALIASING"] == 1


def test_entry_figures_match_dynamo(default_report):
    """Entries and cold guard latency against Dynamo's own records, right after a run."""
    from torch._dynamo.eval_frame import _debug_get_cache_entry_list
    from torch._dynamo.utils import get_compilation_metrics

    from recompile_probe.targets.logprobs import count_greater_than

    scenario = with_overrides(load(None), strategies=["default"], sequence=[1, 2, 8])
    (run,) = run_scenario(scenario).runs
    live = _debug_get_cache_entry_list(count_greater_than)
    assert sorted(str(e.compile_id) for e in live) == [e.compile_id for e in run.entries]
    metrics = get_compilation_metrics()
    assert run.guard_latency_us == metrics[-1].guard_latency_us
    assert [e.guard_count for e in run.entries] == [m.guard_count for m in metrics]
    assert run.guard_check_us is not None and 0 < run.guard_check_us < 1000


def test_dtype_change_has_no_fix_and_says_why(write_scenario):
    path = write_scenario("""
        target: user_targets.py:double
        factory: user_targets.py:make_dtype_switch
        batch_dims: {0: [0]}
        sequences: {s: [2, 3]}
        strategies: [default, mark_unbacked, unbacked_sources]
    """)
    result = CliRunner().invoke(app, ["explain", str(path), "--quiet", "--format", "json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    from helpers import unbacked_sources_honoured

    assert {x["strategy"] for x in data["explanations"]} == {"default", "mark_unbacked"} | (
        {"unbacked_sources"} if unbacked_sources_honoured() else set()
    )
    for x in data["explanations"]:
        (recompile,) = x["recompile_reasons"]
        assert recompile["reason_kind"] == "dtype_change"
        assert recompile["fixes"] == []
        assert "cannot be removed by marking dims" in recompile["no_fix_why"]


def test_explain_json_and_markdown_carry_costs():
    result = CliRunner().invoke(app, ["explain", "--strategy", "default", "--quiet", "-f", "json"])
    data = json.loads(result.stdout)
    costs = {(c["sequence_name"], c["strategy"]): c for c in data["costs"]}
    mark = costs[("rl", "mark_unbacked")]
    assert mark["steady_state_us"] > 0 and mark["eager_us"] > 0 and mark["guard_check_us"] > 0
    assert "guard_latency_us_cold" in mark
    assert data["report"]["schema_version"] == 1
    md = (
        CliRunner()
        .invoke(app, ["explain", "--strategy", "default", "--quiet", "-f", "markdown"])
        .stdout
    )
    assert "| strategy | compiles | µs/call | eager µs | guard check µs |" in md


def test_explain_bad_sequence_is_a_usage_error():
    result = CliRunner().invoke(app, ["explain", "--sequence", "rll", "--quiet"])
    assert result.exit_code == 2 and "Did you mean 'rl'" in result.output


def test_slow_winner_note():
    from helpers import sample_run as _run

    runs = [_run("fast", 2, 9, 10.0), _run("slow_but_one_compile", 1, 9, 30.0)]
    assert "slow_but_one_compile compiles least (1) but runs slowest" in slow_winner(runs)
    assert slow_winner([_run("a", 1, 9, 10.0), _run("b", 2, 9, 11.0)]) is None
    # every run compiles as often: "compiles least" would say nothing
    assert slow_winner([_run("a", 3, 9, 10.0), _run("b", 3, 9, 30.0)]) is None


def test_trace_dir_writes_one_trace_per_strategy(tmp_path):
    result = CliRunner().invoke(
        app,
        [
            "run",
            "--strategies",
            "default,mark_unbacked",
            "--sequence",
            "1,2,8",
            "--quiet",
            "-f",
            "json",
            "--trace-dir",
            str(tmp_path),
        ],
    )
    assert result.exit_code == 0, result.output
    runs = json.loads(result.stdout)["runs"]
    for run in runs:
        assert run["trace_file"] == str(tmp_path / run["strategy"] / "cli.log")
        assert (tmp_path / run["strategy"] / "cli.log").stat().st_size > 0
    assert "tlparse " in result.stderr


TLPARSE = shutil.which("tlparse") or shutil.which("tlparse", path=str(Path(sys.executable).parent))


@pytest.mark.skipif(TLPARSE is None, reason="tlparse is not installed (pip install -e .[dev])")
def test_tlparse_reads_our_trace_and_agrees_on_compile_ids(tmp_path):
    result = CliRunner().invoke(
        app,
        [
            "run",
            "--strategies",
            "default",
            "--sequence",
            "1,2,8",
            "--quiet",
            "-f",
            "json",
            "--trace-dir",
            str(tmp_path),
        ],
    )
    (run,) = json.loads(result.stdout)["runs"]
    out = tmp_path / "parsed"
    subprocess.run(
        [TLPARSE, run["trace_file"], "-o", str(out), "--no-browser"],
        check=True,
        capture_output=True,
    )
    directory = json.loads((out / "compile_directory.json").read_text())
    ids = sorted(k.strip("[]") for k in directory if "-" not in k)
    assert ids == [e["compile_id"] for e in run["compile_events"]] == ["0/0", "0/1"]


def test_slow_winner_ignores_noisy_figures_and_says_so():
    from helpers import timed_run as _timed

    runs = [
        _timed("fast_but_noisy", 2, 9, 5.0, 10.0, 500.0),
        _timed("one_compile", 1, 9, 29.0, 30.0, 31.0),
    ]
    assert slow_winner(runs) is None  # the only faster figure cannot be trusted
    note = noise_note(runs)
    assert note.startswith("µs/call too noisy to rank")
    assert "fast_but_noisy (min 5.0, median 10.0, p90 500.0 µs)" in note


def _fix_for(target):
    """A recompiling default run and a mark_unbacked run that removed it (synthetic records)."""
    from dataclasses import replace

    from recompile_probe.records.report import Environment, Report, ScenarioRef, Tool
    from recompile_probe.records.run import Call, CompileEvent, Run
    from recompile_probe.strategies.advice import Arguments
    from recompile_probe.strategies.builtins import BUILTINS

    event = CompileEvent(
        compile_id="0/1",
        function="f",
        call_index=1,
        reason="0/0: tensor 'x' size mismatch",
        guard_count=9,
        shape_env_guard_count=1,
        graph_op_count=2,
        compile_time_ms=1.0,
        failed=False,
        recompile=True,
        reason_kind="zero_one_specialization",
    )
    calls = (Call(0, 1, "compile", 1.0, True), Call(1, 2, "recompile", 1.0, True))
    default = Run(
        target=target,
        sequence_name="rl",
        sequence=(1, 2),
        strategy="default",
        backend="eager",
        status="ok",
        error=None,
        graphs=2,
        compiles=2,
        recompiles=1,
        cache_entries=2,
        guard_count=9,
        shape_env_guard_count=1,
        leaf_guard_count=9,
        compile_time_ms=2.0,
        outputs_match=True,
        calls=calls,
        compile_events=(event,),
    )
    fixed = replace(
        default,
        strategy="mark_unbacked",
        graphs=1,
        compiles=1,
        recompiles=0,
        calls=(calls[0], Call(1, 2, "hit", 1.0, True)),
        compile_events=(),
    )
    batch = Arguments([("L['x']", 0, "B"), ("L['values']", 0, "B")])
    report = Report(
        Tool("recompile-probe", "0"),
        Environment(None, "3", "p"),
        ScenarioRef("s", None),
        (default, fixed),
    )
    explanations, notes = explain(report, BUILTINS, batch, chosen=["default"])
    (fix,) = explanations[0].recompiles[0].fixes
    data = json.loads(json.dumps(to_dict(report, explanations, notes)))
    assert data["explanations"][0]["recompile_reasons"][0]["fixes"][0]["advice"] == list(fix.advice)
    return fix


def test_unmeasured_checks_are_advice_not_a_measured_change():
    fix = _fix_for("logprobs.count_greater_than")
    assert not any("torch._check" in line for line in fix.change)
    assert fix.advice == (
        "torch._check(x.shape[0] >= 1)",
        "torch._check(x.shape[0] == values.shape[0])",
    )
    # the checked target ran them: measured, part of the change
    fix = _fix_for("logprobs.count_greater_than_checked")
    assert "torch._check(x.shape[0] == values.shape[0])" in fix.change and fix.advice == ()


def test_no_slowest_claim_while_a_fewest_compiles_run_is_noisy():
    from helpers import timed_run as _timed

    runs = [
        _timed("one_noisy", 1, 9, 5.0, 50.0, 60.0),
        _timed("b", 2, 9, 29.0, 30.0, 31.0),
        _timed("c", 2, 9, 9.0, 10.0, 11.0),
    ]
    assert slow_winner(runs) is None  # b does not compile least; one_noisy's speed is unknown
    assert "one_noisy" in noise_note(runs)


TWO = """
target: attn.py:attn
inputs:
  - {shape: [B, S, 16]}
  - {shape: [B, S, 16]}
sequences:
  prefill: {grid: {B: [1, 2], S: [7, 33]}}
strategies: [default, mark_unbacked, mixed]
custom_strategies:
  mixed: {mark: {B: unbacked, S: dynamic}}
repeats: 2
"""


def test_two_symbols_explain_names_points_changes_and_symbols(write_scenario):
    """A real B x S run, explained: entries at their points, each recompile's change and the
    symbol whose dim Dynamo's guard names, in the table and in the JSON."""
    from recompile_probe.analysis.explain import Explained
    from recompile_probe.render.formats import Document, Layout, render
    from recompile_probe.strategies.advice import Arguments
    from recompile_probe.targets import loader

    path = write_scenario(TWO)
    (path.parent / "attn.py").write_text(
        "def attn(q, k):\n    return (q @ k.transpose(-1, -2)).softmax(-1).sum(-1)\n"
    )
    scenario = load(str(path))
    report = run_scenario(scenario)
    known = {name: scenario.strategy(name) for name in scenario.known_strategies()}
    target = loader.load(scenario)
    xs, notes = explain(
        report, known, Arguments(target.dim_sources(), target.param_names), ["default"]
    )
    explained = Explained(report, tuple(xs), tuple(notes))
    text = render(Document.EXPLAIN, "table", explained, Layout(width=100))
    assert max(len(line) for line in text.splitlines()) <= 100
    assert "default · sequence prefill · " in text
    assert "  (B 1, S 7) → (B 1, S 33) → (B 2, S 7) → (B 2, S 33)" in text
    assert "0/0  call 0 (B 1, S 7) · guard_count" in text
    assert "0/1  call 1 (B 1, S 33) · guard_count" in text
    assert "Recompile at call 1 (S 7 → 33), 0/1: static_size_change" in text
    # Dynamo's own guard text says which dim failed; the symbol is the one that moves it
    assert "  0/0: tensor 'k' size mismatch at index 1. expected 7, actual 33" in text
    assert "  symbol S, source L['k'], what size, dim 1, expected 7, actual 33" in text
    assert "B 1 → 1" not in text

    data = json.loads(render(Document.EXPLAIN, "json", explained))
    (x,) = data["explanations"]
    assert x["points"] == [{"B": 1, "S": 7}, {"B": 1, "S": 33}, {"B": 2, "S": 7}, {"B": 2, "S": 33}]
    assert x["sequence"] == [1, 1, 2, 2]  # schema_version 1: still B's values
    first = x["recompile_reasons"][0]
    assert (first["call_index"], first["change"], first["sizes"]) == (
        1,
        "S 7 → 33",
        {"B": 1, "S": 33},
    )
    assert first["reason_detail"]["symbol"] == "S" and first["reason_detail"]["dim"] == 1
    assert [e["sizes"] for e in x["entries"]][:2] == [{"B": 1, "S": 7}, {"B": 1, "S": 33}]
    # the fixes were measured on this very call: exactly the runs that did not recompile there
    from helpers import torch_at_least

    fixed = {
        r.strategy
        for r in report.runs_for("prefill")
        if r.strategy != "default"
        and r.status == "ok"
        and r.outputs_match is True
        and r.calls[1].event not in ("recompile", "error", "eager")
    }
    assert {f["strategy"] for f in first["fixes"]} == fixed
    if torch_at_least("2.13"):  # measured on 2.13-2.15; 2.9 recompiles here under both
        assert fixed >= {"mark_unbacked", "mixed"}
    md = render(Document.EXPLAIN, "markdown", explained)
    assert "Recompile at call 1 (S 7 → 33), 0/1: static_size_change" in md


def test_origin_line_says_nothing_when_unknown_and_fits_its_width():
    from dataclasses import replace

    from recompile_probe.records.origin import Origin
    from recompile_probe.render import cells

    assert cells.origin(None) is None
    code = "if x.shape[0] > 4 and some_really_long_condition(x, y, z, w) " * 3
    data = Origin("/a/b/model.py", 23, "f", code, "created")
    text = cells.origin(data, 80)
    assert text is not None
    assert text.startswith("at model.py:23  `if x.shape[0] > 4") and len(text) <= 80
    assert text.endswith("…`  (created this guard)")
    static = cells.origin(replace(data, code="y = x * 2", role="first_use"), static=True)
    assert static == "at model.py:23  `y = x * 2`  (first use; static by design)"
    assert (
        cells.origin(replace(data, code=None, role="specialized"), short=True)
        == "at model.py:23  (specialized)"
    )


def test_an_error_without_a_failed_compile_is_still_explained():
    from dataclasses import replace

    from helpers import sample_report
    from recompile_probe.analysis.errors import explain_error

    run = next(r for r in sample_report().runs if r.status == "error")
    run = replace(run, compile_events=())
    found = explain_error(run)
    assert found is not None and found.compile_id is None and found.specialized == ()
    assert found.type == run.error.type and run.strategy in found.why
