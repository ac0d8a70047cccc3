"""Scenario validation: every malformed file ends in exit 2 with one paragraph naming the place."""

from __future__ import annotations

import dataclasses
import inspect
import re
import sys

import pytest
from typer.testing import CliRunner

from helpers import GOOD_USER, MALFORMED
from recompile_probe.cli import app
from recompile_probe.errors import ScenarioError
from recompile_probe.scenario.load import load, loads
from recompile_probe.scenario.overrides import with_overrides
from recompile_probe.strategies.builtins import BUILTINS, DEFAULT_STRATEGIES, OPT_IN

# (yaml, line expected in the message or None, substrings expected in the message)


@pytest.mark.parametrize("text, line, expected", MALFORMED)
def test_malformed_scenario_exits_2_naming_the_place(write_scenario, text, line, expected):
    path = write_scenario(text)
    (path.parent / "broken_module.py").write_text("x = 1 / 0\n")
    result = CliRunner().invoke(app, ["run", str(path), "--quiet"])
    output = result.output
    assert result.exit_code == 2, output
    assert "Traceback" not in output
    assert str(path) in output
    if line is not None:
        assert f"{path}:{line}" in output, output
    for fragment in expected:
        assert fragment in output, output


def test_there_are_at_least_25_malformed_cases():
    assert len(MALFORMED) >= 25


