"""What `suggest` costs against `run` of the same scenario.

Scenarios: the seed op (configs/logprobs.yaml, 2 varying dims: exhaustive search); five tensors
whose dim 0 each follow their own size symbol, one symbol changing per call (5 varying dims:
greedy search); and with `--models` (needs transformers), two real models' `generate()` loops
built from configs with random weights: a 4-layer tiny Llama (20 varying dims: input_ids and
position_ids dims 0 and 1, dims 0 and 2 of eight cache tensors) and a 2-layer tiny GPT-2, and
a tiny BERT classifier trained with labels over B x S (5 varying dims; it changes its own config
on its first call).
Each command runs in a fresh process (import included, the same way for both), under
OMP_NUM_THREADS=1, with a wrapper around recompile_probe.probe.run.probe that counts the probe runs
(one strategy or candidate over one sequence). Prints, per scenario, the median wall time of several
runs of each command, the probe runs of each, and the ratios. No asserts: the figures depend on the
machine.

    .venv/bin/python benchmarks/suggest.py [--runs 3] [--models] [--unbounded] [--jobs 2]

Beside each `suggest`, `suggest --from-report` of a report the `run` beside it wrote (what reading
its default and whole-function runs saves), and with `--unbounded` the greedy search over single
dims with no time limit, once, on the greedy cases (is the grouped answer as good on the
objective?).
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

COUNTED = r"""
import atexit, os, sys
from recompile_probe.probe import run as probe
if os.environ.get("SUGGEST_PER_DIM"):  # the search before grouping: every dim its own group
    from recompile_probe.commands.suggest import search
    search.groups = lambda locations: [(i,) for i in range(len(locations))]
calls = [0]
real = probe.probe
def counted(*args, **kwargs):
    calls[0] += 1
    return real(*args, **kwargs)
probe.probe = counted
atexit.register(lambda: sys.stderr.write(f"\nPROBE_RUNS {calls[0]}\n"))
from recompile_probe.cli import main
sys.argv = ["recompile-probe", *sys.argv[1:]]
main()
"""

FIVE = """
import torch

def five_dims(a, b, c, d, e):
    return a.sum() + b.sum() + c.sum() + d.sum() + e.sum()

def make_inputs(A, B, C, D, E):
    g = torch.Generator().manual_seed(A * 10000 + B * 1000 + C * 100 + D * 10 + E)
    return tuple(torch.randn(n, 4, generator=g) for n in (A, B, C, D, E))
"""

FIVE_YAML = """
name: five-dims
target: five.py:five_dims
factory: five.py:make_inputs
dims: {A: {0: [0]}, B: {1: [0]}, C: {2: [0]}, D: {3: [0]}, E: {4: [0]}}
sequences:   # one symbol changes per call: every dim needs a mark
  s: [{A: 2, B: 2, C: 2, D: 2, E: 2}, {A: 3, B: 2, C: 2, D: 2, E: 2},
      {A: 3, B: 3, C: 2, D: 2, E: 2}, {A: 3, B: 3, C: 3, D: 2, E: 2},
      {A: 3, B: 3, C: 3, D: 3, E: 2}, {A: 3, B: 3, C: 3, D: 3, E: 3}]
backend: eager
repeats: 10
"""


#: a tiny model's generate() loop as a driver: {imports} and {build} make the model
MODEL = """
import torch
from transformers import {imports}

torch.manual_seed(0)
{build}
forward = model.forward


def generate(fn, B, S):
    model.forward = fn
    try:
        ids = torch.randint(1, config.vocab_size, (B, S))
        with torch.no_grad():
            return model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=3,
                                  do_sample=False, pad_token_id=0)
    finally:
        model.forward = forward
"""
MODELS = {
    "llama": MODEL.format(
        imports="LlamaConfig, LlamaForCausalLM",
        build="config = LlamaConfig(vocab_size=64, hidden_size=16, intermediate_size=32, "
        "num_hidden_layers=4, num_attention_heads=2, num_key_value_heads=2, "
        "max_position_embeddings=64, eos_token_id=None)\n"
        "model = LlamaForCausalLM(config).eval()",
    ),
    "gpt2": MODEL.format(
        imports="GPT2Config, GPT2LMHeadModel",
        build="config = GPT2Config(vocab_size=64, n_embd=16, n_layer=2, n_head=2, "
        "n_positions=64, eos_token_id=None, bos_token_id=None)\n"
        "model = GPT2LMHeadModel(config).eval()",
    ),
}

MODEL_YAML = """
name: {name}-generate
target: {name}.py:forward
driver: {name}.py:generate
dims:
  B: {{input_ids: [0]}}
  S: {{input_ids: [1]}}
