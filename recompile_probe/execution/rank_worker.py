"""One rank of a distributed scenario (``python -m recompile_probe.execution.rank_worker JOB
OUT``): a worker (worker.py, the same protocol) that first joins the process group its
environment describes (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT) and waits for every other
rank before each job, so that the ranks run each strategy side by side, as the ranks of a real
job run the same step. The parent sends each rank its own sizes (``Scenario.for_rank``).

A collective waits at most the scenario's ``distributed.timeout_s``, so a rank whose peer never
joins fails instead of hanging; the parent stops every rank when one makes no progress for
longer still (ranks.py).
"""

from __future__ import annotations

import json
import os
import sys
import traceback

from ..errors import ProbeError
from . import processes, protocol, worker


def main(job_path: str, out_path: str) -> int:
    job = json.loads(open(job_path).read())
    processes.bind_to_parent(job.get("parent"))
    from ..torch_compat.collectives import barrier, close_group, init_group

    rank = os.environ.get("RANK", "?")
    try:
        init_group(job["backend"], float(job["timeout_s"]))
    except Exception as exc:  # noqa: BLE001 - any failure to join is the user's setup to fix
        if job.get("debug"):
            traceback.print_exc(file=sys.stderr)
        error = ProbeError(
            f"rank {rank} could not join the {job['backend']!r} process group: "
            f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}",
            "Check `distributed.backend` (gloo runs on CPU; nccl needs a GPU per rank).",
        )
        with open(out_path, "a", encoding="utf-8") as out:
            out.write(json.dumps(protocol.fatal(error, None)) + "\n")
        return 0
    try:
        return worker.serve(
            out_path, bool(job.get("debug")), before_run=barrier, start=job.get("start")
        )
    finally:
        close_group()


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:3]))
