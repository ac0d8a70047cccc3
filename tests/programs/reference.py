"""The independent reference for tests/commands/test_watch_real_programs.py (never imports
recompile_probe).

    python reference.py OUT.json PROGRAM.py [ARGS...]

Runs PROGRAM as `python PROGRAM ARGS` would (``runpy.run_path`` as ``__main__``, its folder first
on ``sys.path``, ``sys.argv`` set) in this fresh process, and at exit, also when the program
raised, writes what Dynamo itself produced, per frame (the part of ``compile_id`` before ``/``):
its compilation-metrics records (``get_compilation_metrics()``, deque limit raised) and the
messages of the ``recompiles`` log artifact (or ``recompiles_verbose`` when the user's
``TORCH_LOGS`` asked for it: Dynamo then logs only there).

Counting, per frame:
- compiles: metrics records;
- recompiles: records with ``cache_size > 0``, plus failed records (``fail_type`` set, no
  ``cache_size``) of a frame that already had a successful compile;
- failed: records with ``fail_type`` set;
- reasons: the ``N/M: ...`` guard-failure lines of the frame's recompiles messages, in order;
- compile_ids: the records' ids, in order.

A ``fail_on_recompile`` stance raises before Dynamo writes a record or a log line: the program
itself appends what it caught to ``$PROGRAM_CAUGHT_OUT`` (one JSON line per error) and it is
counted here as one failed recompile attempt of the function its message names.
"""

from __future__ import annotations

import atexit
import json
import logging
import os
import re
import runpy
import sys
import tempfile

HEADER = re.compile(r"Recompiling function (?P<name>\S+) in (?P<file>.+):(?P<line>\d+)")
# the fail_on_recompile stance's error: "... filename: 'f.py', function name: 'g', line number: 7"
STANCE_HEADER = re.compile(r"filename: '(?P<file>[^']+)', function name: '(?P<name>[^']+)', "
                           r"line number: (?P<line>\d+)")
# A guard-failure line of a recompiles message: "- 0/1: tensor 'x' size mismatch ..."
FAILURE = re.compile(r"^- (?P<id>!?\d+/\d+(?:_\d+)?): (?P<text>.*)$")
LOGGERS = ("torch._dynamo.guards.__recompiles", "torch._dynamo.guards.__recompiles_verbose")
FIELDS = ("compile_id", "co_name", "co_filename", "co_firstlineno", "cache_size", "fail_type",
          "fail_reason", "recompile_reason")

PARENT = os.getpid()
messages: list[dict] = []
caught_path = os.environ.setdefault(
    "PROGRAM_CAUGHT_OUT", os.path.join(tempfile.mkdtemp(prefix="reference-"), "caught.jsonl"))
state: dict = {"exit": None}


class Collect(logging.Handler):
    def emit(self, record: logging.LogRecord) -> None:
        messages.append({"logger": record.name, "message": record.getMessage()})


def parse_message(message: str) -> dict:
    header = HEADER.search(message) or STANCE_HEADER.search(message)
    failures = [m for m in (FAILURE.match(ln.strip()) for ln in message.splitlines()) if m]
    return {"function": header and header.group("name"),
            "filename": header and header.group("file"),
            "line": header and int(header.group("line")),
            "reasons": [f"{m.group('id')}: {m.group('text')}" for m in failures],
            "frame": failures[0].group("id").split("/")[0] if failures else None,
            "message": message}


def frames_from(records: list[dict], parsed: list[dict], caught: list[dict],
                unattributed: list[str]) -> dict:
    frames: dict[str, dict] = {}

    def frame(fid: str) -> dict:
        return frames.setdefault(fid, {"function": None, "filename": None, "line": None,
                                       "compiles": 0, "recompiles": 0, "failed": 0,
                                       "reasons": [], "compile_ids": [], "had_entry": False})

    for r in records:
        f = frame(str(r["compile_id"]).split("/")[0])
        if r["co_name"] is not None:
            f["function"], f["filename"], f["line"] = (r["co_name"], r["co_filename"],
                                                       r["co_firstlineno"])
        f["compiles"] += 1
        failed = r["fail_type"] is not None
        f["failed"] += failed
        cache_size = r["cache_size"]
        if (isinstance(cache_size, int) and cache_size > 0) or \
                (failed and cache_size is None and f["had_entry"]):
            f["recompiles"] += 1
        f["had_entry"] = f["had_entry"] or not failed
        f["compile_ids"].append(str(r["compile_id"]))
    for p in parsed:
        if p["frame"] is None:
            unattributed.append(p["message"])
            continue
        f = frame(p["frame"])
        f["reasons"] += p["reasons"]
        if f["function"] is None:
            f["function"], f["filename"], f["line"] = p["function"], p["filename"], p["line"]
    for c in caught:  # failed attempts with no record: the frame named by the message
        p = parse_message(c["message"])
        fid = p["frame"] or next((k for k, f in frames.items() if
                                  (f["function"], f["filename"], f["line"]) ==
                                  (p["function"], p["filename"], p["line"])), None)
        if fid is None:
            unattributed.append(c["message"])
            continue
        f = frame(fid)
        f["compiles"] += 1
        f["recompiles"] += 1
        f["failed"] += 1
        f["reasons"] += p["reasons"]
    for f in frames.values():
        del f["had_entry"]
    return frames


def write(out: str) -> None:
    if os.getpid() != PARENT:  # a forked child (DataLoader worker) inherits atexit: not ours
        return
    import torch._dynamo.utils as utils

    records = [{k: getattr(m, k, None) for k in FIELDS}
               for m in utils.get_compilation_metrics()]
    for r in records:
        r["fail_reason"] = None if r["fail_reason"] is None else str(r["fail_reason"])
    caught = []
    if os.path.exists(caught_path):
        with open(caught_path, encoding="utf-8") as handle:
            caught = [json.loads(ln) for ln in handle if ln.strip()]
    parsed = [parse_message(m["message"]) for m in messages]
    unattributed: list[str] = []  # messages or caught errors no frame could be found for
    frames = frames_from(records, parsed, caught, unattributed)
    result = {"pid": PARENT, "torch_logs": os.environ.get("TORCH_LOGS"), "exit": state["exit"],
              "compile_ids": [str(r["compile_id"]) for r in records], "frames": frames,
              "unattributed": unattributed, "records": records, "messages": messages,
              "caught": caught}
    with open(out, "w", encoding="utf-8") as handle:
        json.dump(result, handle, indent=1, default=str)


def main() -> None:
    out, program, *args = sys.argv[1:]
    program = os.path.abspath(program)
    import torch
    import torch._dynamo.utils as utils

    if hasattr(utils, "set_compilation_metrics_limit"):
        utils.set_compilation_metrics_limit(1_000_000)
    user_logs = os.environ.get("TORCH_LOGS") or ""
    if "recompiles" not in user_logs:
        torch._logging.set_logs(recompiles=True)
    for name in LOGGERS:
        logging.getLogger(name).addHandler(Collect(logging.DEBUG))
    atexit.register(write, out)
    sys.argv = [program, *args]
    sys.path.insert(0, os.path.dirname(program))
    try:
        runpy.run_path(program, run_name="__main__")
        state["exit"] = 0
    except SystemExit as exc:
        state["exit"] = exc.code
        raise
    except BaseException as exc:
        state["exit"] = f"{type(exc).__name__}: {exc}"
        raise


if __name__ == "__main__":
    main()
