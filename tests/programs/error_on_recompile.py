"""`error_on_recompile`: the recompile raises RecompileError; the program catches it and goes on
to compile (and recompile) another function."""

import torch


def scale(x):
    return x * 2


def shift(x):
    return x + 1


if __name__ == "__main__":
    compiled = torch.compile(scale, backend="eager")
    with torch._dynamo.config.patch(error_on_recompile=True):
        compiled(torch.ones(1))
        try:
            compiled(torch.ones(2))
        except torch._dynamo.exc.RecompileError as exc:
            print("caught RecompileError:", str(exc).splitlines()[0])
    other = torch.compile(shift, backend="eager")
    other(torch.ones(1))
    other(torch.ones(2))
    print("done")
