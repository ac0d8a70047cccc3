"""`step` hits its recompile limit (falls back to eager), then ANOTHER function named `step`
recompiles once, for an ordinary reason (a dtype change).

The limit-hit compile's metrics record has co_name=None: a recorder that matches recompile
reasons by name alone gives the second `step`'s recompile the first one's stale reason.
"""

import inspect
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import other_step  # noqa: E402
import torch  # noqa: E402

LIMIT = 2


def step(x):
    return torch.sin(x) + 1


def compile_limited(fn):
    if "recompile_limit" in inspect.signature(torch.compile).parameters:
        return torch.compile(fn, backend="eager", dynamic=False, recompile_limit=LIMIT)
    name = "recompile_limit" if hasattr(torch._dynamo.config, "recompile_limit") \
        else "cache_size_limit"  # older releases
    setattr(torch._dynamo.config, name, LIMIT)
    return torch.compile(fn, backend="eager", dynamic=False)


if __name__ == "__main__":
    limited = compile_limited(step)
    for n in (1, 2, 3, 4, 5):  # 3, 4, 5 are past the limit: eager
        limited(torch.ones(n))
    other_step.compiled(torch.ones(3))
    other_step.compiled(torch.ones(3, dtype=torch.float64))  # one ordinary recompile
    print("done")
