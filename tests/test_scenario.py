"""Scenario validation: every malformed file ends in exit 2 with one paragraph naming the place."""

from __future__ import annotations

import re
import sys

import pytest
from typer.testing import CliRunner

from recompile_probe import scenario as scenario_mod
from recompile_probe.cli import app
from recompile_probe.errors import ScenarioError
from recompile_probe.strategies import BUILTINS

GOOD_USER = """\
target: user_targets.py:scale_shift
inputs:
  - {shape: [B, 8]}
  - {shape: [B, 1]}
sequences: {s: [1, 2]}
"""

# (yaml, line expected in the message or None, substrings expected in the message)
MALFORMED = [
    pytest.param("target: [unclosed\n", 2, ["expected ',' or ']'", "at line 1"],
                 id="yaml-syntax"),
    pytest.param("name: x\n  bad: indent\n", 2, ["mapping values are not allowed"],
                 id="yaml-indent"),
    pytest.param("", None, ["empty"], id="empty-file"),
    pytest.param("- just\n- a list\n", 1, ["expected a mapping"], id="top-level-list"),
    pytest.param("target: logprobs.count_greater_than\nsequencs: {a: [1]}\n", 2,
                 ["unknown key 'sequencs'", "Did you mean 'sequences'"], id="misspelt-top-key"),
    pytest.param("sequences: {a: [1]}\n", None, ["missing required key 'target'"],
                 id="missing-target"),
    pytest.param("target: logprobs.count_greater_than\n", None,
                 ["missing required key 'sequences'"], id="missing-sequences"),
    pytest.param("target: logprobs.count_greater_thn\nsequences: {a: [1]}\n", 1,
                 ["unknown built-in target", "Did you mean 'logprobs.count_greater_than'"],
                 id="unknown-builtin-target"),
    pytest.param("target: 42\nsequences: {a: [1]}\n", 1, ["expected a target name"],
                 id="target-not-string"),
    pytest.param("target: nowhere.py:fn\nsequences: {a: [1]}\ninputs: [{shape: [B]}]\n", 1,
                 ["does not exist"], id="missing-target-file"),
    pytest.param("target: logprobs.count_greater_than\nsequences: {a: []}\n", 2,
                 ["non-empty list"], id="empty-sequence"),
    pytest.param("target: logprobs.count_greater_than\nsequences: {a: [1, -2]}\n", 2,
                 ["cannot be negative"], id="negative-batch"),
    pytest.param("target: logprobs.count_greater_than\nsequences: {a: [1, 2.5]}\n", 2,
                 ["expected a batch size", "2.5"], id="float-batch"),
    pytest.param("target: logprobs.count_greater_than\nsequences: {a: [1, two]}\n", 2,
                 ["expected a batch size", "two"], id="string-batch"),
    pytest.param("target: logprobs.count_greater_than\nsequences: {a: [true]}\n", 2,
                 ["boolean"], id="bool-batch"),
    pytest.param("target: logprobs.count_greater_than\nsequences: {}\n", 2,
                 ["at least one sequence"], id="no-sequences"),
    pytest.param("target: logprobs.count_greater_than\nsequences: {a: [1]}\n"
                 "strategies: [default, mark_unbaked]\n", 3,
                 ["unknown strategy 'mark_unbaked'", "Did you mean 'mark_unbacked'"],
                 id="unknown-strategy"),
    pytest.param("target: logprobs.count_greater_than\nsequences: {a: [1]}\nbackend: indutor\n", 3,
                 ["unknown backend", "Did you mean 'inductor'"], id="unknown-backend"),
    pytest.param("target: logprobs.count_greater_than\nsequences: {a: [1]}\n"
                 "params: {vocab_sise: 3}\n", 3,
                 ["unknown key 'vocab_sise'", "Did you mean 'vocab_size'"], id="unknown-param"),
    pytest.param("target: logprobs.count_greater_than\nsequences: {a: [1]}\n"
                 "params: {vocab_size: big}\n", 3, ["expected an integer"], id="param-type"),
    pytest.param("target: logprobs.count_greater_than\nsequences: {a: [1]}\n"
                 "compile: {dynamic: true}\n", 3, ["set by each strategy"], id="compile-dynamic"),
    pytest.param("target: logprobs.count_greater_than\nsequences: {a: [1]}\n"
                 "compile: {fulgraph: true}\n", 3,
                 ["unknown key 'fulgraph'", "Did you mean 'fullgraph'"], id="compile-key"),
    pytest.param("target: !!python/object/apply:os.system [echo hi]\nsequences: {a: [1]}\n", 1,
                 ["not allowed", "safe_load"], id="python-tag"),
    pytest.param("target: logprobs.count_greater_than\ntarget: logprobs.gather_logprobs\n"
                 "sequences: {a: [1]}\n", 2, ["duplicate key 'target'"], id="duplicate-key"),
    # Capital identifiers are size symbols (N is one); anything else in a shape is refused.
    pytest.param(GOOD_USER.replace("[B, 8]", "[n, 8]"), 3,
                 ["'n' is not a size symbol"], id="bad-shape-symbol"),
    pytest.param(GOOD_USER.replace("[B, 8]", "[B, -8]"), 3, ["cannot be negative"],
                 id="negative-dim"),
    pytest.param(GOOD_USER.replace("{shape: [B, 8]}", "{shape: [B, 8], dtype: flaot32}"), 3,
                 ["unknown dtype", "Did you mean 'float32'"], id="bad-dtype"),
    pytest.param(GOOD_USER.replace("{shape: [B, 8]}", "{shape: [B, 8], fill: randnn}"), 3,
                 ["unknown fill", "Did you mean 'randn'"], id="bad-fill"),
    pytest.param(GOOD_USER.replace("{shape: [B, 8]}", "{shape: [B, 8], fill: 'randint(5, 1)'}"),
                 3, ["low < high"], id="bad-randint"),
    pytest.param(GOOD_USER.replace("{shape: [B, 8]}", "{shap: [B, 8]}"), 3,
                 ["unknown key 'shap'", "Did you mean 'shape'"], id="tensor-key"),
    pytest.param(GOOD_USER.replace("[B, 1]", "[8, 1]").replace("[B, 8]", "[8, 8]"), 2,
                 ["no tensor has a 'B' dim"], id="no-batch-dim"),
    pytest.param("target: user_targets.py:scale_shift\nsequences: {s: [1]}\n", 1,
                 ["exactly one of 'inputs' or 'factory'"], id="no-inputs"),
    pytest.param("target: user_targets.py:scale_shift\nsequences: {s: [1]}\n"
                 "factory: user_targets.py:make_pair\n", 3, ["needs 'batch_dims'"],
                 id="factory-without-batch-dims"),
    pytest.param("target: user_targets.py:scale_shift\nsequences: {s: [1]}\n"
                 "factory: user_targets.py:make_pair\nbatch_dims: {0: [zero]}\n", 4,
                 ["expected a dim index"], id="bad-batch-dims"),
    pytest.param("target: logprobs.count_greater_than\nsequences: {a: [1]}\n"
                 "inputs: [{shape: [B]}]\n", 3, ["built-in targets make their own inputs"],
                 id="inputs-for-builtin"),
    pytest.param("target: logprobs.count_greater_than\nsequences: {a: [1]}\n"
                 "custom_strategies:\n  mine: {mark: unbaked}\n", 4,
                 ["unknown mark 'unbaked'", "Did you mean 'unbacked'"], id="custom-mark"),
    pytest.param("target: logprobs.count_greater_than\nsequences: {a: [1]}\n"
                 "custom_strategies:\n  mine: {extends: mark_dynamik}\n", 4,
                 ["unknown strategy 'mark_dynamik'"], id="custom-extends"),
    pytest.param("target: logprobs.count_greater_than\nsequences: {a: [1]}\n"
                 "custom_strategies:\n  default: {dynamic: true}\n", 4,
                 ["is a built-in strategy"], id="custom-shadows-builtin"),
    pytest.param("target: logprobs.count_greater_than\nsequences: {a: [1]}\nrepeats: -1\n", 3,
                 ["expected 0 or more"], id="negative-repeats"),
    pytest.param("target: nosuchpkg_xyz.mod:fn\nsequences: {a: [1]}\n"
                 "inputs: [{shape: [B]}]\n", 1, ["cannot import module", "nosuchpkg_xyz"],
                 id="unimportable-module"),
    pytest.param("target: user_targets.py:scale_shfit\nsequences: {s: [1]}\n"
                 "inputs: [{shape: [B, 8]}, {shape: [B, 1]}]\n", 1,
                 ["has no attribute 'scale_shfit'", "Did you mean 'scale_shift'"],
                 id="missing-callable"),
    pytest.param("target: broken_module.py:fn\nsequences: {s: [1]}\n"
                 "inputs: [{shape: [B]}]\n", 1, ["importing", "ZeroDivisionError"],
                 id="module-raises-on-import"),
]


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
    code = ("import sys\nfrom recompile_probe import scenario\n"
            f"try:\n    scenario.load({str(path)!r})\nexcept Exception as e:\n    print(type(e).__name__)\n"
            "print('torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True).stdout
    assert out.split() == ["ScenarioError", "False"]


def test_good_scenario_is_frozen_and_complete(write_scenario):
    path = write_scenario(GOOD_USER + "strategies: [mark_unbacked, default, mark_unbacked]\n")
    s = scenario_mod.load(path)
    assert s.strategies == ("mark_unbacked", "default")
    assert s.batch_dims == {0: (0,), 1: (0,)}
    assert s.sequences == {"s": (1, 2)}
    assert s.name == "scenario"
    with pytest.raises(Exception):
        s.name = "other"  # frozen


def test_default_scenario_is_embedded():
    s = scenario_mod.load(None)
    assert s.target == "logprobs.count_greater_than"
    assert s.sequences["rl"] == (1, 2, 8)
    assert "mark_unbacked" in s.strategies and "as_is" not in s.strategies
    assert scenario_mod.loads("target: logprobs.count_greater_than\nsequences: [1]\n").strategies \
        == tuple(BUILTINS)


def test_inputs_parse(write_scenario):
    path = write_scenario("target: user_targets.py:scaled\nsequences: [1, 2]\ninputs:\n"
                          "  - {shape: [B, 4], fill: 'randint(0, 7)', dtype: int64}\n"
                          "  - {shape: [B], fill: full(2.5)}\n  - {value: {a: 1}}\n  - 3\n")
    s = scenario_mod.load(path)
    assert s.sequences == {"sequence": (1, 2)}
    t0, t1, v2, v3 = s.inputs
    assert (t0.fill, t0.low, t0.high, t0.dtype) == ("randint", 0, 7, "int64")
    assert (t1.fill, t1.value) == ("full", 2.5)
    assert v2.value == {"a": 1} and v3.value == 3


@pytest.mark.parametrize("kwargs, fragment", [
    ({"strategies": ["mark_unbakced"]}, "Did you mean 'mark_unbacked'"),
    ({"backend": "eagr"}, "Did you mean 'eager'"),
    ({"sequence": []}, "comma-separated"),
])
def test_overrides_are_validated(kwargs, fragment):
    with pytest.raises(ScenarioError) as info:
        scenario_mod.with_overrides(scenario_mod.load(None), **kwargs)
    assert fragment in str(info.value)


@pytest.mark.parametrize("args, fragment", [
    (["--sequence", "1,x"], "batch sizes are integers"),
    (["--sequence", "1,-2"], "cannot be negative"),
    (["--strategies", "nope"], "unknown strategy 'nope'"),
    (["--format", "yaml"], "unknown format"),
    (["--isolate", "thread"], "expected inline or process"),
    (["--timeout", "5"], "--timeout needs --isolate process"),
])
def test_bad_flags_exit_2(args, fragment):
    result = CliRunner().invoke(app, ["run", "--quiet", *args])
    assert result.exit_code == 2, result.output
    assert fragment in result.output
    assert re.search(r"Traceback", result.output) is None


def test_empty_batch_dims_is_accepted(write_scenario):
    """The batch need not be a tensor dim (a list of B tensors): `batch_dims: {}` is valid."""
    path = write_scenario("target: user_targets.py:stack_sum\nfactory: user_targets.py:make_list\n"
                          "batch_dims: {}\nsequences: {s: [1, 2]}\n")
    assert scenario_mod.load(path).batch_dims == {}
    result = CliRunner().invoke(app, ["strategies", str(path)])
    assert result.exit_code == 0, result.output
