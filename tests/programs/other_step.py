"""A second function named `step`, in its own module: same co_name, another code object."""

import torch


def step(x):
    return torch.cos(x) - 1


compiled = torch.compile(step, backend="eager")
