"""Known user lines (every line that matters ends in a "# LINE:<name>" marker the
tests look up): a shape branch, a ``range(n)`` loop over a Python int argument, and a graph
break in a helper two calls deep. Compiled with dynamic=True: x's size 8 -> 3 flips the branch
(a recompile on the branch's guard), n 2 -> 3 changes the specialized int."""

import torch


def inner(x):
    torch._dynamo.graph_break() # LINE:graph_break
    return x + 1


def helper(x):
    return inner(x) * 2


def f(x, n):
    if x.shape[0] > 4: # LINE:branch
        x = x * 2
    for i in range(n): # LINE:range
        x = x + i
    return helper(x)


def make_inputs(B, N):  # the factory of a scenario over this program's calls (B: x's size)
    return (torch.ones(B), N)


if __name__ == "__main__":
    compiled = torch.compile(f, backend="eager", dynamic=True)
    compiled(torch.ones(8), 2)
    compiled(torch.ones(3), 2)
    compiled(torch.ones(9), 3)
    print("done")
