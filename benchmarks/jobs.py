"""`--jobs 2` against `--jobs 1 --isolate process` on a matrix of runs, and what 16 cores give.

The matrix (all eager): logprobs.yaml (9 strategies x 2 sequences), user_callable.yaml (5 x 2),
non_batch_dim.yaml (6 x 1), prefill_decode_generate.yaml (5 x 1): 39 runs. Each row times the
CLI end to end, one `recompile-probe` process per scenario (interpreter, imports and the
scenario's workers included), OMP_NUM_THREADS=1 for every process:

  serial   `run S --isolate process -f json`  (= --jobs 1 --isolate process: a worker per strategy)
  jobs 2   `run S --jobs 2 -f json`           (a pool of 2 reused workers per scenario)
  check    `check S1 S2 S3 S4 --jobs 2 --json` (one pool of 2 for the whole matrix)
  inline   `run S -f json`                    (one process, for scale)

Figures: every row's reports must equal the serial row's with comparable() (tests/comparable.py: the
timing fields left out, object addresses in guard text masked); the script says so or prints the
differing runs, and exits 1 on a difference.

Projection: one more pass of the matrix through the library (execution.session.run_jobs on a pool of
ONE worker, so no sibling contends for the cores) reads each job's costs as the worker measured
them: the worker's start S (interpreter + torch + the tool + its first preparation, which pays the
process's first compile), a scenario's preparation in a warm worker (p_k: target loaded, warm-up,
eager references) and each run (c_i). T(N) is the pool's own schedule replayed with those costs:
jobs in order, each to the first free worker, every worker ready at S holding the scenario of its
first job, a job costing c_i plus p_k when its worker has not prepared scenario k yet; plus the
parent's fixed cost F (CLI start, loading the scenarios, rendering: the check row's wall minus the
wall of the same matrix through the library on a pool of 2): T(N) = F + replay(N),  never below F +
S + max(sum c_i / N, max c_i). It assumes N real cores and no contention between workers (memory
bandwidth, one disk): a lower bound on the time. The replay at N=1 is printed beside the pool-of-1
pass's own wall time (a check of the model), the replay at N=2 beside the pool-of-2 pass's (the gap
is this box's contention).

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/jobs.py [--runs 1] [--cores 16]
"""

from __future__ import annotations

import argparse
import heapq
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))  # comparable.py: what two reports must agree on

CONFIGS = [
    "logprobs.yaml",
    "user_callable.yaml",
    "non_batch_dim.yaml",
    "prefill_decode_generate.yaml",
]
ENV = {**os.environ, "OMP_NUM_THREADS": "1"}


def _cli(*args: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "recompile_probe", *args],
        env=ENV,
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    if done.returncode not in (0, 1):  # check exits 1 on a broken budget: still a result
        sys.exit(f"recompile-probe {' '.join(args)} failed ({done.returncode}):\n{done.stderr}")


def _row(name: str, folder: Path) -> tuple[float, dict[str, dict]]:
    """Wall seconds for the whole matrix, and each scenario's report (JSON data)."""
    out: dict[str, dict] = {}
    start = time.perf_counter()
    if name == "check":
        path = folder / "check.json"
        _cli(
            "check",
            *[str(ROOT / "configs" / c) for c in CONFIGS],
            "--jobs",
            "2",
            "--json",
            str(path),
            "-q",
        )  # the four configs are eager already
        wall = time.perf_counter() - start
        for report in json.loads(path.read_text())["reports"]:  # several: a bundle
            out[Path(report["scenario"]["path"]).name] = report
        return wall, out
    extra = {"serial": ["--isolate", "process"], "jobs 2": ["--jobs", "2"], "inline": []}[name]
    for config in CONFIGS:
        path = folder / f"{name.replace(' ', '')}-{config}.json"
        _cli(
            "run",
            str(ROOT / "configs" / config),
            "-b",
            "eager",
            "-q",
            "-f",
            "json",
            "-o",
            str(path),
            *extra,
        )
        out[config] = json.loads(path.read_text())
    return time.perf_counter() - start, out


def _same(reference: dict[str, dict], other: dict[str, dict], row: str) -> bool:
    from comparable import comparable

    ok = True
    for config, report in reference.items():
        # check's JSON carries its verdicts, inline's runs say "inline": otherwise the same
        skip = {"violations", "isolation"} if row == "inline" else {"violations"}
        mine = dict(
            other[config],
            runs=[{k: v for k, v in r.items() if k not in skip} for r in other[config]["runs"]],
        )
        ref = dict(
            report, runs=[{k: v for k, v in r.items() if k not in skip} for r in report["runs"]]
        )
        a, b = comparable(ref), comparable(mine)
        if a != b:
            ok = False
            for ra, rb in zip(a["runs"], b["runs"]):
                if ra != rb:
                    print(f"  DIFFER {row} {config}: {ra['sequence_name']} / {ra['strategy']}")
            if len(a["runs"]) != len(b["runs"]):
                print(f"  DIFFER {row} {config}: {len(a['runs'])} runs against {len(b['runs'])}")
    return ok


