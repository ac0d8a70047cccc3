"""What tests share: where things are, and the independent counts they check the tool against."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from recompile_probe.records.report import Environment, Report, ScenarioRef, Tool
from recompile_probe.records.run import Call, CompileEvent, Run, RunError
from recompile_probe.records.watch import FunctionSummary, ReasonCount

TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent
FIXTURES = TESTS / "fixtures"
PROGRAMS = TESTS / "programs"
CONFIGS = ROOT / "configs"
EXAMPLES = ROOT / "examples"


def copy_configs(dest: Path, keep: set[str], seed_strategies: str | None = None) -> Path:
    """The shipped configs named in ``keep`` copied into ``dest`` (their Python modules too);
    ``seed_strategies`` (e.g. "[default, mark_unbacked]") replaces logprobs.yaml's strategy list,
    for tests that make every run several times."""
    import re
    import shutil

    shutil.copytree(CONFIGS, dest)
    for other in dest.glob("*.yaml"):
        if other.name not in keep:
            other.unlink()
    if seed_strategies is not None:
        seed = dest / "logprobs.yaml"
        text, found = re.subn(
            r"^strategies: \[[^\]]*\]",
            f"strategies: {seed_strategies}",
            seed.read_text(),
            flags=re.M,
        )
        assert found == 1, seed
        seed.write_text(text)
    return dest


def import_file(path: Path, name: str | None = None):
    """A fixture or program file imported as a module of its own (not through sys.path)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(name or path.stem, path)
    assert spec is not None and spec.loader is not None, path
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def hand_count(
    fn,
    make_args,
    sequence,
    *,
    dynamic=None,
    mark=None,
    batch_dims=None,
    backend="eager",
    fullgraph=False,
    config=None,
):
    """The vLLM test, by hand: a CompileCounter over the sequence in a fresh Dynamo state.

    Returns (graphs, error type name or None).
    """
    import contextlib

    import torch
    from torch._dynamo.testing import CompileCounterWithBackend

    torch._dynamo.reset()
    counter = CompileCounterWithBackend(backend)
    compiled = torch.compile(fn, backend=counter, dynamic=dynamic, fullgraph=fullgraph)
    error = None
    with contextlib.ExitStack() as stack:
        for module, attr, value in config or ():
            stack.enter_context(module.patch(attr, value))
        for b in sequence:
            args = make_args(b)
            if mark is not None:
                for index, dims in (batch_dims or {}).items():
                    for d in dims:
                        mark(args[index], d)
            try:
                compiled(*args)
            except Exception as exc:  # noqa: BLE001
                error = type(exc).__name__
                break
    torch._dynamo.reset()
    return counter.frame_count, error


def unbacked_sources_honoured() -> bool:
    """Whether this torch honours torch.compiler.config.unbacked_sources (2.9 has it but ignores
    it): measured by the tool's canary, which tests elsewhere check against a hand count."""
    from recompile_probe.torch_compat.knobs import knob_not_honoured

    return knob_not_honoured("torch.compiler.config.unbacked_sources") is None


def torch_at_least(version: str) -> bool:
    import torch

    def parts(v: str) -> tuple[int, ...]:
        return tuple(int(p) for p in v.split("+")[0].split(".")[:2])

    return parts(torch.__version__) >= parts(version)


# --- records built by hand, for renderer and analysis tests -------------------------------


def sample_report() -> Report:
    event = CompileEvent(
        compile_id="0/1",
        function="f",
        call_index=1,
        reason="0/0: tensor 'x' size mismatch",
        guard_count=9,
        shape_env_guard_count=1,
        graph_op_count=2,
        compile_time_ms=12.5,
        failed=False,
        recompile=True,
    )
    run = Run(
        target="t",
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
        leaf_guard_count=10,
        compile_time_ms=20.0,
        outputs_match=True,
        calls=(Call(0, 1, "compile", 100.0, True), Call(1, 2, "recompile", 90.0, True)),
        compile_events=(event,),
    )
    failed = Run(
        target="t",
        sequence_name="rl",
        sequence=(1, 2),
        strategy="mark_unbacked",
        backend="eager",
        status="error",
        error=RunError("GuardOnDataDependentSymNode", "Could not guard", 0),
        graphs=0,
        compiles=1,
        recompiles=0,
        cache_entries=0,
        guard_count=None,
        shape_env_guard_count=None,
        leaf_guard_count=None,
        compile_time_ms=3.0,
        outputs_match=None,
    )
    return Report(
        Tool("recompile-probe", "0.1.0"),
        Environment("2.13.0", "3.11.7", "Linux"),
        ScenarioRef("s", "/x.yaml"),
        (run, failed),
    )


