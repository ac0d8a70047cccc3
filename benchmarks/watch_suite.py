"""What `watch -- python -m pytest` adds to a test suite: 100 small compiled TestCase tests.

The suite (written to a temporary folder) is built on torch._dynamo.test_case.TestCase, each test
compiling a small function for three sizes (3 compiles, 2 recompiles). The whole process is timed,
plain and under `recompile-probe watch -q -f json -o FILE`, runs interleaved so drift hits both
alike. Prints the medians, CPU time beside wall time, and their ratio (target: watch <= 1.03x).

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/watch_suite.py [--runs 5] [--tests 100]
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CASE = """
    def test_{i}(self):
        def f(x):
            return (x * {i} + 1).sum(0)

        g = torch.compile(f, backend="eager", dynamic=False)
        for n in (1, 2, 3):
            g(torch.ones(n, 4))
"""


def write_suite(folder: Path, tests: int) -> None:
    body = "".join(CASE.format(i=i) for i in range(tests))
    (folder / "test_many.py").write_text(
        "import torch\nfrom torch._dynamo.test_case import TestCase\n\n\n"
        f"class TestMany(TestCase):{body}"
    )


def once(cmd: list[str], cwd: Path) -> tuple[float, float]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(cmd, cwd=cwd, check=True, capture_output=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--tests", type=int, default=100)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        write_suite(folder, args.tests)
        pytest = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
        watched = [
            sys.executable,
            "-m",
            "recompile_probe",
            "watch",
            "-q",
            "-f",
            "json",
            "-o",
            str(folder / "watch.json"),
            "--",
            *pytest,
        ]
        os.environ.pop("PYTEST_ADDOPTS", None)
        once(pytest, folder)  # warm the file cache
        plain, watch = [], []
        for _ in range(args.runs):
            plain.append(once(pytest, folder))
            watch.append(once(watched, folder))
    for name, samples in (("plain pytest", plain), ("under watch", watch)):
        walls, cpus = [s[0] for s in samples], [s[1] for s in samples]
        print(
            f"{name:13s} median {statistics.median(walls):.2f} s wall "
            f"(min {min(walls):.2f}, max {max(walls):.2f}), "
            f"{statistics.median(cpus):.2f} s CPU over {args.runs} runs"
        )
    ratio = statistics.median(s[0] for s in watch) / statistics.median(s[0] for s in plain)
    cpu_ratio = statistics.median(s[1] for s in watch) / statistics.median(s[1] for s in plain)
    print(f"ratio watch / plain: {ratio:.3f} wall, {cpu_ratio:.3f} CPU (target <= 1.03)")


if __name__ == "__main__":
    main()