def matrix() -> list:
    from recompile_probe.execution.executor import scenario_jobs
    from recompile_probe.scenario import load as scenario_mod
    from recompile_probe.scenario.overrides import with_overrides

    return [
        j
        for c in CONFIGS
        for j in scenario_jobs(
            with_overrides(scenario_mod.load(ROOT / "configs" / c), backend="eager")
        )
    ]


def library_pass(workers: int) -> tuple[float, list]:
    """The matrix through execution.session.run_jobs on a pool of ``workers``: (wall s, costs
    by job)."""
    from recompile_probe.execution.session import open_pool, run_jobs

    jobs = matrix()
    started = time.perf_counter()
    with open_pool(workers) as pool:
        list(run_jobs(jobs, pool=pool))
        costs = sorted(pool.costs, key=lambda c: c.index)
    return time.perf_counter() - started, costs


class Costs:
    """One pass of the matrix through a pool of ONE worker (no sibling to contend with), as the
    worker measured it: start S = interpreter + torch + the tool + its first preparation (which
    pays the process's first compile), p_k = preparing scenario k in a warm worker, c_i = run i."""

    def __init__(self) -> None:
        from recompile_probe.execution.protocol import preparation_key

        self.wall, costs = library_pass(1)
        self.keys = [preparation_key(j.scenario) for j in matrix()]
        first = costs[0]
        self.start = (first.import_s or 0.0) + first.prepare_s
        self.prepare = {self.keys[c.index]: c.prepare_s for c in costs[1:] if c.prepare_s > 0.01}
        warm = statistics.median(self.prepare.values()) if self.prepare else 0.0
        self.prepare.setdefault(self.keys[0], warm)  # its warm cost was never measured alone
        self.run = [c.run_s for c in costs]

    def replay(self, workers: int) -> float:
        """The pool's own schedule with these costs: jobs in order, each to the first free
        worker; every worker ready at S, having prepared the scenario of its first job; a job
        costs c_i, plus p_k when its worker has not prepared scenario k. Seconds to the end."""
        free = [(self.start, w) for w in range(workers)]
        heapq.heapify(free)
        held: dict[int, set] = {w: set() for w in range(workers)}
        end = self.start
        for index, cost in enumerate(self.run):
            at, w = heapq.heappop(free)
            key = self.keys[index]
            if not held[w]:
                held[w].add(key)  # its first preparation is in S
            elif key not in held[w]:
                cost += self.prepare[key]
                held[w].add(key)
            end = max(end, at + cost)
            heapq.heappush(free, (at + cost, w))
        return end


def _load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=1, help="passes of each row (median)")
    parser.add_argument("--cores", type=int, default=16, help="the projection's core count")
    parser.add_argument("--rows", default="serial,jobs 2,check,inline")
    args = parser.parse_args()
    rows = [r.strip() for r in args.rows.split(",")]
    print(f"cores here: {os.cpu_count()}, load average before: {_load()}")
    walls: dict[str, list[float]] = {r: [] for r in rows}
    reports: dict[str, dict] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(args.runs):
            for row in rows:
                wall, out = _row(row, Path(tmp))
                walls[row].append(wall)
                reports[row] = out
                print(f"  {row:7s} {wall:7.1f} s   (load {_load()})", flush=True)
    n_runs = sum(len(r["runs"]) for r in reports[rows[0]].values())
    print(f"\nmatrix: {len(CONFIGS)} scenarios, {n_runs} runs, eager, OMP_NUM_THREADS=1")
    base = statistics.median(walls[rows[0]])
    same = True
    for row in rows:
        wall = statistics.median(walls[row])
        equal = True if row == rows[0] else _same(reports[rows[0]], reports[row], row)
        same &= equal
        print(
            f"{row:7s} {wall:7.1f} s  {wall / base:5.2f}x {rows[0]}   figures "
            f"{'equal' if equal else 'DIFFER'}"
        )
    costs = Costs()
    print(
        f"\nper-run costs (library, pool of 1, {costs.wall:.1f} s, load {_load()}): worker "
        f"start S = {costs.start:.2f} s; warm preparation p_k = "
        f"{', '.join(f'{p:.2f}' for p in costs.prepare.values())} s; runs: sum c = "
        f"{sum(costs.run):.1f} s, median {statistics.median(costs.run):.2f} s, max "
        f"{max(costs.run):.2f} s"
    )
    two, _ = library_pass(2)
    print(
        f"model: replay N=1 {costs.replay(1):.1f} s against the pool-of-1 pass measured "
        f"{costs.wall:.1f} s; replay N=2 {costs.replay(2):.1f} s against a pool-of-2 pass "
        f"measured {two:.1f} s (the gap: 2 workers contending for 2 shared cores)"
    )
    fixed = 0.0
    if "check" in walls:
        fixed = statistics.median(walls["check"]) - two  # CLI start, loading, rendering
        print(
            f"F = check --jobs 2 {statistics.median(walls['check']):.1f} s - pool-of-2 pass "
            f"{two:.1f} s = {fixed:.1f} s"
        )
    for n in sorted({1, 2, 4, 8, args.cores}):
        print(f"projected check --jobs {n:2d}: F + replay({n}) = {costs.replay(n) + fixed:6.1f} s")
    print(f"load average after: {_load()}")
    sys.exit(0 if same else 1)


if __name__ == "__main__":
    main()
