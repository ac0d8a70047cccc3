"""recompile_probe.coverage() on a function a test warmed itself, held to its real calls."""

from __future__ import annotations

import pytest
import torch
from torch._dynamo.testing import CompileCounter

import recompile_probe
from helpers import PROGRAMS, import_file

cases = import_file(PROGRAMS / "coverage" / "cases.py", "coverage_cases_api")


def _warmed(make):
    torch._dynamo.reset()
    counter = CompileCounter()
    compiled = torch.compile(cases.compare_sum, backend=counter)
    for size in (4, 8):
        compiled(*make(size))
    return compiled, counter


def test_a_warmed_function_names_its_counterexample_and_a_real_call_compiles_there():
    compiled, counter = _warmed(cases.two_inputs)
    found = recompile_probe.coverage(compiled, lambda B: cases.two_inputs(B), B=(1, 4096))
    assert found.method == "proved" and found.scope == "every frame"
    assert found.counterexample == {"B": 1}
    assert [u.sizes for u in found.unserved] == [{"B": (1, 1)}]
    with pytest.raises(AssertionError, match=r"B = 1 recompiles.*2 <= L\['"):
        recompile_probe.assert_no_recompile(found)
    recompile_probe.assert_no_recompile(found, B=(2, 4096))  # the served part holds
    for size in (2, 97, 4096):  # served: nothing compiles
        before = counter.frame_count
        compiled(*cases.two_inputs(size))
        assert counter.frame_count == before, size
    before = counter.frame_count
    compiled(*cases.two_inputs(1))
    assert counter.frame_count == before + 1  # the counterexample compiles


def test_marks_the_factory_applies_are_the_calls_own_and_unbacked_is_proved():
    def make(B):
        args = cases.two_inputs(B)
        for t in args:
            torch._dynamo.decorators.mark_unbacked(t, 0)
        return args

    compiled, counter = _warmed(make)
    found = recompile_probe.coverage(compiled, make, B=(0, 4096))
    assert found.proved and found.counterexample is None
    recompile_probe.assert_no_recompile(found)
    for size in (0, 1, 4095):
        before = counter.frame_count
        compiled(*make(size))
        assert counter.frame_count == before, size


def test_a_mistake_is_a_plain_error():
    compiled, _ = _warmed(cases.two_inputs)
    with pytest.raises(TypeError, match="needs a range"):
        recompile_probe.coverage(compiled, cases.two_inputs)
    with pytest.raises(TypeError, match=r"B: expected \(lo, hi\)"):
        recompile_probe.coverage(compiled, cases.two_inputs, B=(9, 1))
