"""A serving step with three recompile causes, each on a line you can point at.

    recompile-probe explain examples/which_line.yaml     # the scenario drives `step`
    recompile-probe watch -- python examples/which_line.py

- `if x.shape[0] > 4:` branches on the batch size: the dynamic entry is guarded `5 <= B`, so a
  batch of 3 recompiles, and the guard's origin is the branch;
- `for i in range(n_steps):` turns a Python int into a constant: every new n recompiles;
- `float(...)` in a helper two calls deep breaks the graph.
"""

import torch


def clip_outliers(y):
    if float(y.abs().max()) > 100:  # a graph break: Python needs the tensor's value
        y = y.clamp(-100, 100)
    return y


def postprocess(y):
    return clip_outliers(y).softmax(-1)


def step(x, n_steps):
    y = x * 2
    if x.shape[0] > 4:
        y = y + 1
    for i in range(n_steps):
        y = y + i
    return postprocess(y)


def make_inputs(batch_size):
    # The batch moves, and the number of steps grows with it.
    return torch.randn(batch_size, 8), 1 + batch_size // 4


if __name__ == "__main__":
    compiled = torch.compile(step, backend="eager")
    for b in (8, 9, 3, 16):
        compiled(*make_inputs(b))
