"""What does `watch` add to a program's wall time, start-up and report included?

Two programs, each run bare and under `recompile-probe watch`, N times, interleaved (so drift and
the neighbours' load hit both alike), whole-process wall time:

- `python -c "import torch"`: a program that never compiles. The recorder waits for Dynamo, so
  this pays only watch's own start-up and report.
- a short compiled program: a few compiles (a batch-size recompile, a dtype recompile, a second
  function) and ~1000 calls.

Prints the medians and the ratios of wall time and of CPU time (target for the short program:
<= 1.15).

    .venv/bin/python benchmarks/watch_startup.py [--runs 9] [--checkout DIR]

``--checkout DIR`` measures the recompile-probe found in DIR instead (e.g. an older commit
unpacked with ``git archive REV | tar -x -C DIR``), for a before/after figure.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

SHORT = textwrap.dedent("""
    import torch

    @torch.compile(backend="eager")
    def step(x, values):
        return (x >= values).sum(-1)

    @torch.compile(backend="eager")
    def scale(x):
        return x * 2 + 1

    for b in (1, 2, 8):  # a 0/1 specialization recompile, then dynamic
        step(torch.randn(b, 64), torch.randn(b, 1))
    scale(torch.ones(4))
    scale(torch.ones(4, dtype=torch.float64))  # a dtype recompile
    x, values = torch.randn(8, 64), torch.randn(8, 1)
    for _ in range(1000):
        step(x, values)
""")


def measure(cmd: list[str], cwd: str | None, env: dict) -> tuple[float, float]:
    """(wall s, CPU s of the process and every descendant it waited for)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(
        cmd, check=True, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    elapsed = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    return elapsed, cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument("--checkout", help="measure the recompile_probe package in this folder")
    args = parser.parse_args()
    if args.runs < 1:
        parser.error("--runs must be at least 1")
    env = {**os.environ, "OMP_NUM_THREADS": "1"}  # a 2-core machine: no thread oversubscription
    cwd = str(Path(args.checkout).resolve()) if args.checkout else None
    py = sys.executable
    with tempfile.TemporaryDirectory() as tmp:
        short = Path(tmp, "short_program.py")
        short.write_text(SHORT)
        programs = {
            "python -c 'import torch'": [py, "-c", "import torch"],
            "short compiled program": [py, str(short)],
        }
        times: dict[tuple[str, str], list[tuple[float, float]]] = {}
        for i in range(args.runs):
            for name, cmd in programs.items():
                watched = [py, "-m", "recompile_probe", "watch", "--", *cmd]
                for mode, run in (("bare", cmd), ("watch", watched)):
                    times.setdefault((name, mode), []).append(measure(run, cwd, env))
            print(f"run {i + 1}/{args.runs} done", file=sys.stderr)
    where = args.checkout or "this checkout"
    print(f"recompile-probe from {where}; medians over {args.runs} interleaved runs")
    print(
        "(wall s: what the user waits; CPU s: user+sys of every process, steadier on a busy "
        "machine)"
    )
    for name in programs:
        for i, unit in ((0, "wall"), (1, "CPU ")):
            b = statistics.median(t[i] for t in times[(name, "bare")])
            w = statistics.median(t[i] for t in times[(name, "watch")])
            target = "  (target <= 1.15)" if name.startswith("short") else ""
            print(
                f"{name:26} {unit} bare {b:5.2f}  under watch {w:5.2f}  ratio {w / b:.2f}{target}"
            )


if __name__ == "__main__":
    main()