def sample_run(strategy, compiles, guards, us, status="ok", match=True):
    return Run(
        target="t",
        sequence_name="rl",
        sequence=(1, 2, 8),
        strategy=strategy,
        backend="eager",
        status=status,
        error=None,
        graphs=compiles,
        compiles=compiles,
        recompiles=compiles - 1,
        cache_entries=compiles,
        guard_count=guards,
        shape_env_guard_count=0,
        leaf_guard_count=guards,
        compile_time_ms=1.0,
        outputs_match=match,
        steady_state_us=us,
    )


def timed_run(strategy, compiles, guards, low, median, high):
    return replace(
        sample_run(strategy, compiles, guards, median),
        steady_state_min_us=low,
        steady_state_p90_us=high,
        # docs/output.md's noise rule, written out, not imported: median over 1.3x the fastest
        steady_state_noisy=median > 1.3 * low,
    )


def sample_function(i: int) -> FunctionSummary:
    recompiles = (i * 37) % 11
    return FunctionSummary(
        f"mod.fn_{i}<x>",
        f"/src/m{i}.py",
        i + 1,
        recompiles + 1,
        recompiles,
        0,
        recompiles + 1,
        0,
        recompiles + 1,
        9,
        1,
        recompiles >= 8,
        reasons=(ReasonCount("static_size_change", f"tensor 'x' size mismatch {i}", recompiles),)
        if recompiles
        else (),
    )


GOOD_USER = """\
target: user_targets.py:scale_shift
inputs:
  - {shape: [B, 8]}
  - {shape: [B, 1]}
sequences: {s: [1, 2]}
"""

