"""What do watch's and record()'s provenance (issue 11) cost: the user line of each failing guard,
every failing guard (the recompiles_verbose artifact), the wrapper's user name, graph-break
lines? Targets: per compile <= 1.10x the recorder without them; per call 1.00x (nothing runs
per call of compiled code: the guard-failure path runs only on a recompile).

One round = a fresh Dynamo state, then tests/programs/static_cache_model.py's three generations
(6 compiles, 5 of them recompiles over several cache entries) under ``Recorder()`` (provenance
on) or ``Recorder(provenance=False)`` (plain recompiles log, no capture); rounds alternate on /
off in one process. Compiles are counted by torch's CompileCounter. Then the per-call figure: a
compiled call's median time with each recorder active, after warm-up.

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/recorder_provenance.py [--rounds 6]
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import time
from pathlib import Path

import torch
from torch._dynamo.testing import CompileCounterWithBackend

from recompile_probe.recording.recorder import Recorder

PROGRAM = Path(__file__).parent.parent / "tests" / "programs" / "static_cache_model.py"


def _program():
    spec = importlib.util.spec_from_file_location("static_cache_model", PROGRAM)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def one_round(program, provenance: bool) -> tuple[float, int, int]:
    torch._dynamo.reset()
    torch.manual_seed(0)
    model = program.TinyDecoder().eval()
    counter = CompileCounterWithBackend("eager")
    compiled = torch.compile(model, backend=counter)
    start = time.perf_counter()
    with torch.no_grad(), Recorder(provenance=provenance) as rec:
        program.generate(compiled, batch=1, prompt_len=5, max_cache_len=16)
        program.generate(compiled, batch=2, prompt_len=5, max_cache_len=16)
        program.generate(compiled, batch=1, prompt_len=20, max_cache_len=32)
    elapsed = time.perf_counter() - start
    if provenance:
        assert any(e.reason_origins for e in rec.events if e.recompile)
    return elapsed, counter.frame_count, len(rec.events)


def per_call(program, provenance: bool, calls: int) -> float:
    torch._dynamo.reset()
    model = program.TinyDecoder().eval()
    compiled = torch.compile(model, backend="eager")
    cache = program.StaticCache(1, 16)
    kwargs = dict(
        input_ids=torch.ones(1, 1, dtype=torch.long),
        attention_mask=torch.ones(1, 6, dtype=torch.long),
        past_key_values=cache,
        cache_position=torch.tensor([5]),
        position_ids=torch.tensor([[5]]),
        use_cache=True,
        return_dict=True,
    )
    times = []
    with torch.no_grad(), Recorder(provenance=provenance):
        for _ in range(3):
            compiled(**kwargs)
        for _ in range(calls):
            start = time.perf_counter()
            compiled(**kwargs)
            times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--calls", type=int, default=2000)
    args = parser.parse_args()
    program = _program()
    one_round(program, True), one_round(program, False)  # warm-up: imports, lazy inits
    on, off, compiles = [], [], {True: 0, False: 0}
    for _ in range(args.rounds):
        for provenance, out in ((True, on), (False, off)):
            elapsed, frames, events = one_round(program, provenance)
            out.append(elapsed)
            compiles[provenance] += events
            assert frames == events, (frames, events)  # every compile recorded, none invented
    ratio = statistics.median(on) / statistics.median(off)
    print(
        f"compile: provenance on {statistics.median(on) * 1000:.1f} ms/round, off "
        f"{statistics.median(off) * 1000:.1f} ms/round, ratio {ratio:.3f} "
        f"({compiles[True]} compiles on, {compiles[False]} off, CompileCounter-checked)"
    )
    call_on = per_call(program, True, args.calls)
    call_off = per_call(program, False, args.calls)
    print(
        f"per call: on {call_on * 1e6:.1f} µs, off {call_off * 1e6:.1f} µs, "
        f"ratio {call_on / call_off:.3f}"
    )


if __name__ == "__main__":
    main()
