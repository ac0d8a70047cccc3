"""A serving step whose recompiles each come from one marked line (the annotation tests' truth).

Each line a recompile's first failing guard goes back to ends in ``# recompile: <kind>``: the
test reads these markers, not the tool, to know where an annotation belongs.
"""

import torch


def step(x, n_steps):
    y = x * 2  # recompile: static_size_change
    if x.shape[0] > 4:
        y = y + 1
    for i in range(n_steps):  # recompile: python_scalar_change
        y = y + i
    return y.softmax(-1)


def make_inputs(batch_size):
    return torch.randn(batch_size, 8), 1 + batch_size // 4


if __name__ == "__main__":
    compiled = torch.compile(step, backend="eager")
    for b in (8, 9, 3):
        compiled(*make_inputs(b))
