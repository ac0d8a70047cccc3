"""The one protocol between the parent and a worker process, for ``--isolate process`` and the
``--jobs N`` pool alike.

In: one JSON line per job on the worker's private job stream: ``{"id", "scenario", "strategy",
"sequence", "trace_dir", "cap"}``, the ``Scenario`` object itself pickled (so a scenario changed
in code runs as it is, not as its file says), or ``{"prepare": scenario}``: load its target and
warm up now, ahead of its jobs. Out: one JSON line per record, appended to the worker's output
file: ``{"ready": {"import_s"}}`` once torch is imported, ``{"environment": {...}}``,
``{"prepared": {"at"}}`` when a preparation asked ahead is done (``at``: time.monotonic()),
``{"unprepared": true}`` when it failed (the worker's last record: the parent runs that
strategy in another worker), ``{"job": id, "run": {...}, "cost": {...}}`` per
finished run, and ``{"job": id, "fatal": {"type", "message", "remedy"}}`` when a scenario cannot
be prepared (the worker's last record).
"""

from __future__ import annotations

import base64
import pickle
from dataclasses import replace
from typing import Any

from ..errors import EagerFailure, ProbeError, ScenarioError, TargetError, UsageError
from ..scenario.model import Scenario

#: Prepared scenarios a worker keeps (eager outputs, loaded target): jobs come scenario by
#: scenario, so two cover a change of scenario without holding every target's tensors.
KEEP_PREPARED = 2

_FATAL: dict[str, type[ProbeError]] = {
    "EagerFailure": EagerFailure,
    "TargetError": TargetError,
    "ScenarioError": ScenarioError,
    "UsageError": UsageError,
}


def encode(scenario: Scenario) -> str:
    return base64.b64encode(pickle.dumps(scenario)).decode("ascii")


def decode(payload: str) -> Scenario:
    return pickle.loads(base64.b64decode(payload))


def job(
    token: int,
    payload: str,
    strategy: str,
    sequence: str,
    trace_dir: str | None,
    cap: int | None = None,
) -> dict:
    """A job line; ``payload``: the encoded scenario (encode it once for many jobs); ``cap``:
    the compiles past which the run stops (Job.cap)."""
    return {
        "id": token,
        "scenario": payload,
        "strategy": strategy,
        "sequence": sequence,
        "trace_dir": trace_dir,
        "cap": cap,
    }


def prepare(payload: str) -> dict:
    """A line that has the worker load a scenario's target and warm up before any of its jobs
    arrive."""
    return {"prepare": payload}


def preparation_key(scenario: Scenario) -> bytes:
    """What a prepared scenario depends on: everything but the strategies, budgets and names.

    Candidate strategies of one scenario (custom strategies added, a subset chosen) share the
    loaded target and the eager references; a different target, input, sequence or backend does
    not."""
    return pickle.dumps(
        replace(scenario, strategies=(), custom_strategies={}, compile={}, budgets=())
    )


def fatal(exc: ProbeError, job_id: int | None) -> dict:
    record: dict[str, Any] = {
        "fatal": {"type": type(exc).__name__, "message": exc.message, "remedy": exc.remedy}
    }
    if job_id is not None:
        record["job"] = job_id
    return record


def fatal_error(record: dict) -> ProbeError:
    """A worker's fatal record as the error class it was raised with, its message verbatim."""
    data = record["fatal"]
    cls = _FATAL.get(data["type"], ProbeError)
    error = cls.__new__(cls)  # ScenarioError's own __init__ would prefix the path a second time
    ProbeError.__init__(error, data["message"], data.get("remedy"))
    if isinstance(error, ScenarioError):
        error.path = error.line = error.key = None
    return error
