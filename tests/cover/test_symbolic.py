"""The interval reading of one-symbol guards, held to plain evaluation of each size."""

from __future__ import annotations

import itertools

import sympy

from recompile_probe.cover.symbolic import _runs

B = sympy.Symbol("B", integer=True, nonnegative=True)


def _by_evaluation(holds, lo, hi):
    runs = []
    for size in range(lo, hi + 1):
        if holds(size):
            if runs and runs[-1][1] == size - 1:
                runs[-1] = (runs[-1][0], size)
            else:
                runs.append((size, size))
    return runs


def test_every_linear_relation_gives_the_sizes_where_it_holds():
    relations = [sympy.Eq, sympy.Ne, sympy.Lt, sympy.Le, sympy.Gt, sympy.Ge]
    python = {
        sympy.Eq: lambda x, y: x == y,
        sympy.Ne: lambda x, y: x != y,
        sympy.Lt: lambda x, y: x < y,
        sympy.Le: lambda x, y: x <= y,
        sympy.Gt: lambda x, y: x > y,
        sympy.Ge: lambda x, y: x >= y,
    }
    for rel, a, b, c in itertools.product(relations, (-3, -1, 1, 2, 5), (-7, 0, 4), (0, 9, 17)):
        condition = rel(a * B + b, c)
        if condition in (sympy.true, sympy.false):
            continue
        expected = _by_evaluation(
            lambda s, rel=rel, a=a, b=b, c=c: python[rel](a * s + b, c), 0, 40
        )
        assert _runs(condition, B, 0, 40) == expected, condition


def test_chained_bounds_and_their_negation():
    condition = sympy.And(sympy.Le(2, B), sympy.Le(B, 16))
    assert _runs(condition, B, 0, 100) == [(2, 16)]
    assert _runs(sympy.Not(condition), B, 0, 100) == [(0, 1), (17, 100)]
    assert _runs(sympy.Or(sympy.Eq(B, 3), sympy.Ge(B, 90)), B, 0, 100) == [(3, 3), (90, 100)]
