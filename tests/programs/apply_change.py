"""Suggested changes applied to the seed op's program as a user pastes them: each argument is
JSON {"lines": [...], "sizes": [...]}, and each runs in a process of its own, forked from this
one after torch is imported and before anything compiled (a fresh interpreter's Dynamo state;
tests/execution/test_warm.py holds such forks to fresh interpreters). Comment lines are skipped;
a ``torch.compile(fn, ...)`` line gives the compile's keywords; a mark line
(``mark_dynamic(x, 0)``, ...) runs in eager code right before each call; every other line
(imports, config, a ShapeVar) runs once before compiling. Prints, one line per argument, the
compiles a CompileCounter saw."""

import json
import os
import re
import sys

import torch
from torch._dynamo.testing import CompileCounter

from recompile_probe.targets.logprobs import count_greater_than


def inputs(b):
    return torch.randn(b, 64), torch.randn(b, 1)


def compiles(change):
    lines = [ln for ln in change["lines"] if ln.strip() and not ln.lstrip().startswith("#")]
    compile_lines = [ln for ln in lines if ln.startswith("torch.compile(fn")]
    mark_lines = [ln for ln in lines if re.search(r"\bmark_(dynamic|unbacked)\(", ln)]
    once = [ln for ln in lines if ln not in compile_lines and ln not in mark_lines]
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
    return counter.frame_count


for arg in sys.argv[1:]:
    sys.stdout.flush()
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            print(compiles(json.loads(arg)), flush=True)
            code = 0
        finally:
            os._exit(code)  # a traceback is on stderr by then
    _, status = os.waitpid(pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"change {arg} failed")
