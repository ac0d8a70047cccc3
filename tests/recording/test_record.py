"""record(): the recorder around user code, checked against CompileCounter and metrics."""

from __future__ import annotations

import torch
from torch._dynamo.testing import CompileCounterWithBackend
from torch._dynamo.utils import get_compilation_metrics

import recompile_probe


def test_record_matches_compile_counter_and_metrics():
    torch._dynamo.reset()
    counter = CompileCounterWithBackend("eager")

    def f(x):
        y = x.sin()
        torch._dynamo.graph_break()
        return y.cos()

    compiled = torch.compile(f, backend=counter)
    with recompile_probe.record() as rec:
        for b in (1, 2, 8):
            compiled(torch.randn(b, 4))
        live = rec.compiles
    assert live == rec.compiles
    metrics = get_compilation_metrics()[-rec.compiles :]
    assert [e.compile_id for e in rec.events] == [str(m.compile_id) for m in metrics]
    assert rec.graphs == counter.frame_count == 4
    assert rec.recompiles == 2
    functions = {s.function: s for s in rec.by_function()}
    assert functions["f"].compiles == 2 and functions["f"].recompiles == 1
    assert "size mismatch" in functions["f"].reasons[0].text
    assert functions["f"].graphs == 2 and functions["f"].graph_breaks == 2
    assert functions["f"].reasons[0].kind == "zero_one_specialization"
    assert "2 recompiles" in rec.explain()


def test_record_sees_nothing_outside_its_block():
    torch._dynamo.reset()
    compiled = torch.compile(lambda x: x + 1, backend="eager")
    compiled(torch.randn(3))
    with recompile_probe.record() as rec:
        compiled(torch.randn(3))  # a cache hit
    compiled(torch.randn(5))  # after the block
    assert (rec.compiles, rec.recompiles, rec.graphs) == (0, 0, 0)


def test_importing_the_package_does_not_import_torch():
    import subprocess
    import sys

    out = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys, recompile_probe, "
            "recompile_probe.pytest_plugin; print('torch' in sys.modules)",
        ],
        capture_output=True,
        text=True,
    )
    assert out.stdout.strip() == "False"
