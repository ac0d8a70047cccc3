"""The pytest plugin, driven through pytester like a user's own test suite."""

from __future__ import annotations

import json

import pytest

pytestmark = pytest.mark.slow

SAMPLER = '''
import pytest
import torch

@torch.compile(backend="eager", dynamic=True)
def count_greater_than(x, values):
    return (x >= values).sum(-1)

def make_inputs(b):
    return torch.randn(b, 64), torch.randn(b, 1)

def marked(b):
    x, v = make_inputs(b)
    torch._dynamo.decorators.mark_unbacked(x, 0)
    torch._dynamo.decorators.mark_unbacked(v, 0)
    return x, v
'''


def test_marker_fails_a_recompiling_test_and_passes_a_clean_one(pytester):
    pytester.makepyfile(SAMPLER + '''
@pytest.mark.max_recompiles(0, reset=True)
def test_vllm_before_the_fix():
    for b in (1, 2, 8):
        count_greater_than(*make_inputs(b))

@pytest.mark.max_recompiles(0, reset=True)
def test_vllm_after_the_fix():
    for b in (1, 2, 8):
        count_greater_than(*marked(b))

@pytest.mark.max_compiles(1, reset=True)
def test_max_compiles_holds():
    for b in (1, 2, 8):
        count_greater_than(*marked(b))
''')
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines([
        "*test_vllm_before_the_fix*",
        "*torch.compile budget exceeded: max_recompiles(0): 1 recompiles*",
        "*tensor 'x' size mismatch at index 0. expected 1, actual 2*",
    ])


def test_fixture_and_report(pytester, tmp_path):
    pytester.makepyfile(SAMPLER + '''
def test_uses_fixture(recompile_recorder):
    torch._dynamo.reset()
    for b in (1, 2, 8):
        count_greater_than(*make_inputs(b))
    assert recompile_recorder.recompiles == 1
    assert recompile_recorder.compiles == 2
    assert recompile_recorder.graphs == 2
    (f,) = recompile_recorder.by_function()
    assert f.function == "count_greater_than"

def test_plain():
    assert True
''')
    report = tmp_path / "recompiles.json"
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider",
                                           f"--recompile-report={report}")
    result.assert_outcomes(passed=2)
    data = json.loads(report.read_text())
    by = {t["nodeid"].split("::")[1]: t for t in data["tests"]}
    assert by["test_uses_fixture"]["recompiles"] == 1
    (reason,) = by["test_uses_fixture"]["functions"][0]["reasons"]
    origin = reason.pop("origin")  # where x was first used: a static size has no creating line
    assert reason == {"kind": "zero_one_specialization", "count": 1,
                      "text": "tensor 'x' size mismatch at index 0. expected 1, actual 2"}
    assert origin["role"] == "first_use" and origin["function"] == "count_greater_than"
    assert by["test_plain"]["compiles"] == 0


def test_bad_marker_argument_is_a_usage_error(pytester):
    pytester.makepyfile('''
import pytest

@pytest.mark.max_recompiles("zero")
def test_x():
    pass
''')
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    assert result.ret != 0
    result.stderr.fnmatch_lines(["*takes one non-negative integer*"])


def test_fixture_and_marker_nested_both_see_every_compile(pytester, tmp_path):
    # Two recorders at once (the fixture's around the marker's): each sees the same compiles,
    # and Dynamo's own records (grouped by frame id) agree with both.
    pytester.makepyfile(SAMPLER + '''
from torch._dynamo.utils import get_compilation_metrics

@pytest.mark.max_recompiles(0, reset=True)
def test_nested(recompile_recorder):
    before = len(get_compilation_metrics())
    for b in (1, 2, 8):
        count_greater_than(*make_inputs(b))
    records = get_compilation_metrics()[before:]
    assert recompile_recorder.compiles == len(records) == 2
    assert recompile_recorder.recompiles == sum((m.cache_size or 0) > 0 for m in records) == 1
''')
    report = tmp_path / "figures.json"
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider",
                                           f"--recompile-report={report}")
    result.assert_outcomes(failed=1)  # the marker's budget, not the body's asserts
    result.stdout.fnmatch_lines(["*max_recompiles(0): 1 recompiles*"])
    (test,) = json.loads(report.read_text())["tests"]
    assert (test["compiles"], test["recompiles"]) == (2, 1)
