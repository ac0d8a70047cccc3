"""The suite's own instruments: a counting backend and a reset counter (its truth, for tests).

Every compiled function in cases.py uses ``counting``: each graph Dynamo hands it is noted with
the compile id and the number of resets so far, which the truth plugin maps to functions.
"""

import torch

GRAPHS: list[tuple[int, str]] = []  #: (resets so far, compile id) per graph handed over
EPOCH = [0]  #: torch._dynamo.reset() calls so far (counted by the truth plugin's wrapper)


def counting(gm, example_inputs):
    from torch._guards import CompileContext

    GRAPHS.append((EPOCH[0], str(CompileContext.current_compile_id())))
    return gm.forward


def reset_count() -> None:
    EPOCH[0] += 1


__all__ = ["counting", "torch"]