#: scenario texts the validator refuses, with the exit code and what the message says
MALFORMED = [
    pytest.param("target: [unclosed\n", 2, ["expected ',' or ']'", "at line 1"], id="yaml-syntax"),
    pytest.param(
        "name: x\n  bad: indent\n", 2, ["mapping values are not allowed"], id="yaml-indent"
    ),
    pytest.param("", None, ["empty"], id="empty-file"),
    pytest.param("- just\n- a list\n", 1, ["expected a mapping"], id="top-level-list"),
    pytest.param(
        "target: logprobs.count_greater_than\nsequencs: {a: [1]}\n",
        2,
        ["unknown key 'sequencs'", "Did you mean 'sequences'"],
        id="misspelt-top-key",
    ),
    pytest.param(
        "sequences: {a: [1]}\n", None, ["missing required key 'target'"], id="missing-target"
    ),
    pytest.param(
        "target: logprobs.count_greater_than\n",
        None,
        ["missing required key 'sequences'"],
        id="missing-sequences",
    ),
    pytest.param(
        "target: logprobs.count_greater_thn\nsequences: {a: [1]}\n",
        1,
        ["unknown built-in target", "Did you mean 'logprobs.count_greater_than'"],
        id="unknown-builtin-target",
    ),
    pytest.param(
        "target: 42\nsequences: {a: [1]}\n", 1, ["expected a target name"], id="target-not-string"
    ),
    pytest.param(
        "target: nowhere.py:fn\nsequences: {a: [1]}\ninputs: [{shape: [B]}]\n",
        1,
        ["does not exist"],
        id="missing-target-file",
    ),
    pytest.param(
        "target: logprobs.count_greater_than\nsequences: {a: []}\n",
        2,
        ["non-empty list"],
        id="empty-sequence",
    ),
    pytest.param(
        "target: logprobs.count_greater_than\nsequences: {a: [1, -2]}\n",
        2,
        ["cannot be negative"],
        id="negative-batch",
    ),
    pytest.param(
        "target: logprobs.count_greater_than\nsequences: {a: [1, 2.5]}\n",
        2,
        ["expected a batch size", "2.5"],
        id="float-batch",
    ),
    pytest.param(
        "target: logprobs.count_greater_than\nsequences: {a: [1, two]}\n",
        2,
        ["expected a batch size", "two"],
        id="string-batch",
    ),
    pytest.param(
        "target: logprobs.count_greater_than\nsequences: {a: [true]}\n",
        2,
        ["boolean"],
        id="bool-batch",
    ),
    pytest.param(
        "target: logprobs.count_greater_than\nsequences: {}\n",
        2,
        ["at least one sequence"],
        id="no-sequences",
    ),
    pytest.param(
        "target: logprobs.count_greater_than\nsequences: {a: [1]}\n"
        "strategies: [default, mark_unbaked]\n",
        3,
        ["unknown strategy 'mark_unbaked'", "Did you mean 'mark_unbacked'"],
        id="unknown-strategy",
    ),
    pytest.param(
        "target: logprobs.count_greater_than\nsequences: {a: [1]}\nbackend: indutor\n",
        3,
        ["unknown backend", "Did you mean 'inductor'"],
        id="unknown-backend",
    ),
    pytest.param(
        "target: logprobs.count_greater_than\nsequences: {a: [1]}\nparams: {vocab_sise: 3}\n",
        3,
        ["unknown key 'vocab_sise'", "Did you mean 'vocab_size'"],
        id="unknown-param",
    ),
    pytest.param(
        "target: logprobs.count_greater_than\nsequences: {a: [1]}\nparams: {vocab_size: big}\n",
        3,
        ["expected an integer"],
        id="param-type",
    ),
    pytest.param(
        "target: logprobs.count_greater_than\nsequences: {a: [1]}\ncompile: {dynamic: true}\n",
        3,
        ["set by each strategy"],
        id="compile-dynamic",
    ),
    pytest.param(
        "target: logprobs.count_greater_than\nsequences: {a: [1]}\ncompile: {fulgraph: true}\n",
        3,
        ["unknown key 'fulgraph'", "Did you mean 'fullgraph'"],
        id="compile-key",
    ),
    pytest.param(
        "target: !!python/object/apply:os.system [echo hi]\nsequences: {a: [1]}\n",
        1,
        ["not allowed", "safe_load"],
        id="python-tag",
    ),
    pytest.param(
        "target: logprobs.count_greater_than\ntarget: logprobs.gather_logprobs\n"
        "sequences: {a: [1]}\n",
        2,
        ["duplicate key 'target'"],
        id="duplicate-key",
    ),
    # Capital identifiers are size symbols (N is one); anything else in a shape is refused.
    pytest.param(
        GOOD_USER.replace("[B, 8]", "[n, 8]"),
        3,
        ["'n' is not a size symbol"],
        id="bad-shape-symbol",
    ),
    pytest.param(
        GOOD_USER.replace("[B, 8]", "[B, -8]"), 3, ["cannot be negative"], id="negative-dim"
    ),
    pytest.param(
        GOOD_USER.replace("{shape: [B, 8]}", "{shape: [B, 8], dtype: flaot32}"),
        3,
        ["unknown dtype", "Did you mean 'float32'"],
        id="bad-dtype",
    ),
    pytest.param(
        GOOD_USER.replace("{shape: [B, 8]}", "{shape: [B, 8], fill: randnn}"),
        3,
        ["unknown fill", "Did you mean 'randn'"],
        id="bad-fill",
    ),
    pytest.param(
        GOOD_USER.replace("{shape: [B, 8]}", "{shape: [B, 8], fill: 'randint(5, 1)'}"),
        3,
        ["low < high"],
        id="bad-randint",
    ),
    pytest.param(
        GOOD_USER.replace("{shape: [B, 8]}", "{shap: [B, 8]}"),
        3,
        ["unknown key 'shap'", "Did you mean 'shape'"],
        id="tensor-key",
    ),
    pytest.param(
        GOOD_USER.replace("[B, 1]", "[8, 1]").replace("[B, 8]", "[8, 8]"),
        2,
        ["no tensor has a 'B' dim"],
        id="no-batch-dim",
    ),
    pytest.param(
        "target: user_targets.py:scale_shift\nsequences: {s: [1]}\n",
        1,
        ["exactly one of 'inputs' or 'factory'"],
        id="no-inputs",
    ),
    pytest.param(
        "target: user_targets.py:scale_shift\nsequences: {s: [1]}\n"
        "factory: user_targets.py:make_pair\n",
        3,
        ["needs 'batch_dims'"],
        id="factory-without-batch-dims",
    ),
    pytest.param(
        "target: user_targets.py:scale_shift\nsequences: {s: [1]}\n"
        "factory: user_targets.py:make_pair\nbatch_dims: {0: [zero]}\n",
        4,
        ["expected a dim index"],
        id="bad-batch-dims",
    ),
    pytest.param(
        "target: logprobs.count_greater_than\nsequences: {a: [1]}\ninputs: [{shape: [B]}]\n",
        3,
        ["built-in targets make their own inputs"],
        id="inputs-for-builtin",
    ),
    pytest.param(
        "target: logprobs.count_greater_than\nsequences: {a: [1]}\n"
        "custom_strategies:\n  mine: {mark: unbaked}\n",
        4,
        ["unknown mark 'unbaked'", "Did you mean 'unbacked'"],
        id="custom-mark",
    ),
    pytest.param(
        "target: logprobs.count_greater_than\nsequences: {a: [1]}\n"
        "custom_strategies:\n  mine: {extends: mark_dynamik}\n",
        4,
        ["unknown strategy 'mark_dynamik'"],
        id="custom-extends",
    ),
    pytest.param(
        "target: logprobs.count_greater_than\nsequences: {a: [1]}\n"
        "custom_strategies:\n  default: {dynamic: true}\n",
        4,
        ["is a built-in strategy"],
        id="custom-shadows-builtin",
    ),
    pytest.param(
        "target: logprobs.count_greater_than\nsequences: {a: [1]}\nrepeats: -1\n",
        3,
        ["expected 0 or more"],
        id="negative-repeats",
    ),
    pytest.param(
        "target: nosuchpkg_xyz.mod:fn\nsequences: {a: [1]}\ninputs: [{shape: [B]}]\n",
        1,
        ["cannot import module", "nosuchpkg_xyz"],
        id="unimportable-module",
    ),
    pytest.param(
        "target: user_targets.py:scale_shfit\nsequences: {s: [1]}\n"
        "inputs: [{shape: [B, 8]}, {shape: [B, 1]}]\n",
        1,
        ["has no attribute 'scale_shfit'", "Did you mean 'scale_shift'"],
        id="missing-callable",
    ),
    pytest.param(
        "target: broken_module.py:fn\nsequences: {s: [1]}\ninputs: [{shape: [B]}]\n",
        1,
        ["importing", "ZeroDivisionError"],
        id="module-raises-on-import",
    ),
]


def render_report(
    report: Report, fmt: str = "table", *, width: int = 120, verbose: bool = False
) -> str:
    """``report`` as `run -f FMT` writes it to a file (or a terminal ``width`` wide)."""
    from recompile_probe.render.formats import Document, Layout, render

    return render(Document.REPORTS, fmt, [report], Layout(width=width, verbose=verbose))


def invoke_at_root(*args: str):
    """The CLI run in-process from the repository root, with no CI root variable set, so file
    paths in annotations are relative to the checkout (as on a CI runner): the CliRunner result."""
    import os

    from typer.testing import CliRunner

    from recompile_probe.cli import app

    env = {k: v for k, v in os.environ.items() if k not in ("GITHUB_WORKSPACE", "CI_PROJECT_DIR")}
    old = os.getcwd()
    os.chdir(ROOT)
    try:
        return CliRunner().invoke(app, list(args), env=env, terminal_width=200)
    finally:
        os.chdir(old)
