"""Scenario files as pytest items: `pytest -n 2` (pytest-xdist) against a serial pytest session.

The matrix is every shipped config (configs/*.yaml; inductor.yaml on the eager backend so the
benchmark takes a minute, not ten), one item per scenario x sequence x strategy. Both sessions write
--recompile-report; their figures must be equal (timings and per-process ids excepted,
tests/comparable.py) or the benchmark fails. Prints both wall times, their ratio and the load
average around each session (the machine is shared: a busy box moves the ratio), and what 16 workers
would give: the measured start of W workers (`pytest -n W` with every item deselected: interpreters,
plugin, collection; xdist starts no worker for --collect-only), plus the first item's warm-up (the
first compile in a process: paid once per worker), plus the per-item durations (JUnit XML) placed by
the same longest-first rule as shards.

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/pytest_items.py [--workers 2] [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))  # comparable.py: what two reports must agree on

from comparable import comparable as masked  # noqa: E402
from recompile_probe.records.report import (  # noqa: E402
    Environment,
    Report,
    ScenarioRef,
    Tool,
    run_from_dict,
    to_dict,
)


def session(folder: Path, name: str, extra: list[str]) -> tuple[float, tuple, list, dict]:
    report, junit = folder / f"{name}.json", folder / f"{name}.xml"
    load = os.getloadavg()
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            *extra,
            "--recompile-scenarios",
            "configs",
            f"--recompile-report={report}",
            f"--junitxml={junit}",
        ],
        cwd=folder,
        capture_output=True,
        text=True,
        env={**os.environ, "OMP_NUM_THREADS": "1"},
    )
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)  # xdist workers are reaped by pytest
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    load = (load, os.getloadavg(), cpu)
    tests = json.loads(report.read_text())["tests"]
    durations = {
        f"{c.get('classname')}::{c.get('name')}": float(c.get("time", 0))
        for c in ET.parse(junit).getroot().iter("testcase")
    }
    summary = proc.stdout.strip().splitlines()[-1] if proc.stdout.strip() else proc.stderr
    return wall, load, tests, {"durations": durations, "summary": summary}


def comparable(test: dict) -> tuple:
    run = run_from_dict(test["run"]) if test["run"] else None
    if run is None:
        return test["nodeid"], test["verdict"], None
    report = Report(Tool("", ""), Environment(None, "", ""), ScenarioRef("", None), (run,))
    return test["nodeid"], test["verdict"], masked(to_dict(report))["runs"][0]


def makespan(durations: list[float], workers: int) -> float:
    loads = [0.0] * workers
    for d in sorted(durations, reverse=True):
        loads[loads.index(min(loads))] += d
    return max(loads)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--keep", type=Path, help="keep the sessions' files in this folder")
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="pytest-items-")) if args.keep is None else args.keep
    folder.mkdir(parents=True, exist_ok=True)
    configs = folder / "configs"
    shutil.rmtree(configs, ignore_errors=True)
    shutil.copytree(ROOT / "configs", configs)
    ind = configs / "inductor.yaml"
    ind.write_text(ind.read_text().replace("backend: {name: inductor}", "backend: eager"))

    serial = session(folder, "serial", [])
    parallel = session(folder, f"n{args.workers}", ["-n", str(args.workers)])
    a, b = [comparable(t) for t in serial[2]], [comparable(t) for t in parallel[2]]
    equal = a == b
    verdicts = {v: [t[1] for t in a].count(v) for v in ("passed", "failed", "skipped")}
    print(f"matrix: {len(a)} items (every shipped config, eager backend): {verdicts}")
    print(
        f"serial pytest       {serial[0]:7.1f} s   ({serial[3]['summary']})   "
        f"load {serial[1][0][0]:.2f} -> {serial[1][1][0]:.2f}, cpu {serial[1][2]:.1f} s"
    )
    print(
        f"pytest -n {args.workers:<9} {parallel[0]:7.1f} s   ({parallel[3]['summary']})   "
        f"load {parallel[1][0][0]:.2f} -> {parallel[1][1][0]:.2f}, cpu {parallel[1][2]:.1f} s"
    )
    print(
        f"ratio -n {args.workers} / serial: {parallel[0] / serial[0]:.2f}x   "
        f"(cores: {os.cpu_count()})"
    )
    print(f"figures equal (counts, statuses, reasons, violations; timings excluded): {equal}")
    items = list(serial[3]["durations"].values())  # in run order
    rest = sorted(items[1:])
    warm = max(0.0, items[0] - rest[len(rest) // 2])  # the first item over a typical one
    items = [items[0] - warm, *items[1:]]
    begin = time.perf_counter()
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "-n",
            str(args.workers),
            "-m",
            "recompile_probe and not recompile_probe",
            "--recompile-scenarios",
            "configs",
        ],
        cwd=folder,
        capture_output=True,
        env={**os.environ, "OMP_NUM_THREADS": "1"},
    )
    start = time.perf_counter() - begin
    for workers in (args.workers, 16):
        print(
            f"estimate for {workers:2d} workers on {workers} idle cores: "
            f"{start + warm + makespan(items, workers):6.1f} s (start {start:.1f} s, "
            f"first-compile warm-up {warm:.1f} s per worker, items {sum(items):.1f} s in all, "
            f"longest {max(items):.2f} s)"
        )
    if not equal:
        for x, y in zip(a, b):
            if x != y:
                print(f"DIFFERS: {x[0]}")
        raise SystemExit(1)
    if args.keep is None:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
