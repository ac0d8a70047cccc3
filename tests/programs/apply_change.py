"""A suggested change applied to the seed op's program as a user pastes it, in a fresh process:
argv[1] is JSON {"lines": [...], "sizes": [...]}. Comment lines are skipped; a
``torch.compile(fn, ...)`` line gives the compile's keywords; a mark line (``mark_dynamic(x, 0)``,
...) runs in eager code right before each call; every other line (imports, config, a ShapeVar)
runs once before compiling. Prints the compiles a CompileCounter saw."""

import json
import re
import sys

import torch
from torch._dynamo.testing import CompileCounter

from recompile_probe.targets.logprobs import count_greater_than

change = json.loads(sys.argv[1])
lines = [ln for ln in change["lines"] if ln.strip() and not ln.lstrip().startswith("#")]
compile_lines = [ln for ln in lines if ln.startswith("torch.compile(fn")]
mark_lines = [ln for ln in lines if re.search(r"\bmark_(dynamic|unbacked)\(", ln)]
once = [ln for ln in lines if ln not in compile_lines and ln not in mark_lines]


def inputs(b):
    return torch.randn(b, 64), torch.randn(b, 1)


scope = {"torch": torch}
x, values = inputs(change["sizes"][0])
scope.update(x=x, values=values)
for line in once:
    exec(line, scope)  # noqa: S102 - the advice, executed as printed
kwargs = {}
for line in compile_lines:
    call = re.sub(r"\s+#.*$", "", line)
    kwargs.update(eval("dict(" + call[len("torch.compile(fn, ") : -1] + ")", scope))  # noqa: S307
counter = CompileCounter()
compiled = torch.compile(count_greater_than, backend=counter, **kwargs)
for b in change["sizes"]:
    x, values = inputs(b)
    scope.update(x=x, values=values)
    for line in mark_lines:
        exec(line, scope)  # noqa: S102
    compiled(scope["x"], scope["values"])
print(counter.frame_count)
