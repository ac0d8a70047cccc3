"""The metrics hook: every record Dynamo appends, logging off, past its deque, through swaps."""

from __future__ import annotations

import collections

import torch
from torch._dynamo.testing import CompileCounter

from recompile_probe.torch_compat import metrics


def _compile_many(n: int) -> CompileCounter:
    counter = CompileCounter()
    f = torch.compile(lambda x: x + 1, backend=counter)
    with torch._dynamo.config.patch(recompile_limit=1000, automatic_dynamic_shapes=False):
        for size in range(1, n + 1):
            f(torch.ones(size))
    return counter


def test_every_record_with_metrics_logging_off_and_past_the_deque():
    torch._dynamo.reset()
    seen: list = []
    with torch._dynamo.config.patch(log_compilation_metrics=False):
        with metrics.metrics_hook(seen.append) as installed:
            assert installed()
            counter = _compile_many(70)
    capacity = metrics.metrics_capacity()
    assert capacity is not None and 70 > capacity  # the deque alone would have lost some
    assert len(seen) == counter.frame_count == 70
    assert [str(r.compile_id) for r in seen] == [f"0/{i}" for i in range(70)]
    torch._dynamo.reset()


def test_nested_hooks_both_see_and_the_plain_deque_comes_back():
    torch._dynamo.reset()
    outer: list = []
    inner: list = []
    with metrics.metrics_hook(outer.append):
        _compile_many(2)
        with metrics.metrics_hook(inner.append):
            _compile_many(3)
        _compile_many(1)
    assert (len(outer), len(inner)) == (6, 3)
    assert type(torch._dynamo.utils._compilation_metrics) is collections.deque
    torch._dynamo.reset()


def test_a_swapped_deque_is_observed_from_the_swap_on():
    torch._dynamo.reset()
    utils = torch._dynamo.utils
    old = metrics.metrics_capacity()
    seen: list = []
    try:
        with metrics.metrics_hook(seen.append):
            utils.set_compilation_metrics_limit(500)  # Dynamo builds a new deque
            _compile_many(4)
        assert len(seen) == 4 and metrics.metrics_capacity() == 500
        assert utils.set_compilation_metrics_limit.__name__ == "set_compilation_metrics_limit"
    finally:
        utils.set_compilation_metrics_limit(old)
        torch._dynamo.reset()


def test_reading_dynamos_counters_adds_no_key_to_them():
    # torch's TestCase prints every key of the counters when a test fails: a key the tool read
    # into being shows up in the user's output (seen on 2.9.1 as "graph_break []")
    from torch._dynamo.utils import counters

    from recompile_probe.torch_compat.metrics import graph_break_count, unique_graphs

    counters.clear()
    assert (graph_break_count(), unique_graphs()) == (0, 0)
    assert dict(counters) == {}
