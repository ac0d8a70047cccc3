"""Subprocess entry point for ``--isolate process``: one strategy, every sequence.

Each finished run is appended to the output file as a JSON line at once, so whatever happens to
this process afterwards (a timeout, Ctrl-C in the parent, a crash), finished runs survive: the
parent reads them back. With ``--debug`` (``"debug"`` in the job) torch's own error logs are kept
and a fatal error's traceback goes to stderr, which the parent relays.
"""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import sys
import traceback

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

    from . import scenario as scenario_mod
    from .session import environment

    with open(out_path, "a", encoding="utf-8") as out:
        def emit(record: dict) -> None:
            out.write(json.dumps(record) + "\n")
            out.flush()

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
            if debug:  # before the record: the parent relays stderr once it reads the record
                traceback.print_exc(file=sys.stderr)
                sys.stderr.flush()
            emit({"fatal": {"type": type(exc).__name__, "message": exc.message,
                            "remedy": exc.remedy}})
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:3]))
