"""Callables for tests/commands/suggest/test_suggest.py: two size symbols each, built so the best
marking is known only after measuring it (tests/commands/suggest/test_suggest.py measures every
marking by hand).

Each factory takes the size symbols as keywords and returns the positional arguments; inputs are
deterministic per point. What each case is for (figures measured with torch 2.13, eager):

- two_kinds: B starts at 1 (mark_dynamic specializes 1: B needs unbacked), the code branches on S
  (an unbacked S cannot be guarded: fullgraph error; S needs dynamic).
- one_needed: y's dim varies but, with use_y=False, the function never reads y, so Dynamo never
  guards it: only x needs a mark, a mark on y changes nothing.
- unrolled: a Python loop over y.shape[0] specializes K: any mark on K is an error (dynamic:
  ConstraintViolationError; unbacked under fullgraph: data-dependent), so marking every dim is
  worse than marking B alone (which still recompiles once when K changes).
- dtype_change: like two_kinds over two arguments, and the last point's x is float64: a recompile
  that no marking removes.
- extra_rows: K is fixed within each sequence and differs between them: unmarked it never
  recompiles, mark_dynamic adds guards, mark_unbacked is a fullgraph error (the code branches on K).
- five_dims: five tensors, each dim 0 following its own symbol (3^5 markings: greedy search).
"""

from __future__ import annotations

import torch


def _gen(*sizes: int) -> torch.Generator:
    seed = 0
    for s in sizes:
        seed = seed * 1009 + s
    return torch.Generator().manual_seed(seed)


def two_kinds(x: torch.Tensor) -> torch.Tensor:
    if x.shape[1] > 4:
        return x.sum(1) * 2
    return x.sum(1)


def make_two_kinds(B: int, S: int) -> tuple:
    return (torch.randn(B, S, generator=_gen(B, S)),)


def one_needed(x: torch.Tensor, y: torch.Tensor, use_y: bool = False) -> torch.Tensor:
    if use_y:
        return x.sum(0) + y.sum()
    return x.sum(0) * 2


def make_one_needed(B: int, S: int) -> tuple:
    g = _gen(B, S)
    return torch.randn(B, 8, generator=g), torch.randn(S, 4, generator=g), False


def unrolled(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    out = x.sum(0)
    for i in range(y.shape[0]):
        out = out + y[i]
    return out


def make_unrolled(B: int, K: int) -> tuple:
    g = _gen(B, K)
    return torch.randn(B, 8, generator=g), torch.randn(K, 8, generator=g)


def dtype_change(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    if w.shape[0] > 4:
        return x.sum(1) * w.sum()
    return x.sum(1)


#: The point whose x is float64 (the last one of the sequence in the test).
FLOAT64_AT = {"B": 8, "S": 16}


def make_dtype_change(B: int, S: int) -> tuple:
    g = _gen(B, S)
    x, w = torch.randn(B, 8, generator=g), torch.randn(S, generator=g)
    if {"B": B, "S": S} == FLOAT64_AT:
        x = x.double()
    return x, w


def five_dims(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor, d: torch.Tensor,
              e: torch.Tensor) -> torch.Tensor:
    return a.sum() + b.sum() + c.sum() + d.sum() + e.sum()


def make_five_dims(A: int, B: int, C: int, D: int, E: int) -> tuple:
    g = _gen(A, B, C, D, E)
    return tuple(torch.randn(n, 4, generator=g) for n in (A, B, C, D, E))


def extra_rows(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    if y.shape[0] > 2:
        return torch.cat([x, y]).sum(0)
    return x.sum(0)


def make_extra_rows(B: int, K: int) -> tuple:
    g = _gen(B, K)
    return torch.randn(B, 8, generator=g), torch.randn(K, 8, generator=g)


def six_following_s(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor, d: torch.Tensor,
                    e: torch.Tensor, f: torch.Tensor) -> torch.Tensor:
    return a.sum() + b.sum() + c.sum() + d.sum() + e.sum() + f.sum()


def make_six_following_s(S: int) -> tuple:
    g = _gen(S)
    return tuple(torch.randn(S, 4, generator=g) for _ in range(6))
