"""A worker process (``python -m recompile_probe.execution.worker JOB OUT``), for ``--isolate
process`` and the ``--jobs N`` pool alike (protocol.py).

It imports torch once, then runs one (scenario, strategy, sequence) job at a time as the parent
sends them, until its job stream ends. A scenario is prepared once (target loaded, warm-up
compile, eager references) and kept for the next jobs of the same scenario, on its first job or
ahead of it when asked (a ``prepare`` line: the parent's next worker loads the target and warms
up while the current one runs; the timed eager references wait for its first job). Each run
starts from the probe's own reset (``torch._dynamo.reset()`` and what it leaves behind, config,
stance and marks restored, a fresh recorder), exactly as inline mode runs one strategy after
another.

Each finished run is appended to the output file as a JSON line at once, so whatever happens to
this process afterwards (a timeout, Ctrl-C in the parent, a crash), finished runs survive: the
parent reads them back. With ``debug`` torch's own error logs are kept and a fatal error's
traceback goes to stderr, which the parent relays.
"""

from __future__ import annotations

import collections
import json
import os
import sys
import time
import traceback
from collections.abc import Callable
from typing import TextIO

from ..errors import ProbeError
from ..records import encode
from ..scenario.model import Scenario
from . import processes, protocol


def main(job_path: str, out_path: str) -> int:
    job = json.loads(open(job_path).read())
    processes.bind_to_parent(job.get("parent"))
    return serve(out_path, bool(job.get("debug")), start=job.get("start"))


def _job_stream() -> TextIO:
    """The parent's job lines, on a descriptor of their own: standard input becomes /dev/null, so
    a target that reads stdin cannot swallow a job."""
    private = os.dup(0)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    sys.stdin = open(os.devnull, encoding="utf-8")
    return os.fdopen(private, "r", encoding="utf-8")


def serve(
    out_path: str,
    debug: bool,
    before_run: Callable[[], None] | None = None,
    start: str | None = None,
) -> int:
    """``before_run``: called before each job (a rank process waits there for the other ranks,
    so that every rank starts each strategy together); ``start``: how this worker started, for
    the environment record."""
    jobs = _job_stream()
    started = time.perf_counter()
    from ..records.environment import current
    from ..torch_compat.settings import changed_config
    from .inline import Prepared  # torch, before the first job: workers start side by side

    prepared: collections.OrderedDict[bytes, Prepared] = collections.OrderedDict()
    with open(out_path, "a", encoding="utf-8") as out:
        emit = _emitter(out)
        emit({"ready": {"import_s": round(time.perf_counter() - started, 4)}})
        emit({"environment": encode.data(current(config=changed_config(), worker_start=start))})

        def prepare(scenario: Scenario, ahead: bool = False) -> Prepared:
            key = protocol.preparation_key(scenario)
            ready = prepared.get(key)
            if ready is None:
                # ahead of its turn: no eager reference yet, those are timed calls and wait
                # until no other worker runs beside this one
                ready = Prepared(scenario, debug, sequences={} if ahead else None)
                prepared[key] = ready
                # the target's import may set compile config itself: in force from now
                emit(
                    {
                        "environment": encode.data(
                            current(config=changed_config(), worker_start=start)
                        )
                    }
                )
                while len(prepared) > protocol.KEEP_PREPARED:
                    prepared.popitem(last=False)
            prepared.move_to_end(key)
            return ready

        for line in jobs:
            if not line.strip():
                continue
            job = json.loads(line)
            if "prepare" in job:  # ahead of its jobs, while another worker runs
                scenario = protocol.decode(job["prepare"])
                try:
                    prepare(scenario, ahead=True)
                except ProbeError:
                    # perhaps only beside the running worker (a lock, a port, memory): the
                    # parent starts this strategy in a worker of its own at its turn instead
                    emit({"unprepared": True})
                    return 0
                # CLOCK_MONOTONIC: one clock for every process of the machine
                emit({"prepared": {"at": time.monotonic()}})
                continue
            scenario = protocol.decode(job["scenario"])
            if before_run is not None:
                before_run()
            try:
                t0 = time.perf_counter()
                ready = prepare(scenario)
                ready.complete()
                t1 = time.perf_counter()
                run = ready.run(
                    job["strategy"],
                    job["sequence"],
                    scenario,
                    job.get("trace_dir"),
                    cap=job.get("cap"),
                )
                t2 = time.perf_counter()
            except ProbeError as exc:
                if debug:  # before the record: the parent relays stderr once it reads the record
                    traceback.print_exc(file=sys.stderr)
                    sys.stderr.flush()
                emit(protocol.fatal(exc, job["id"]))
                return 0  # its state is unknown: the parent starts a fresh worker if needed
            emit(
                {
                    "job": job["id"],
                    "run": encode.data(run),
                    "cost": {"prepare_s": round(t1 - t0, 4), "run_s": round(t2 - t1, 4)},
                }
            )
    return 0


def _emitter(out: TextIO) -> Callable[[dict], None]:
    def emit(record: dict) -> None:
        out.write(json.dumps(record) + "\n")
        out.flush()

    return emit


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:3]))
