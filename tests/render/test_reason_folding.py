"""`run` and `explain` in a terminal fold each recompile's failing guards into its causes and a
count; --verbose lists every one; JSON is the same either way. On a real run whose recompiles
are rejected by more and more cache entries, against the entries counted by hand in a plain
compile of the same function (each entry names one failing guard, so a recompile has as many
failing guards as there were entries)."""

from __future__ import annotations

import importlib.util
import re

import pytest
import torch
from typer.testing import CliRunner

from helpers import render_report
from recompile_probe.cli import app
from recompile_probe.execution.session import run_scenario
from recompile_probe.scenario.load import load
from recompile_probe.targets import loader

SIZES = [1, 2, 3, 4, 5, 6]
SCENARIO = f"""
target: user_targets.py:double
inputs: [{{shape: [B, 8]}}]
sequences: {{s: {SIZES}}}
strategies: [static]
repeats: 2
"""


def _rejecting_entries(fn, make_args) -> dict[str, int]:
    """compile id -> how many cache entries rejected the call that made it, by hand."""
    torch._dynamo.reset()
    compiled = torch.compile(fn, backend="eager", dynamic=False)
    code = fn.__code__
    out = {}
    for i, b in enumerate(SIZES):
        before = len(torch._dynamo.eval_frame._debug_get_cache_entry_list(code))
        compiled(*make_args(b))
        if before:
            out[f"0/{i}"] = before
    torch._dynamo.reset()
    return out


def _guard_lines(text: str) -> list[str]:
    return re.findall(r"\b0/\d+: tensor 'x' size mismatch", text)


def test_run_folds_failing_guards_and_verbose_lists_them_all(write_scenario):
    path = write_scenario(SCENARIO)
    scenario = load(path)
    target = loader.load(scenario)
    truth = _rejecting_entries(target.fn, target.make_args)
    assert truth == {"0/1": 1, "0/2": 2, "0/3": 3, "0/4": 4, "0/5": 5}
    report = run_scenario(scenario)
    folded = render_report(report, "table", width=120)
    verbose = render_report(report, "table", width=120, verbose=True)
    # verbose: every rejecting entry's failing guard; folded: at most two causes per recompile
    assert len(_guard_lines(verbose)) == sum(truth.values())
    assert len(folded.splitlines()) < len(verbose.splitlines())
    for cid, n in truth.items():
        row = re.search(rf"  {cid}  .*?(?=\n\S|\n\n|\Z)", folded, re.S).group(0)
        if n > 2:
            assert f"+{n - 2} more failing guard" in row, row
            assert "--verbose" in row
        else:
            assert "more failing guard" not in row, row
    assert render_report(report, "json") == render_report(report, "json", verbose=True)

    runner = CliRunner()
    short = runner.invoke(app, ["run", str(path), "-q"])
    full = runner.invoke(app, ["run", str(path), "-q", "--verbose"])
    assert short.exit_code == 0 and full.exit_code == 0, short.output + full.output
    assert len(_guard_lines(full.output)) == sum(truth.values())
    assert len(_guard_lines(short.output)) < sum(truth.values())


def _block(text: str, cid: str) -> str:
    """The lines of one "Recompile at call ..." block of explain's output."""
    head = re.search(rf"^Recompile at call \d+ [^\n]*?, {cid}:", text, re.M)
    assert head is not None, cid
    rest = re.search(r"^\S", text[head.end() :], re.M)
    return text[head.start() : head.end() + (rest.start() if rest else len(text))]


def test_explain_folds_too_and_verbose_lists_every_guard(write_scenario):
    path = write_scenario(SCENARIO)
    target = loader.load(load(path))
    truth = _rejecting_entries(target.fn, target.make_args)
    runner = CliRunner()
    short = runner.invoke(app, ["explain", str(path), "-q"])
    full = runner.invoke(app, ["explain", str(path), "-q", "--verbose"])
    assert short.exit_code == 0 and full.exit_code == 0, short.output + full.output
    assert re.findall(r"^Recompile at call \d+ [^\n]*?, (0/\d+):", full.output, re.M) == list(truth)
    for cid, n in truth.items():
        assert len(_guard_lines(_block(full.output, cid))) == n
        if n > 2:
            assert f"+{n - 2} more failing guard" in _block(short.output, cid)
    lines = [
        sum(len(_block(text, cid).splitlines()) for cid in truth)
        for text in (short.output, full.output)
    ]
    assert lines[0] < lines[1]


OPTIONAL = """
import torch


def target(x, y=None):
    return x * 2 if y is None else x + y


def drive(fn, B):
    x = torch.ones(B, 4)
    return fn(x) if B == 1 else fn(x, y=torch.ones(B, 4))
"""


def test_explain_folds_the_guards_a_diff_adds(write_scenario):
    """The second call brings an optional tensor: its entry adds every guard on y. Counted
    here from the real cache entry's own code parts (``hasattr(L['y'], ...)`` marking guards)."""
    write_scenario(OPTIONAL, name="opt.py")
    path = write_scenario("""
        target: opt.py:target
        driver: opt.py:drive
        dims:
          B: {x: [0]}
        sequences: {s: [1, 2]}
        strategies: [default]
        repeats: 2
    """)
    spec = importlib.util.spec_from_file_location("opt_target", path.parent / "opt.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    torch._dynamo.reset()
    compiled = torch.compile(module.target, backend="eager")
    module.drive(compiled, 1)
    module.drive(compiled, 2)
    newest = torch._dynamo.eval_frame._debug_get_cache_entry_list(module.target.__code__)[0]
    parts, stack = [], [newest.guard_manager.root]
    while stack:
        manager = stack.pop()
        parts += [p for g in manager.get_leaf_guards() for p in g.verbose_code_parts()]
        stack.extend(manager.get_child_managers())
    torch._dynamo.reset()
    marking = sum(p.startswith("hasattr(L['y']") for p in parts)
    if marking < 3:  # torch 2.9 writes one marking guard per tensor: nothing to fold
        pytest.skip(f"this torch adds {marking} marking guard(s) for y; folding needs 3")

    runner = CliRunner()
    short = runner.invoke(app, ["explain", str(path), "-q"]).output
    full = runner.invoke(app, ["explain", str(path), "-q", "--verbose"]).output
    added = re.findall(r"^  \+ (\S+) ", full, re.M)
    assert added.count("DIMENSION_DYNAMIC_MARKING_GUARD") == marking
    shown = re.findall(r"^  \+ (\S+) ", short, re.M)
    more = re.search(r"^  \+(\d+) more added guards, --verbose", short, re.M)
    assert more is not None and len(shown) + int(more.group(1)) == len(added)

    def diff_block(text):  # the timing notes vary between runs: compare the diffs alone
        return text[text.index("Guard diff") : text.index("Recompile at call")]

    assert len(diff_block(short).splitlines()) < len(diff_block(full).splitlines())
