"""A data-parallel step as a distributed job runs it: each rank computes on its own shard, then
the ranks all-reduce the result. The last shard of an epoch is ragged on rank 1 (3 rows where
the others have 8), which is the ordinary way one rank ends up recompiling alone.

The driver is what each rank's training loop does per batch: call the compiled step, then join
the collective every rank must join. Torch only; the process group is the one recompile-probe
starts for a scenario with ``ranks:``.
"""

from __future__ import annotations

import torch
import torch.distributed as dist

FEATURES = 16


def step(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    return torch.relu(x @ w).sum(0)


def run(fn, B: int) -> torch.Tensor:
    """One batch of B rows on this rank, then the all-reduce every rank joins."""
    gen = torch.Generator().manual_seed(B)
    x = torch.randn(B, FEATURES, generator=gen)
    w = torch.randn(FEATURES, FEATURES, generator=gen)
    out = fn(x, w)
    if dist.is_available() and dist.is_initialized():
        dist.all_reduce(out)
    return out
