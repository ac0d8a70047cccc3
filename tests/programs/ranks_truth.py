"""The independent count for tests/execution/test_ranks.py (never imports recompile_probe).

    RANK=r WORLD_SIZE=n MASTER_ADDR=.. MASTER_PORT=.. python ranks_truth.py OUT.json SIZES.json

One rank of a plain distributed program: it joins a gloo process group and, for each strategy
written out by hand below, drives examples/distributed/train_step.py's step through this rank's
batch sizes (SIZES.json: {"0": [8, 8, 8], "1": [8, 8, 3]}) with its all_reduce, as a training
loop would, from a fresh Dynamo state. It writes what Dynamo itself produced on this rank:

- compiles: ``get_compilation_metrics()`` records; recompiles: those with ``cache_size > 0``;
- failed: records with ``fail_type`` set;
- graphs: a ``CompileCounter`` backend's frame count;
- events: per call, "compile" / "recompile" (a record appeared during it) or "hit".

Compiler collectives are tried on a canary, as a user would switch them on: the exception a
compile raises with them is written (``compiler_collectives_error``), None if it compiled.
"""

from __future__ import annotations

import datetime
import importlib.util
import json
import os
import sys
from pathlib import Path

import torch
import torch.distributed as dist
from torch._dynamo.testing import CompileCounter

STEP = Path(__file__).resolve().parents[2] / "examples" / "distributed" / "train_step.py"


def load_step():
    spec = importlib.util.spec_from_file_location("train_step_truth", STEP)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def fresh() -> None:
    torch._dynamo.reset()
    torch._dynamo.utils.clear_compilation_metrics()


def drive(program, sizes, *, dynamic=None, mark=False, guard_collectives=False) -> dict:
    fresh()
    counter = CompileCounter()
    compiled = torch.compile(program.step, backend=counter, dynamic=dynamic)

    def fn(x, w):
        if mark:
            torch._dynamo.mark_dynamic(x, 0)
        return compiled(x, w)

    events = []
    previous = torch.compiler.set_enable_guard_collectives(guard_collectives)
    try:
        for size in sizes:
            before = len(torch._dynamo.utils.get_compilation_metrics())
            program.run(fn, B=size)
            new = torch._dynamo.utils.get_compilation_metrics()[before:]
            events.append(
                "hit" if not new else "recompile" if any(m.cache_size for m in new) else "compile"
            )
    finally:
        torch.compiler.set_enable_guard_collectives(previous)
    metrics = torch._dynamo.utils.get_compilation_metrics()
    return {
        "compiles": len(metrics),
        "recompiles": sum(1 for m in metrics if m.cache_size),
        "failed": sum(1 for m in metrics if m.fail_type),
        "graphs": counter.frame_count,
        "events": events,
        "reasons": [m.recompile_reason for m in metrics if m.cache_size],
    }


def compiler_collectives_error() -> str | None:
    fresh()
    try:
        with torch._dynamo.config.patch(enable_compiler_collectives=True):
            torch.compile(lambda x: x * 2, backend="eager")(torch.ones(3))
    except Exception as exc:  # noqa: BLE001 - what it raised is the finding
        return type(exc.__cause__ or exc).__name__
    finally:
        fresh()
    return None


def main(out: str, sizes_file: str) -> None:
    rank = int(os.environ["RANK"])
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=30))
    sizes = json.loads(Path(sizes_file).read_text())[str(rank)]
    program = load_step()
    torch._dynamo.utils.set_compilation_metrics_limit(1000)
    found = {
        "default": drive(program, sizes),
        "static": drive(program, sizes, dynamic=False),
        "dynamic_true": drive(program, sizes, dynamic=True),
        "mark_dynamic": drive(program, sizes, mark=True),
        "guard_collectives": drive(program, sizes, guard_collectives=True),
    }
    dist.barrier()
    found_cc = compiler_collectives_error()
    Path(out).write_text(
        json.dumps({"rank": rank, "strategies": found, "compiler_collectives_error": found_cc})
    )
    dist.destroy_process_group()


if __name__ == "__main__":
    main(*sys.argv[1:3])
