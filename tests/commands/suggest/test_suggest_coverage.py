"""suggest with a declared coverage range: the answer is proved over it, and holds in a plain
program (its marks pasted before each call: no size of the range compiles)."""

from __future__ import annotations

import dataclasses

import torch
from torch._dynamo.testing import CompileCounter

from helpers import CONFIGS
from recompile_probe.commands.suggest.run import suggest
from recompile_probe.scenario.load import load
from recompile_probe.targets.logprobs import count_greater_than

MARKS = {
    "unbacked": torch._dynamo.decorators.mark_unbacked,
    "dynamic": torch._dynamo.mark_dynamic,
}


def test_the_recommendation_is_proved_over_the_range_and_serves_it_in_a_plain_program():
    scenario = dataclasses.replace(load(CONFIGS / "coverage.yaml"), repeats=5)
    found = suggest(scenario)
    best = found.recommendation
    assert best is not None and best.covered is True
    assert best.coverage_note == "proved over B ∈ [1, 4096]"
    # every candidate that is not proved ranks after every proved one
    covered = [bool(e.covered) for e in found.candidates if e.status == "ok"]
    assert covered == sorted(covered, reverse=True)
    assert best.marks, best  # a marking for this op (x:0 and values:0)
    torch._dynamo.reset()
    counter = CompileCounter()
    compiled = torch.compile(count_greater_than, backend=counter)
    names = {"x": 0, "values": 1}

    def call(size):
        args = (torch.randn(size, 4096), torch.randn(size, 1))
        for m in best.marks:
            MARKS[m.kind](args[names[m.name]], m.dim)
        compiled(*args)

    for size in (4, 8):
        call(size)
    first = counter.frame_count
    for size in (1, 2, 3, 97, 4096):
        call(size)
    assert counter.frame_count == first
