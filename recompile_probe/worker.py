"""Subprocess entry point for process isolation.

Two modes. ``--isolate process``: one strategy, every sequence, then exit. ``--jobs N`` (``"serve"``
in the job file): a pool worker that imports torch once, then runs one (scenario, strategy,
sequence) job at a time as the parent sends them, one JSON line each on its standard input, until
that input ends. A served scenario is prepared once (target loaded, warm-up compile, eager
references) and kept for the next jobs of the same scenario; each run starts from the probe's own
reset (``torch._dynamo.reset()`` and what it leaves behind, config, stance and marks restored, a
fresh recorder), exactly as inline mode runs one strategy after another.

Each finished run is appended to the output file as a JSON line at once, so whatever happens to
this process afterwards (a timeout, Ctrl-C in the parent, a crash), finished runs survive: the
parent reads them back. With ``--debug`` (``"debug"`` in the job) torch's own error logs are kept
and a fatal error's traceback goes to stderr, which the parent relays.
"""

from __future__ import annotations

import base64
import collections
import dataclasses
import json
import os
import pickle
import signal
import sys
import time
import traceback
from typing import Any, Callable, TextIO

from .errors import ProbeError


def _die_with_parent(parent: int | None) -> None:
    """A parent killed outright (SIGKILL) cannot stop us: ask Linux for SIGTERM when it dies.
    We lead our own session, so no terminal signal would reach us otherwise."""
    if not sys.platform.startswith("linux") or parent is None:
        return
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        return
    if os.getppid() != parent:  # it died before prctl took effect
        os._exit(1)


def _term_takes_the_group() -> None:
    """On SIGTERM, whoever sends it (the parent stopping us, or our parent's death), end what we
    started too (inductor's compile workers, the target's own children)."""
    if not hasattr(os, "killpg") or os.getpgrp() != os.getpid():
        return  # not a group of our own: never signal the caller's

    def forward(signum: int, frame: object) -> None:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        os.killpg(os.getpgrp(), signal.SIGTERM)  # ourselves included, by the default action

    signal.signal(signal.SIGTERM, forward)


def main(job_path: str, out_path: str) -> int:
    job = json.loads(open(job_path).read())
    _term_takes_the_group()
    _die_with_parent(job.get("parent"))
    debug = bool(job.get("debug"))
    if job.get("serve"):
        return serve(out_path, debug)

    from . import scenario as scenario_mod
    from .session import environment

    with open(out_path, "a", encoding="utf-8") as out:
        emit = _emitter(out)
        try:
            scenario = scenario_mod.with_overrides(scenario_mod.load(job["path"]),
                                                   **job["overrides"])
            from .isolation import InlineExecutor

            executor = InlineExecutor(scenario, job.get("trace_dir"), debug=debug)
            executor.prepare()
            emit({"environment": dataclasses.asdict(environment())})
            for run in executor.run_strategy(job["strategy"]):
                emit({"run": dataclasses.asdict(run)})
        except ProbeError as exc:
            _fatal(emit, exc, debug)
    return 0


#: Prepared scenarios a pool worker keeps (eager outputs, loaded target): jobs come scenario by
#: scenario, so two cover a change of scenario without holding every target's tensors.
KEEP_PREPARED = 2


def preparation_key(scenario: Any) -> bytes:
    """What a prepared scenario depends on: everything but the strategies, budgets and names.

    Candidate strategies of one scenario (custom strategies added, a subset chosen) share the
    loaded target and the eager references; a different target, input, sequence or backend does
    not."""
    from .model import replace

    return pickle.dumps(replace(scenario, strategies=(), custom_strategies={}, compile={},
                                budgets=()))


def _job_stream() -> TextIO:
    """The parent's job lines, on a descriptor of their own: standard input becomes /dev/null, so
    a target that reads stdin cannot swallow a job."""
    private = os.dup(0)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    sys.stdin = open(os.devnull, encoding="utf-8")
    return os.fdopen(private, "r", encoding="utf-8")


def serve(out_path: str, debug: bool) -> int:
    jobs = _job_stream()
    started = time.perf_counter()
    from . import probe  # torch, before the first job: the pool's workers start side by side
    from .isolation import InlineExecutor
    from .session import environment

    # For the worker's life, not per prepared scenario: two executors would restore it out of turn.
    probe.QUIET_TORCH_LOGS = not debug
    prepared: collections.OrderedDict[bytes, InlineExecutor] = collections.OrderedDict()
    with open(out_path, "a", encoding="utf-8") as out:
        emit = _emitter(out)
        emit({"ready": {"import_s": round(time.perf_counter() - started, 4)}})
        emit({"environment": dataclasses.asdict(environment())})
        for line in jobs:
            if not line.strip():
                continue
            job = json.loads(line)
            scenario = pickle.loads(base64.b64decode(job["scenario"]))
            try:
                t0 = time.perf_counter()
                key = preparation_key(scenario)
                executor = prepared.get(key)
                if executor is None:
                    executor = InlineExecutor(scenario, job.get("trace_dir"))
                    executor.prepare()
                    prepared[key] = executor
                    while len(prepared) > KEEP_PREPARED:
                        prepared.popitem(last=False)[1].close()
                prepared.move_to_end(key)
                t1 = time.perf_counter()
                executor.trace_dir = job.get("trace_dir")
                run = executor.run_one(job["strategy"], job["sequence"], scenario)
                t2 = time.perf_counter()
            except ProbeError as exc:
                _fatal(emit, exc, debug, job["id"])
                return 0  # its state is unknown: the parent starts a fresh worker if needed
            emit({"job": job["id"], "run": dataclasses.asdict(run),
                  "cost": {"prepare_s": round(t1 - t0, 4), "run_s": round(t2 - t1, 4)}})
    return 0


def _emitter(out: TextIO) -> Callable[[dict], None]:
    def emit(record: dict) -> None:
        out.write(json.dumps(record) + "\n")
        out.flush()

    return emit


def _fatal(emit: Callable[[dict], None], exc: ProbeError, debug: bool, job: int | None = None
           ) -> None:
    if debug:  # before the record: the parent relays stderr once it reads the record
        traceback.print_exc(file=sys.stderr)
        sys.stderr.flush()
    record: dict = {"fatal": {"type": type(exc).__name__, "message": exc.message,
                              "remedy": exc.remedy}}
    if job is not None:
        record["job"] = job
    emit(record)


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:3]))
