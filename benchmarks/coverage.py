"""What coverage costs: beside a run of the seed op, per proof, and against compiling each size.

1. A `run` of the seed op (configs/coverage.yaml's scenario: B = 4 -> 8, default and
   mark_unbacked) with and without coverage of B in [0, 4096], interleaved, medians of --runs:
   target <= 1.10x.
2. A proof over B in [0, 2**40] per strategy (the record's own `seconds`): target <= 1 s.
3. The brute force it replaces: one real compile per size (dynamic=False, the seed op), ms per
   compile measured on --brute sizes, times the 4097 sizes of the range.

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/coverage.py [--runs 5] [--brute 20]
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
import time

import torch

from recompile_probe.execution.session import run_scenario
from recompile_probe.scenario.load import load
from recompile_probe.scenario.model import default_path
from recompile_probe.targets.logprobs import count_greater_than

STRATEGIES = ("default", "mark_unbacked", "dynamic_true", "mark_dynamic", "static")


def _timed(scenario) -> tuple[float, list]:
    start = time.perf_counter()
    report = run_scenario(scenario)
    return time.perf_counter() - start, list(report.runs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--brute", type=int, default=20)
    args = parser.parse_args()
    torch.set_num_threads(1)
    base = load(default_path().parent / "coverage.yaml")
    plain = dataclasses.replace(base, coverage=None, budgets=())
    covered = dataclasses.replace(base, coverage={"B": (0, 4096)}, budgets=())
    _timed(plain)  # the process's first compiles, paid once
    without, with_ = [], []
    for _ in range(args.runs):
        without.append(_timed(plain)[0])
        with_.append(_timed(covered)[0])
    a, b = statistics.median(without), statistics.median(with_)
    print(f"run of the seed op: {a:.2f} s without coverage, {b:.2f} s with B in [0, 4096]")
    print(f"  ratio {b / a:.3f}x (target <= 1.10x), runs {args.runs}")

    huge = dataclasses.replace(
        base, coverage={"B": (0, 2**40)}, budgets=(), strategies=STRATEGIES, repeats=0
    )
    _, runs = _timed(huge)
    print("proof over B in [0, 2**40] (target <= 1 s each):")
    for run in runs:
        c = run.coverage
        print(
            f"  {run.strategy:15} {c.method:10} proved={c.proved!s:5} "
            f"counterexample={c.counterexample} {c.seconds:.3f} s"
        )

    torch._dynamo.reset()
    torch._dynamo.config.recompile_limit = args.brute + 8  # every size compiles, none eager
    fn = torch.compile(count_greater_than, backend="eager", dynamic=False)
    sizes = range(1, args.brute + 1)
    start = time.perf_counter()
    for size in sizes:
        fn(torch.randn(size, 4096), torch.randn(size, 1))
    per = (time.perf_counter() - start) / args.brute
    print(
        f"brute force: {per * 1000:.1f} ms per compile ({args.brute} sizes, dynamic=False): "
        f"4097 sizes ~ {per * 4097:.0f} s; coverage of the same range {b - a:.2f} s"
    )


if __name__ == "__main__":
    main()
