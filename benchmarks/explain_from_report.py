"""What `explain --from-report` costs against `explain` running the scenario again.

Target: the median `explain --from-report REPORT.json` wall time <= 0.2x the median of `explain`
on the same scenario (it runs every strategy), both a fresh process with `-f json`, runs
alternating so drift hits both alike. The report is written once, by `run -f json -o`, before
the timed runs (what a user has already paid for). Default: the built-in scenario.

    .venv/bin/python benchmarks/explain_from_report.py [--runs 5] [SCENARIO]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CLI = [sys.executable, "-m", "recompile_probe"]


def once(cmd: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, check=True, capture_output=True)
    return time.perf_counter() - start


def spread(times: list[float]) -> str:
    return (
        f"median {statistics.median(times):.2f} s (min {min(times):.2f}, max {max(times):.2f}) "
        f"over {len(times)} runs"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("scenario", nargs="?", help="a scenario YAML (default: the built-in)")
    args = parser.parse_args()
    scenario = [args.scenario] if args.scenario else []
    with tempfile.TemporaryDirectory() as tmp:
        report = str(Path(tmp) / "report.json")
        subprocess.run(
            [*CLI, "run", *scenario, "-q", "-f", "json", "-o", report],
            check=True,
            capture_output=True,
        )
        fresh = [*CLI, "explain", *scenario, "-q", "-f", "json"]
        reused = [*CLI, "explain", "--from-report", report, "-q", "-f", "json"]
        once(reused)  # warm the file cache
        fresh_times, reused_times = [], []
        for _ in range(args.runs):
            fresh_times.append(once(fresh))
            reused_times.append(once(reused))
    a, b = statistics.median(reused_times), statistics.median(fresh_times)
    print(f"explain (runs the scenario):  {spread(fresh_times)}")
    print(f"explain --from-report REPORT: {spread(reused_times)}")
    print(f"ratio --from-report / explain: {a / b:.3f} (target <= 0.2)")


if __name__ == "__main__":
    main()
