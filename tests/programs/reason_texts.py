"""Four recompile stories whose texts are easy to misread, each counted by the program
itself (a CompileCounter per story) so a test can compare the tool's figures with Dynamo's:

- aliasing: ``add(x, x)`` then ``add(x, y)`` (``a is b``), and after a reset ``add(x, y)`` then
  ``add(x, x)`` (``Duplicate tensors found: ["a", "b"]``);
- an int guard made inside an inlined helper: ``outer(x, 3)`` then ``outer(x, 4)``; Dynamo writes
  a "User stack trace" naming ``return helper(y, n)`` in outer, then the helper's line;
- a new backend callable per torch.compile call (BACKEND_MATCH with object ids), four calls;
- torch's own assertion: two tensors marked unbacked with one shape_id but different sizes
  ("Guard failed on the same frame it was created"), caught.
"""

import inspect
import json
import sys

import torch
from torch._dynamo.decorators import mark_unbacked
from torch._dynamo.testing import CompileCounter


def add(a, b):
    return a + b


def helper(y, n):
    return y * n


def outer(y, n):
    return helper(y, n)


def step(x):
    return x + 1


def total(x, y):
    return x.sum() + y.sum()


def make_backend(counter):
    def backend(gm, example_inputs):
        counter.frame_count += 1
        return gm.forward

    return backend


if __name__ == "__main__":
    x, y = torch.randn(3), torch.randn(3)
    counts = {}
    aliasing = CompileCounter()
    compiled = torch.compile(add, backend=aliasing)
    compiled(x, x)
    compiled(x, y)
    torch._dynamo.reset()
    compiled = torch.compile(add, backend=aliasing)
    compiled(x, y)
    compiled(x, x)
    counts["add"] = aliasing.frame_count
    inlined = CompileCounter()
    compiled = torch.compile(outer, backend=inlined)
    compiled(x, 3)
    compiled(x, 4)
    counts["outer"] = inlined.frame_count
    backends = CompileCounter()
    for _ in range(4):
        torch.compile(step, backend=make_backend(backends))(x)
    counts["step"] = backends.frame_count
    a, b = torch.randn(3), torch.randn(5)
    # shape_id is torch 2.13's: before it, no story (and "internal_error" says why)
    counts["internal_error"] = "n/a: mark_unbacked takes no shape_id"
    if "shape_id" in inspect.signature(mark_unbacked).parameters:
        mark_unbacked(a, 0, shape_id="batch")
        mark_unbacked(b, 0, shape_id="batch")
        try:
            torch.compile(total, backend="eager")(a, b)
            counts["internal_error"] = None
        except AssertionError as e:
            counts["internal_error"] = str(e).splitlines()[0]
    # Dynamo's own records, per function: recompiles (a recompile reason) and failed compiles
    from torch._dynamo.utils import get_compilation_metrics

    dynamo: dict = {}
    for m in get_compilation_metrics():
        mine = dynamo.setdefault(m.co_name, {"compiles": 0, "recompiles": 0, "failed": 0})
        mine["compiles"] += 1
        mine["recompiles"] += bool(m.recompile_reason)
        mine["failed"] += m.fail_type is not None
    counts["dynamo"] = dynamo
    # the recompile reasons Dynamo gave the backend changes (torch 2.9 names no guard: "0/1: ")
    # the inlined helper's int guard: does this torch write a user stack under it? (2.13 on)
    counts["outer_user_stack"] = any(
        "User stack trace:" in (m.recompile_reason or "")
        for m in get_compilation_metrics()
        if m.co_name == "outer"
    )
    counts["step_reasons"] = [
        m.recompile_reason
        for m in get_compilation_metrics()
        if m.co_name == "step" and m.recompile_reason
    ]
    print("COUNTS " + json.dumps(counts))
    sys.exit(0)
