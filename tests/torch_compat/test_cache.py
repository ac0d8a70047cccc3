"""Looking at a cache entry's guards leaves the program's next recompile as it would be: the
reason Dynamo names (its first failing guard, in the guard tree's order) is the one a program
that never looked gets."""

from __future__ import annotations

import torch
from torch._dynamo.utils import get_compilation_metrics

from recompile_probe.torch_compat.cache import accepts, cache_entries


class Flag:
    def __init__(self, on: bool = False) -> None:
        self.on = on


def branch(x, flag):
    if not flag.on:
        return x + 1
    return x - 1


def _reason_after(look) -> str:
    """The recompile reason of a call that fails both guards (x's size and flag.on), after
    ``look(entry)`` ran on locals that fail only the flag's guard."""
    torch._dynamo.reset()
    compiled = torch.compile(branch, backend="eager")
    compiled(torch.randn(3), Flag())
    (entry,) = cache_entries(branch.__code__)
    for _ in range(5):
        look(entry, {"x": torch.randn(3), "flag": Flag(True)})
    compiled(torch.randn(4), Flag(True))
    reason = get_compilation_metrics()[-1].recompile_reason
    torch._dynamo.reset()
    return reason


def test_accepts_tells_a_failing_entry_and_leaves_the_guard_order_alone():
    told = []
    untouched = _reason_after(lambda entry, f_locals: None)
    looked = _reason_after(lambda entry, f_locals: told.append(accepts(entry, f_locals)))
    assert told == [False] * 5
    assert looked == untouched
    assert "size mismatch" in untouched  # the tree's own first failing guard


def test_the_plain_check_would_have_reordered_it():
    """Why accepts does not use guard_manager.check: its failures sort the tree."""
    reordered = _reason_after(lambda entry, f_locals: entry.guard_manager.check(f_locals))
    assert "flag.on" in reordered and "size mismatch" not in reordered


def test_accepts_says_yes_for_the_locals_it_was_compiled_for():
    torch._dynamo.reset()
    compiled = torch.compile(branch, backend="eager")
    compiled(torch.randn(3), Flag())
    (entry,) = cache_entries(branch.__code__)
    assert accepts(entry, {"x": torch.randn(3), "flag": Flag()}) is True
    torch._dynamo.reset()
