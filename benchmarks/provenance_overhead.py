"""What does provenance (provenance/: the user line of each guard) cost at compile time?

Target: compile time with provenance on <= 1.10x compile time with it off. One round = a fresh
Dynamo state, a program compiled for 3 shapes (3 compiles: static, automatic dynamic, a branch
flipped), then the cache entries read as a run reads them (``probe.entries.all_entries``). With
provenance, the counting backend also keeps each compile's ShapeEnv, and the round ends as a run
ends: every compile's origins extracted, every guard line attributed, the graph breaks read.
Rounds alternate on / off in one process (drift hits both alike); prints per-round medians, the
compiles counted by torch's own CompileCounter, and the ratio.

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/provenance_overhead.py [--rounds 12]
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch
from torch._dynamo.testing import CompileCounterWithBackend

from recompile_probe.probe.backend import CountingBackend
from recompile_probe.probe.entries import all_entries
from recompile_probe.provenance.capture import Collector
from recompile_probe.provenance.graph_breaks import graph_break_mark, graph_breaks
from recompile_probe.records import encode


def program(x, w, b):
    h = torch.relu(x @ w + b)
    if x.shape[0] > 4:
        h = h * 2
    rows = h.view(-1, 4)
    for _ in range(3):
        rows = torch.tanh(rows) + rows.mean(0)
    return rows.sum(1), (h + x[:, :1]).softmax(-1)


SHAPES = (8, 9, 3)  # 0/0 static, 0/1 automatic dynamic, 0/2 the branch flips


def one_round(provenance: bool) -> tuple[float, int]:
    torch._dynamo.reset()
    w, b = torch.randn(16, 16), torch.randn(16)
    inputs = [torch.randn(n, 16) for n in SHAPES]
    start = time.perf_counter()
    collector = Collector() if provenance else None
    mark = graph_break_mark() if provenance else None
    counter = CompileCounterWithBackend("eager")
    compiled = torch.compile(program, backend=CountingBackend(counter, collector))
    for x in inputs:
        compiled(x, w, b)
    entries = all_entries(collector)
    if collector is not None:
        for cid in collector.compile_ids():
            found = collector.get(cid)
            for spec in found.specializations if found else ():
                encode.data(spec)
        graph_breaks(mark)
        assert entries and any(g.origin for e in entries for g in e.guards)
    return time.perf_counter() - start, counter.frame_count


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=12)  # 12 x 3 = 36 compiles per mode
    args = parser.parse_args()
    torch.set_num_threads(1)
    one_round(True), one_round(False)  # warm-up: first compiles of the process pay imports
    on, off, compiles = [], [], {True: 0, False: 0}
    for _ in range(args.rounds):
        for mode, samples in ((True, on), (False, off)):
            seconds, count = one_round(mode)
            samples.append(seconds)
            compiles[mode] += count
    a, b = statistics.median(on), statistics.median(off)
    print(
        f"provenance off: median {b * 1e3:.1f} ms/round, {compiles[False]} compiles "
        f"(CompileCounter) over {args.rounds} rounds"
    )
    print(
        f"provenance on:  median {a * 1e3:.1f} ms/round, {compiles[True]} compiles "
        f"(CompileCounter) over {args.rounds} rounds"
    )
    print(f"ratio on/off: {a / b:.3f} (target <= 1.10)")


if __name__ == "__main__":
    main()
