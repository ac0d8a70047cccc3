"""Whether the worker started ahead changes what the running strategy measures.

Under `--isolate process` on two cores, the next strategy's worker loads the target (and warms
up) while the current strategy runs its later sequences. Both use a core each, so the figures of
those runs could move: their compile times (Dynamo's compilation metrics) and steady-state call
times. This script runs the same scenario through the library with the worker started ahead and
with it off (``execution.process.two_cores`` answering False, what a one-core machine gets),
after one warm-up round that is not counted, the two modes' order swapped every round so
drift and warmth hit both alike, and prints per sequence the median over rounds of

  compile ms   the sum of the sequence's runs' compile_time_ms (every strategy)
  steady us    the median of the runs' steady_state_us

and their ratio ahead / off (with the range of the rounds' own ratios, each round's two modes run
one after the other), beside the wall time of each mode. The counts (compiles, guards) must
be equal in every round and mode (tests/comparable.py); the script says so and exits 1
otherwise. Run it on an idle machine: the load it measures is its own.

Only sequences after a strategy's first can overlap a worker's loading: with the seed op's two
sequences, `rl` runs first and `chat` beside the next worker's start; `rl` is the control.

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/ahead_effect.py [--config configs/logprobs.yaml]
        [--rounds 3]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))  # comparable.py: what two reports must agree on

from comparable import comparable  # noqa: E402
from recompile_probe.execution import process  # noqa: E402
from recompile_probe.execution.session import run_scenario  # noqa: E402
from recompile_probe.records.report import Report, to_dict  # noqa: E402
from recompile_probe.scenario.load import load  # noqa: E402


@contextmanager
def ahead(on: bool) -> Iterator[None]:
    kept = process.two_cores
    process.two_cores = lambda: on
    try:
        yield
    finally:
        process.two_cores = kept


def figures(report: Report) -> dict[str, tuple[float, float]]:
    """Per sequence: the sum of its runs' compile ms, and the median of their steady-state µs."""
    out = {}
    for name, _ in report.sequences():
        runs = report.runs_for(name)
        compile_ms = sum(r.compile_time_ms or 0.0 for r in runs)
        steady = [r.steady_state_us for r in runs if r.steady_state_us is not None]
        out[name] = (compile_ms, statistics.median(steady) if steady else float("nan"))
    return out


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--config", default=str(ROOT / "configs" / "logprobs.yaml"))
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    if not process.two_cores():
        print("needs two cores: with one, no worker is started ahead")
        return 1
    scenario = load(args.config)
    modes = {"ahead": True, "off": False}
    walls: dict[str, list[float]] = {m: [] for m in modes}
    seen: dict[str, list[dict[str, tuple[float, float]]]] = {m: [] for m in modes}
    expected: object = None  # the first report's counts: every later one must equal them
    kept: Report | None = None
    equal = True
    # round 0 warms the box's caches and is not counted; then the order alternates per round
    for index in range(args.rounds + 1):
        order = list(modes) if index % 2 else list(reversed(modes))
        for mode in order:
            with ahead(modes[mode]):
                start = time.perf_counter()
                report = run_scenario(scenario, isolate="process", timeout=600)
                wall = time.perf_counter() - start
            counts = comparable(to_dict(report))
            if expected is None:
                expected, kept = counts, report
            equal = equal and counts == expected
            if index:
                walls[mode].append(wall)
                seen[mode].append(figures(report))
    assert kept is not None
    sequences = [name for name, _ in kept.sequences()]
    print(f"{Path(args.config).name}, --isolate process, {args.rounds} rounds")
    print(f"{'':18} {'ahead':>9} {'off':>9} {'ratio':>6}  paired ratios, min-max")
    rows = [("wall s", walls["ahead"], walls["off"])]
    for name in sequences:
        for index, label in ((0, "compile ms"), (1, "steady us")):
            rows.append(
                (
                    f"{name}: {label}",
                    [s[name][index] for s in seen["ahead"]],
                    [s[name][index] for s in seen["off"]],
                )
            )
    for label, on, off in rows:
        a, o = statistics.median(on), statistics.median(off)
        paired = [x / y for x, y in zip(on, off)]
        print(f"{label:18} {a:9.2f} {o:9.2f} {a / o:6.2f}  {min(paired):.2f}-{max(paired):.2f}")
    print("counts equal in every round and mode" if equal else "COUNTS DIFFER between reports")
    return 0 if equal else 1


if __name__ == "__main__":
    sys.exit(main())
