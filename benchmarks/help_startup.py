"""What `recompile-probe --help` costs against a bare `import typer, rich, yaml`.

Target: the median `--help` wall time <= 2.0x the median of the bare import, both in a fresh
interpreter, runs alternating so drift hits both alike. torch must stay out of the import path of
`--help` (the test suite checks that; this measures what is left).

    .venv/bin/python benchmarks/help_startup.py [--runs 15]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time

BARE = [sys.executable, "-c", "import typer, rich, yaml"]
HELP = [sys.executable, "-m", "recompile_probe", "--help"]


def once(cmd: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, check=True, capture_output=True)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    once(BARE), once(HELP)  # warm the file cache for both
    bare, help_ = [], []
    for _ in range(args.runs):
        bare.append(once(BARE))
        help_.append(once(HELP))
    a, b = statistics.median(help_), statistics.median(bare)
    print(
        f"bare import typer, rich, yaml: median {b * 1e3:.0f} ms "
        f"(min {min(bare) * 1e3:.0f}, max {max(bare) * 1e3:.0f}) over {args.runs} runs"
    )
    print(
        f"recompile-probe --help:        median {a * 1e3:.0f} ms "
        f"(min {min(help_) * 1e3:.0f}, max {max(help_) * 1e3:.0f}) over {args.runs} runs"
    )
    print(f"ratio --help / bare: {a / b:.2f} (target <= 2.0)")


if __name__ == "__main__":
    main()