sequences:
  chat: [{{B: 1, S: 6}}, {{B: 2, S: 6}}, {{B: 2, S: 9}}]
strategies: [default, dynamic_true, mark_dynamic, mark_unbacked, unbacked_sources]
backend: eager
repeats: 5
"""


def timed(args: list[str], per_dim: bool = False) -> tuple[float, int, dict]:
    """Wall seconds of one fresh process, its probe runs, and its JSON report. ``per_dim``: the
    greedy search over single dims (no groups), as before grouping."""
    env = {**os.environ, "OMP_NUM_THREADS": "1", **({"SUGGEST_PER_DIM": "1"} if per_dim else {})}
    start = time.perf_counter()
    out = subprocess.run(
        [sys.executable, "-c", COUNTED, *args], capture_output=True, text=True, env=env, cwd=ROOT
    )
    wall = time.perf_counter() - start
    if out.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(args)} failed ({out.returncode}):\n{out.stderr[-2000:]}")
    runs = re.findall(r"PROBE_RUNS (\d+)", out.stderr)
    return wall, int(runs[-1]) if runs else -1, json.loads(out.stdout)


def measure(scenario: str, repeat: int, unbounded: bool = False, jobs: int = 1) -> dict:
    suggest = [timed(["suggest", scenario, "--format", "json", "-q"]) for _ in range(repeat)]
    pooled = (
        [
            timed(["suggest", scenario, "--format", "json", "-q", "--jobs", str(jobs)])
            for _ in range(repeat)
        ]
        if jobs > 1
        else []
    )
    run = [timed(["run", scenario, "--format", "json", "-q"]) for _ in range(repeat)]
    saved = Path(tempfile.mkdtemp(prefix="suggest-bench-"), "report.json")  # never beside a config
    saved.write_text(json.dumps(run[-1][2]))
    reusing = [
        timed(["suggest", scenario, "--from-report", str(saved), "--format", "json", "-q"])
        for _ in range(repeat)
    ]
    report = suggest[-1][2]
    per_dim = (
        timed(["suggest", scenario, "--format", "json", "-q", "--time-limit", "0"], per_dim=True)
        if unbounded and report["search"] == "greedy"
        else None
    )
    return {
        "jobs_s": statistics.median(w for w, _, _ in pooled) if pooled else None,
        "jobs_best": _objective(pooled[-1][2]["recommendation"]) if pooled else None,
        "reused": len(reusing[-1][2]["reused"]),
        "from_report_s": statistics.median(w for w, _, _ in reusing),
        "per_dim": None
        if per_dim is None
        else {
            "s": per_dim[0],
            "candidates": per_dim[2]["evaluations"],
            "best": _objective(per_dim[2]["recommendation"]),
        },
        "best": _objective(report["recommendation"]),
        "recommendation": report["recommendation"],
        "search": report["search"],
        "dims": len(report["locations"]),
        "candidates": report["evaluations"],
        "suggest_runs": suggest[-1][1],
        "run_runs": run[-1][1],
        "suggest_s": statistics.median(w for w, _, _ in suggest),
        "run_s": statistics.median(w for w, _, _ in run),
        # per process: on a timed scenario a tie before µs can go either way between processes
        "recommendations": collections.Counter(
            r["recommendation"]["name"] if r["recommendation"] else None for _, _, r in suggest
        ),
    }


def _objective(rec: dict | None) -> str:
    """A recommendation on the objective: its name, compiles and guards."""
    if rec is None:
        return "none"
    return (
        f"{rec['name']}: {rec['compiles']} compiles, guards {rec['guard_count']}/"
        f"{rec['shape_env_guard_count']}"
    )


#: an encoder trained with labels over B x S, a ragged last batch: it sets config.problem_type
#: on its first forward (a recompile on the model's own state), 5 varying dims; the test suite's
#: program, whose `--bs` run applies suggest's answer by hand
BERT = ROOT / "tests" / "programs" / "bert_classify"


def _applied(row: dict) -> str:
    """suggest's answer on the BERT case, applied by hand to the plain program (model.py --bs:
    the marks put on the inputs before each call, or dynamic=True): its compiles against the
    ones suggest claimed."""
    rec = row["recommendation"]
    if rec is None:
        return "no recommendation"
    if rec["whole_function"] not in (None, "dynamic_true"):
        return f"n/a: {rec['whole_function']} is not applied by model.py --bs"
    change = (
        rec["whole_function"]
        or ",".join(f"{m['argument']}:{m['dim']}={m['kind']}" for m in rec["marks"])
        or "none"
    )
    done = subprocess.run(
        [sys.executable, str(BERT / "model.py"), "--bs", change],
        capture_output=True, text=True, env={**os.environ, "OMP_NUM_THREADS": "1"}, cwd=BERT,
    )  # fmt: skip
    if done.returncode != 0:
        return f"the plain program failed: {done.stderr[-500:]}"
    got = json.loads(done.stdout.strip().splitlines()[-1])["compiles"]
    claimed = rec["compiles"]
    return f"{change} applied by hand to the plain program: {got} compiles (suggest: {claimed})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3, help="processes per command (median)")
    parser.add_argument(
        "--models",
        action="store_true",
        help="add the tiny Llama and GPT-2 generate() cases and the BERT classifier",
    )
    parser.add_argument(
        "--unbounded",
        action="store_true",
        help="also run, once, the greedy search over single dims with no time limit (the "
        "search before grouping) on the greedy cases, to compare recommendations",
    )
    parser.add_argument(
        "--jobs",
        type=int,
        default=1,
        help="also run suggest --jobs N (N worker processes) beside each plain suggest",
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        Path(tmp, "five.py").write_text(FIVE)
        Path(tmp, "five.yaml").write_text(FIVE_YAML)
        rows = {
            "seed op (logprobs.yaml)": measure(
                str(ROOT / "configs" / "logprobs.yaml"), args.runs, jobs=args.jobs
            ),
            "five dims": measure(str(Path(tmp, "five.yaml")), args.runs, args.unbounded, args.jobs),
        }
        if args.models:
            for name, source in MODELS.items():
                Path(tmp, f"{name}.py").write_text(source)
                Path(tmp, f"{name}.yaml").write_text(MODEL_YAML.format(name=name))
                rows[f"tiny {name} generate()"] = measure(
                    str(Path(tmp, f"{name}.yaml")), args.runs, args.unbounded, args.jobs
                )
            rows["tiny bert classify"] = measure(
                str(BERT / "classify_bs.yaml"), args.runs, args.unbounded, args.jobs
            )
            rows["tiny bert classify"]["applied"] = _applied(rows["tiny bert classify"])
    head = (
        f"{'scenario':<24} {'search':<10} {'dims':>4} {'cand.':>5} {'runs: suggest':>13} "
        f"{'run':>4} {'ratio':>6} {'wall s: suggest':>15} {'run':>5} {'ratio':>6}"
    )
    print(head)
    print("-" * len(head))
    for name, r in rows.items():
        print(
            f"{name:<24} {r['search']:<10} {r['dims']:>4} {r['candidates']:>5} "
            f"{r['suggest_runs']:>13} {r['run_runs']:>4} "
            f"{r['suggest_runs'] / r['run_runs']:>6.1f} {r['suggest_s']:>15.1f} "
            f"{r['run_s']:>5.1f} {r['suggest_s'] / r['run_s']:>6.1f}"
        )
    print(
        f"\nmedian of {args.runs} fresh processes per command, OMP_NUM_THREADS=1; runs = probe "
        "runs (one strategy or candidate over one sequence), counted around probe.probe"
    )
    print(f"\n{'scenario':<24} {'read':>4} {'wall s: suggest --from-report':>29} {'/ run':>6}")
    for name, r in rows.items():
        print(
            f"{name:<24} {r['reused']:>4} {r['from_report_s']:>29.1f} "
            f"{r['from_report_s'] / r['run_s']:>6.1f}"
        )
    print("(read: candidates taken from the saved run report instead of measured)\n")
    if args.jobs > 1:
        for name, r in rows.items():
            print(
                f"{name}: suggest --jobs {args.jobs} {r['jobs_s']:.1f} s vs {r['suggest_s']:.1f} s "
                f"({r['jobs_s'] / r['suggest_s']:.2f}x): {r['jobs_best']}"
            )
        print()
    for name, r in rows.items():
        said = ", ".join(f"{rec} ({n}x)" for rec, n in r["recommendations"].most_common())
        print(f"{name}: recommended {said}; {r['best']}")
        if "applied" in r:
            print(f"  {r['applied']}")
        if r["per_dim"] is not None:
            u = r["per_dim"]
            print(
                f"  per-dim greedy, no time limit: {u['candidates']} candidates, {u['s']:.1f} s "
                f"({u['s'] / r['suggest_s']:.1f}x grouped): {u['best']}"
            )


if __name__ == "__main__":
    main()