def test_validation_happens_before_torch_is_imported(write_scenario):
    import subprocess

    path = write_scenario("target: logprobs.count_greater_than\nsequences: {a: [-1]}\n")
    code = (
        "import sys\nfrom recompile_probe.scenario import load\n"
        f"try:\n    load.load({str(path)!r})\nexcept Exception as e:\n    print(type(e).__name__)\n"
        "print('torch' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True).stdout
    assert out.split() == ["ScenarioError", "False"]


def test_good_scenario_is_frozen_and_complete(write_scenario):
    path = write_scenario(GOOD_USER + "strategies: [mark_unbacked, default, mark_unbacked]\n")
    s = load(path)
    assert s.strategies == ("mark_unbacked", "default")
    assert s.batch_dims == {0: (0,), 1: (0,)}
    assert s.sequences == {"s": (1, 2)}
    assert s.name == "scenario"
    with pytest.raises(dataclasses.FrozenInstanceError):
        s.name = "other"


def test_default_scenario_is_embedded():
    s = load(None)
    assert s.target == "logprobs.count_greater_than"
    assert s.sequences["rl"] == (1, 2, 8)
    assert "mark_unbacked" in s.strategies and "as_is" not in s.strategies
    # no `strategies:`: every built-in but the opt-in knob ones
    assert loads("target: logprobs.count_greater_than\nsequences: [1]\n").strategies == tuple(
        DEFAULT_STRATEGIES
    )
    assert set(BUILTINS) - set(DEFAULT_STRATEGIES) == set(OPT_IN)


def test_compile_takes_every_keyword_of_the_installed_torch_compile():
    """Read from torch's source, without importing it: isolate_recompiles (rejected before),
    name, and the spec keyword of this release; a typo still exits 2 listing them."""
    import subprocess

    base = "target: logprobs.count_greater_than\nsequences: [1]\n"
    code = (
        "import sys\nfrom recompile_probe.scenario.load import loads\n"
        f"s = loads({base!r} + 'compile: {{isolate_recompiles: true, name: step}}')\n"
        "print(dict(s.compile), 'torch' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.stdout.split("} ")[-1].strip() == "False", out.stderr
    assert "'isolate_recompiles': True" in out.stdout
    import torch

    params = set(inspect.signature(torch.compile).parameters) - {"model", "dynamic", "backend"}
    with pytest.raises(ScenarioError) as err:
        loads(base + "compile: {isolate_recompile: true}\n")
    assert "isolate_recompiles" in (err.value.remedy or "")  # did you mean
    with pytest.raises(ScenarioError) as err:
        loads(base + "compile: {zzz: 1}\n")
    assert all(p in (err.value.remedy or "") for p in params), err.value.remedy
    with pytest.raises(ScenarioError) as err:
        loads(base + "compile: {isolate_recompiles: 3}\n")
    assert "true or false" in err.value.message


def test_inputs_parse(write_scenario):
    path = write_scenario(
        "target: user_targets.py:scaled\nsequences: [1, 2]\ninputs:\n"
        "  - {shape: [B, 4], fill: 'randint(0, 7)', dtype: int64}\n"
        "  - {shape: [B], fill: full(2.5)}\n  - {value: {a: 1}}\n  - 3\n"
    )
    s = load(path)
    assert s.sequences == {"sequence": (1, 2)}
    t0, t1, v2, v3 = s.inputs
    assert (t0.fill, t0.low, t0.high, t0.dtype) == ("randint", 0, 7, "int64")
    assert (t1.fill, t1.value) == ("full", 2.5)
    assert v2.value == {"a": 1} and v3.value == 3


@pytest.mark.parametrize(
    "kwargs, fragment",
    [
        ({"strategies": ["mark_unbakced"]}, "Did you mean 'mark_unbacked'"),
        ({"backend": "eagr"}, "Did you mean 'eager'"),
        ({"sequence": []}, "comma-separated"),
    ],
)
def test_overrides_are_validated(kwargs, fragment):
    with pytest.raises(ScenarioError) as info:
        with_overrides(load(None), **kwargs)
    assert fragment in str(info.value)


@pytest.mark.parametrize(
    "args, fragment",
    [
        (["--sequence", "1,x"], "batch sizes are integers"),
        (["--sequence", "1,-2"], "cannot be negative"),
        (["--strategies", "nope"], "unknown strategy 'nope'"),
        (["--format", "yaml"], "unknown format"),
        (["--isolate", "thread"], "expected inline or process"),
        (["--timeout", "5"], "--timeout needs --isolate process"),
    ],
)
def test_bad_flags_exit_2(args, fragment):
    result = CliRunner().invoke(app, ["run", "--quiet", *args])
    assert result.exit_code == 2, result.output
    assert fragment in result.output
    assert re.search(r"Traceback", result.output) is None


def test_empty_batch_dims_is_accepted(write_scenario):
    """The batch need not be a tensor dim (a list of B tensors): `batch_dims: {}` is valid."""
    path = write_scenario(
        "target: user_targets.py:stack_sum\nfactory: user_targets.py:make_list\n"
        "batch_dims: {}\nsequences: {s: [1, 2]}\n"
    )
    assert load(path).batch_dims == {}
    result = CliRunner().invoke(app, ["strategies", str(path)])
    assert result.exit_code == 0, result.output


BUILTIN = "target: logprobs.count_greater_than\nsequences: [1]\n"
USER_DRIVER = (
    "target: user_targets.py:scale_shift\ndriver: user_targets.py:counting_driver\n"
    "dims: {B: {0: [0]}}\nsequences: [1]\n"
)


@pytest.mark.parametrize(
    "text, key, message, remedy",
    [
        (
            BUILTIN + "repeats: -1\n",
            "repeats",
            "expected 0 or more calls to time (an integer), got -1",
            None,
        ),
        (
            BUILTIN + "ranks: 1\n",
            "ranks",
            "expected 2 or more ranks (an integer), got 1",
            "One rank is a single process: drop `ranks:` to run the scenario in one.",
        ),
        (
            BUILTIN + "ranks: 2\ndistributed: {timeout_s: 0}\n",
            "distributed.timeout_s",
            "expected a positive number of seconds, got 0",
            None,
        ),
        (
            BUILTIN + "expect: {default: {max_graphs: -1}}\n",
            "expect.default.max_graphs",
            "expected a non-negative integer, got -1",
            None,
        ),
        (
            BUILTIN + "custom_strategies: {m: {marks: [{argument: 0, dim: -2, kind: dynamic}]}}\n",
            "custom_strategies.m.marks[0].dim",
            "expected a dim (a non-negative integer), got -2",
            None,
        ),
        (
            BUILTIN + "params: {vocab_size: 0}\n",
            "params.vocab_size",
            "expected an integer (1 or more), got 0",
            None,
        ),
        (
            BUILTIN + "custom_strategies: {m: {driver_options: {tag: 1}}}\n",
            "custom_strategies.m.driver_options",
            "driver_options are passed to the scenario's driver, and it has none",
            "Add `driver: file.py:fn` (run(fn, **sizes, **options)), or drop them.",
        ),
        (
            USER_DRIVER + "custom_strategies: {m: {driver_options: {B: 1}}}\n",
            "custom_strategies.m.driver_options.B",
            "'B' is a size symbol: the driver already gets it from each point",
            "Give the option another name.",
        ),
        (
            BUILTIN + "compile: {mode: 3}\n",
            "compile.mode",
            "expected a mode name, got an integer (3)",
            None,
        ),
    ],
)
def test_a_value_out_of_bounds_is_refused_in_one_line(write_scenario, text, key, message, remedy):
    with pytest.raises(ScenarioError) as err:
        load(write_scenario(text))
    assert (err.value.key, err.value.remedy) == (key, remedy)
    where = f"{err.value.path}:{err.value.line}: {key}"
    assert err.value.line and err.value.message == f"{where}: {message}"  # one line, at its place


@pytest.mark.parametrize(
    "line",
    [
        "repeats: 0\n",
        "ranks: 2\n",
        "ranks: 2\ndistributed: {timeout_s: 0.5}\n",
        "expect: {default: {max_graphs: 0}}\n",
        "params: {vocab_size: 1}\n",
        "custom_strategies: {m: {marks: [{argument: 0, dim: 0, kind: dynamic}]}}\n",
    ],
)
def test_a_value_at_its_bound_is_accepted(line):
    loads(BUILTIN + line)


def test_the_strategies_help_names_the_opt_in_strategies():
    from recompile_probe.scenario.keys import TOP_KEYS

    assert (
        "every built-in but the knob ones (static_sources, shapes_spec, isolate_recompiles, "
        "recompile_limit, mark_unbacked_ranges, maybe_mark_dynamic_ranges), and every custom "
        "strategy." in TOP_KEYS["strategies"].help
    )
    assert all(name in TOP_KEYS["strategies"].help for name in OPT_IN)
