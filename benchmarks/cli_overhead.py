"""What the tool costs on top of the work it measures.

Times `recompile-probe run` on the default scenario (a fresh process each time, import included)
against a bare script in one process doing the same compiles and calls by hand: reset, a
CompileCounter per (strategy, sequence), marks before each call, an eager comparison per call and
the same steady-state repeats. Prints the median of several runs of each and their ratio.

    .venv/bin/python benchmarks/cli_overhead.py [--runs 5]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time

BARE = r"""
import torch
from torch._dynamo.testing import CompileCounterWithBackend
from torch._dynamo.decorators import mark_unbacked

def count_greater_than(x, values):
    return (x >= values).sum(-1)

def inputs(b):
    g = torch.Generator().manual_seed(b)
    return torch.randn(b, 4096, generator=g), torch.randn(b, 1, generator=g)

MARK = {"mark_dynamic": torch._dynamo.mark_dynamic,
        "maybe_mark_dynamic": torch._dynamo.maybe_mark_dynamic,
        "mark_unbacked": mark_unbacked, "backed_size_oblivious": torch._dynamo.mark_dynamic}
DYNAMIC = {"static": False, "dynamic_true": True}
CONFIG = {"unbacked_sources": (torch.compiler.config, "unbacked_sources", "L['x']:0,L['values']:0"),
          "backed_size_oblivious": (torch.fx.experimental._config, "backed_size_oblivious", True),
          "auto_unbacked": (torch._dynamo.config, "automatic_dynamic_shapes_mark_as", "unbacked")}
STRATEGIES = ["default", "static", "dynamic_true", "mark_dynamic", "maybe_mark_dynamic",
              "mark_unbacked", "unbacked_sources", "backed_size_oblivious", "auto_unbacked"]
SEQUENCES = [[1, 2, 8], [4, 4, 1, 1, 16]]
for seq in SEQUENCES:
    ref = {b: count_greater_than(*inputs(b)) for b in seq}
    for name in STRATEGIES:
        torch._dynamo.reset()
        cnt = CompileCounterWithBackend("eager")
        f = torch.compile(count_greater_than, backend=cnt, dynamic=DYNAMIC.get(name))
        module, attr, value = CONFIG.get(name, (None, None, None))
        with (module.patch(attr, value) if module else torch._dynamo.config.patch()):
            for b in seq:
                x, v = inputs(b)
                if name in MARK:
                    MARK[name](x, 0); MARK[name](v, 0)
                torch.testing.assert_close(f(x, v), ref[b])
            for _ in range(21):
                if name in MARK:
                    MARK[name](x, 0); MARK[name](v, 0)
                f(x, v)
"""


def timed(cmd: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    cli = [sys.executable, "-m", "recompile_probe", "run", "--quiet", "--format", "json"]
    bare = [sys.executable, "-c", BARE]
    timed(bare)  # warm the file cache
    cli_times, bare_times = [], []
    for _ in range(args.runs):  # interleaved, so drift hits both alike
        cli_times.append(timed(cli))
        bare_times.append(timed(bare))
    c, b = statistics.median(cli_times), statistics.median(bare_times)
    print(f"recompile-probe run (default scenario): median {c:.2f} s over {args.runs} runs")
    print(f"bare script, same compiles and calls:   median {b:.2f} s over {args.runs} runs")
    print(f"ratio: {c / b:.2f}")


if __name__ == "__main__":
    main()
