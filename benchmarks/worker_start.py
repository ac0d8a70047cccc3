"""What a worker process costs to start: forked from the warm server against a fresh interpreter,
and `run --isolate process` against inline on the seed op, in one run of this script.

Rows (OMP_NUM_THREADS=1 for every process, runs alternating so drift hits every row alike):

  fresh import     a fresh `python -c "import torch; <the worker's modules>"`: what every worker
                   paid before the warm server
  server start     the warm server's own start (its `ready` record), paid once per command
  worker ready     a forked worker's start to its `ready` record (its own imports: none left)
  run inline       `recompile-probe run -f json` (the seed op, 9 strategies x 2 sequences)
  run process      `run --isolate process -f json`, workers forked from the warm server
  run process (fresh)  the same with RECOMPILE_PROBE_WARM=0: a fresh interpreter per strategy

Every `run process` report must equal the fresh one (tests/comparable.py); the script says so.
Targets (issue: workers that start in milliseconds): worker ready <= 0.3 s; run process <=
1.15x run inline.

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/worker_start.py [--runs 3] [--workers 8]
"""

from __future__ import annotations

import argparse
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

from comparable import comparable  # noqa: E402

CLI = [sys.executable, "-m", "recompile_probe", "run", "-q", "-f", "json"]
IMPORTS = (
    "import torch; from recompile_probe.execution import inline, worker; "
    "from recompile_probe.records import environment; "
    "from recompile_probe.torch_compat.settings import changed_config; changed_config()"
)


def timed(cmd: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, check=True, capture_output=True, env=env, cwd=ROOT)
    return time.perf_counter() - start


def worker_ready(count: int) -> tuple[float, list[float]]:
    """The server's start, and each forked worker's start to its ready record."""
    from recompile_probe.execution import processes, warm

    server = warm.server()
    if server is None:
        raise SystemExit(f"no warm server here: {warm.why_not(dict(os.environ))}")
    server.ready()
    readies = []
    for _ in range(count):
        with tempfile.TemporaryDirectory() as folder:
            start = time.perf_counter()
            worker = processes.start(Path(folder), "bench")
            worker.end_input()
            while not any(hasattr(e, "import_s") for e in worker.records(worker.stop)):
                time.sleep(0.001)
            readies.append(time.perf_counter() - start)
            worker.stop()
    assert server.import_s is not None
    return server.import_s, readies


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--workers", type=int, default=8)
    args = parser.parse_args()
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    fresh_env = {**env, "RECOMPILE_PROBE_WARM": "0"}
    rows: dict[str, list[float]] = {k: [] for k in ("fresh", "inline", "process", "process0")}
    reports: dict[str, object] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(args.runs):
            rows["fresh"].append(timed([sys.executable, "-c", IMPORTS], env))
            for key, extra, e in (
                ("inline", [], env),
                ("process", ["--isolate", "process"], env),
                ("process0", ["--isolate", "process"], fresh_env),
            ):
                out = Path(tmp, f"{key}.json")
                rows[key].append(timed([*CLI, *extra, "-o", str(out)], e))
                if i == 0 and key != "inline":
                    reports[key] = comparable(json.loads(out.read_text()))
    os.environ["OMP_NUM_THREADS"] = "1"
    server_s, readies = worker_ready(args.workers)
    med = {k: statistics.median(v) for k, v in rows.items()}
    print(f"fresh import          median {med['fresh']:.2f} s over {args.runs}")
    print(f"server start          {server_s:.2f} s (once per command)")
    print(
        f"worker ready (forked) median {statistics.median(readies) * 1e3:.0f} ms, max "
        f"{max(readies) * 1e3:.0f} ms over {len(readies)} (target <= 300 ms)"
    )
    print(f"run inline            median {med['inline']:.2f} s")
    print(
        f"run process (forked)  median {med['process']:.2f} s = "
        f"{med['process'] / med['inline']:.2f}x inline (target <= 1.15x)"
    )
    print(
        f"run process (fresh)   median {med['process0']:.2f} s = "
        f"{med['process0'] / med['inline']:.2f}x inline"
    )
    same = reports["process"] == reports["process0"]
    print(f"forked report equals fresh report: {'yes' if same else 'NO'}")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
