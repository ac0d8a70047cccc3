"""Two (or more) ranks on gloo whose compiles part, or agree, with the program's own count.

    torchrun --nproc-per-node 2 ranks.py diverge OUT_DIR
    torchrun --nproc-per-node 2 ranks.py same OUT_DIR
    python ranks.py spawn OUT_DIR        (torch.multiprocessing.spawn, 2 ranks, diverge)

``diverge``: ``step`` sees batch 4 on every rank except at call 3, where rank 1's batch shrinks to
3 (a ragged last shard): rank 1 recompiles, rank 0 does not. ``agree`` sees the same sizes on
every rank. ``limited`` (recompile limit 2, static shapes) gets a new size at every call on rank
1, so rank 1 hits the limit and runs it eagerly; rank 0 keeps one size. A collective follows each
step, as in a training loop. ``same``: every rank runs rank 0's sequence.

Each rank writes OUT_DIR/truth_rank_N.json: what ``torch._dynamo.utils.get_compilation_metrics()``
said in that rank, grouped by frame (the part of the compile id before the ``/``), per function
name: records, records with ``fail_type``, records that failed on the recompile limit. That is the
independent count a test holds the tool's per-rank figures against.
"""

import inspect
import json
import os
import re
import sys

import torch
import torch.distributed as dist

LIMIT = 2
CALLS = 4
#: the failure a recompile limit leaves: "Dynamo recompile limit exceeded" (2.13),
#: "recompile_limit reached" / "cache_size_limit reached" (2.9)
_LIMIT_TEXT = re.compile(r"recompile[ _]limit|cache_size_limit")


def step(x):
    return (x * 2).sum()


def agree(x):
    return torch.relu(x) + 1


def limited(x):
    return torch.cos(x) * 3


def _limited():
    if "recompile_limit" in inspect.signature(torch.compile).parameters:
        return torch.compile(limited, backend="eager", dynamic=False, recompile_limit=LIMIT)
    config = torch._dynamo.config
    name = "recompile_limit" if hasattr(config, "recompile_limit") else "cache_size_limit"
    setattr(torch._dynamo.config, name, LIMIT)
    return torch.compile(limited, backend="eager", dynamic=False)


def truth() -> dict:
    by_frame: dict[str, list] = {}
    for m in torch._dynamo.utils.get_compilation_metrics():
        by_frame.setdefault(str(m.compile_id).split("/")[0], []).append(m)
    out = {}
    for records in by_frame.values():
        name = next((m.co_name for m in records if m.co_name), "?")
        out[name] = {
            "compiles": len(records),
            "failed": sum(m.fail_type is not None for m in records),
            "limit_hit": sum(bool(_LIMIT_TEXT.search(str(m.fail_reason or ""))) for m in records),
        }
    return out


def work(rank: int, world: int, mode: str, out: str) -> None:
    dist.init_process_group("gloo", rank=rank, world_size=world)
    compiled_step = torch.compile(step, backend="eager")
    compiled_agree = torch.compile(agree, backend="eager")
    compiled_limited = _limited()
    ragged = mode != "same" and rank == 1
    for call in range(1, CALLS + 1):
        batch = 3 if ragged and call == 3 else 4
        loss = compiled_step(torch.ones(batch, 8))
        compiled_agree(torch.ones(4, 8))
        compiled_limited(torch.ones(call if ragged else 1))
        dist.all_reduce(loss)  # every rank waits here for the others
    with open(os.path.join(out, f"truth_rank_{rank}.json"), "w") as handle:
        json.dump(truth(), handle)
    # both ranks done with every collective before either tears gloo down: a rank whose peer
    # closed its connections first can abort at exit ("terminate called without an active
    # exception")
    dist.barrier()
    dist.destroy_process_group()


def _spawned(rank: int, world: int, out: str) -> None:
    work(rank, world, "diverge", out)


if __name__ == "__main__":
    mode, out = sys.argv[1], sys.argv[2]
    if mode == "spawn":
        import socket

        import torch.multiprocessing as mp

        with socket.socket() as s:  # a free port: parallel tests must not meet
            s.bind(("127.0.0.1", 0))
            os.environ["MASTER_PORT"] = str(s.getsockname()[1])
        os.environ["MASTER_ADDR"] = "127.0.0.1"
        mp.spawn(_spawned, args=(2, out), nprocs=2)
    else:
        work(int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"]), mode, out)
    print("done")
