"""Does `watch` slow the watched program down? It must not: the recorder only listens to compiles.

Runs a 20,000-call steady loop of a compiled function bare and under `recompile-probe watch`,
several times each, interleaved. The loop times itself (after warm-up), so the figure is the
steady state, not start-up. Prints the medians and their ratio (target: <= 1.03).

    .venv/bin/python benchmarks/watch_overhead.py [--runs 9] [--calls 20000]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

LOOP = textwrap.dedent("""
    import sys, time, torch
    torch.set_num_threads(1)

    @torch.compile(backend="eager")
    def step(x, values):
        return (x >= values).sum(-1)

    x, values = torch.randn(8, 64), torch.randn(8, 1)
    for _ in range(200):  # compile and warm up
        step(x, values)
    calls = int(sys.argv[1])
    start = time.perf_counter()
    for _ in range(calls):
        step(x, values)
    print(f"LOOP {time.perf_counter() - start:.6f}")
""")


def loop_seconds(cmd: list[str]) -> float:
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return float(next(line for line in out.splitlines() if line.startswith("LOOP ")).split()[1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=9)  # 5 runs left ±5 % of process noise
    parser.add_argument("--calls", type=int, default=20_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        script = Path(tmp, "steady_loop.py")
        script.write_text(LOOP)
        bare = [sys.executable, str(script), str(args.calls)]
        watched = [sys.executable, "-m", "recompile_probe", "watch", "--", *bare]
        bare_t, watched_t = [], []
        for _ in range(args.runs):  # interleaved, so drift hits both alike
            bare_t.append(loop_seconds(bare))
            watched_t.append(loop_seconds(watched))
    b, w = statistics.median(bare_t), statistics.median(watched_t)
    print(f"bare:          median {b * 1e6 / args.calls:.2f} µs/call over {args.runs} runs")
    print(f"under watch:   median {w * 1e6 / args.calls:.2f} µs/call over {args.runs} runs")
    print(f"ratio: {w / b:.3f} (target <= 1.03)")


if __name__ == "__main__":
    main()
