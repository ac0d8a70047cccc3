"""A test suite in the style projects copy from PyTorch (torch._dynamo.test_case.TestCase: metrics
logging off, a reset and counters.clear() around every test). Copied as test_cases.py and run by
tests/commands/test_watch_suites.py; one test fails on purpose."""

import torch
from suite_truth import counting
from torch._dynamo import config
from torch._dynamo.test_case import TestCase


def many(x):
    return x + 1


def limited(x):
    return x * 2


def full(x):
    return x - 1


def before_reset(x):
    return x.sin()


def after_reset(x):
    return x.cos()


def broken(x):
    y = x.sin()
    torch._dynamo.graph_break()
    return y.cos()


def failing(x):
    return x.exp()


class TestRecompiles(TestCase):
    def test_more_compiles_than_dynamo_keeps(self):
        # 70 compiles with metrics logging off: Dynamo's deque keeps the last 64
        with config.patch(recompile_limit=1000, automatic_dynamic_shapes=False):
            f = torch.compile(many, backend=counting)
            for n in range(1, 71):
                f(torch.ones(n))

    def test_recompile_limit(self):
        with config.patch(recompile_limit=2, automatic_dynamic_shapes=False):
            f = torch.compile(limited, backend=counting)
            for n in (1, 2, 3, 4):
                f(torch.ones(n))

    def test_recompile_limit_under_fullgraph(self):
        with config.patch(recompile_limit=1):
            f = torch.compile(full, backend=counting, fullgraph=True, dynamic=False)
            f(torch.ones(2))
            with self.assertRaises(torch._dynamo.exc.FailOnRecompileLimitHit):
                f(torch.ones(2, dtype=torch.float64))

    def test_reset_inside_the_test(self):
        f = torch.compile(before_reset, backend=counting, dynamic=False)
        f(torch.ones(1))
        f(torch.ones(2))
        torch._dynamo.reset()  # frame ids start again at 0: after_reset's are before_reset's
        with config.patch(recompile_limit=1):
            g = torch.compile(after_reset, backend=counting, dynamic=False)
            g(torch.ones(1))
            g(torch.ones(2))  # past the limit: the failed record names no function

    def test_counters_cleared_between_compiles(self):
        f = torch.compile(broken, backend=counting)
        f(torch.ones(2))
        torch._dynamo.utils.counters.clear()
        f(torch.ones(3, dtype=torch.float64))

    def test_a_local_f_that_breaks(self):
        def f(x):
            y = x.sin()
            torch._dynamo.graph_break()
            return y.cos()

        torch.compile(f, backend=counting)(torch.ones(2))

    def test_another_local_f_that_does_not(self):
        # the same name in the same file: its graph breaks are its own (none), not the other f's
        def f(x):
            return x.tan()

        torch.compile(f, backend=counting)(torch.ones(2))

    def test_that_fails(self):
        f = torch.compile(failing, backend=counting, dynamic=False)
        f(torch.ones(1))
        f(torch.ones(2))
        self.assertEqual(1, 2)
