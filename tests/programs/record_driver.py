"""Runs a program inside `recompile_probe.record()` in this fresh process and dumps what it saw.

    python record_driver.py OUT.json PROGRAM.py [ARGS...]

The program runs as `python PROGRAM ARGS` would (``runpy.run_path`` as ``__main__``, its folder
first on ``sys.path``); the dump is written also when the program raises.
"""

import json
import os
import runpy
import sys

import recompile_probe
from recompile_probe.records import encode


def main() -> None:
    out, program, *args = sys.argv[1:]
    program = os.path.abspath(program)
    sys.argv = [program, *args]
    sys.path.insert(0, os.path.dirname(program))
    error = None
    with recompile_probe.record() as rec:
        try:
            runpy.run_path(program, run_name="__main__")
        except BaseException as exc:  # noqa: BLE001 - dump what was recorded, then report
            error = f"{type(exc).__name__}: {exc}"
    with open(out, "w", encoding="utf-8") as handle:
        json.dump({"pid": os.getpid(), "error": error, "summary": rec.to_dict(),
                   "events": [encode.data(e) for e in rec.events]},
                  handle, indent=1, default=str)


if __name__ == "__main__":
    main()
