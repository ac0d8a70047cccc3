"""Subprocess entry point for ``--isolate process``: one strategy, every sequence.

Each finished run is appended to the output file as a JSON line at once, so whatever happens to
this process afterwards, finished runs survive.
"""

from __future__ import annotations

import dataclasses
import json
import sys

from .errors import ProbeError


def main(job_path: str, out_path: str) -> int:
    from . import scenario as scenario_mod
    from .session import environment

    job = json.loads(open(job_path).read())
    with open(out_path, "a", encoding="utf-8") as out:
        def emit(record: dict) -> None:
            out.write(json.dumps(record) + "\n")
            out.flush()

        try:
            scenario = scenario_mod.with_overrides(scenario_mod.load(job["path"]),
                                                   **job["overrides"])
            from .isolation import InlineExecutor

            executor = InlineExecutor(scenario, job.get("trace_dir"))
            executor.prepare()
            emit({"environment": dataclasses.asdict(environment())})
            for run in executor.run_strategy(job["strategy"]):
                emit({"run": dataclasses.asdict(run)})
        except ProbeError as exc:
            emit({"fatal": {"type": type(exc).__name__, "message": exc.message,
                            "remedy": exc.remedy}})
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:3]))
