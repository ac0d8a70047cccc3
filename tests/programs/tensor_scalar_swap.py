"""One argument a tensor at some calls and a Python int at others, x growing every call, with
automatic dynamic shapes off and then on (the calls of PyTorch's
test_automatic_dynamic_tensor_scalar_change): with it on, a recompile's first failing guard is
the type check of y, not a size."""

import torch
from torch._dynamo.testing import CompileCounter


def foo(x, y):
    return x * y


def drive():
    cnt = CompileCounter()
    opt = torch.compile(foo, backend=cnt)
    for n, y in ((2, "t"), (3, 3), (4, "t"), (4, "t"), (5, 4), (5, 4), (6, "t")):
        x = torch.randn([n])
        opt(x, torch.randn([n]) if y == "t" else y)
    return cnt


for automatic in (False, True):
    with torch._dynamo.config.patch(
        automatic_dynamic_shapes=automatic, assume_static_by_default=True
    ):
        print(automatic, drive().frame_count)
    torch._dynamo.reset()
