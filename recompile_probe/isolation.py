"""Where probe runs execute: inline (one process, one torch import) or one process per strategy.

Both executors yield the same ``Run`` records; tests check that their counts agree. In process
mode a worker writes each finished run as one JSON line, so a crash or timeout loses only the runs
that had not finished, and those become status ``error``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Iterator

from .errors import EagerFailure, ProbeError, ScenarioError, TargetError, UsageError
from .model import Environment, Run, RunError, figureless_run, replace, run_from_dict
from .scenario import Scenario


class InlineExecutor:
    def __init__(self, scenario: Scenario, trace_dir: str | None = None) -> None:
        self.scenario, self.trace_dir = scenario, trace_dir
        self.target = None
        self.references: dict = {}

    def prepare(self) -> None:
        from . import probe
        from .targets import loader

        self.target = loader.load(self.scenario)
        probe.warm_up(self.scenario.backend, self.scenario.backend_mode,
                      dict(self.scenario.backend_options or {}) or None)
        for name, sequence in self.scenario.sequences.items():
            self.references[name] = probe.eager_reference(self.target, sequence,
                                                          self.scenario.repeats)

    def run_strategy(self, strategy: str) -> Iterator[Run]:
        from . import probe

        for name, sequence in self.scenario.sequences.items():
            yield probe.probe(self.scenario, self.target, name, sequence,
                              self.scenario.strategy(strategy), self.references[name],
                              self.trace_dir)

    def environment(self) -> Environment | None:
        return None


_FATAL = {"EagerFailure": EagerFailure, "TargetError": TargetError,
          "ScenarioError": ScenarioError, "UsageError": UsageError}


class ProcessExecutor:
    def __init__(self, scenario: Scenario, overrides: dict, timeout: float | None,
                 trace_dir: str | None = None) -> None:
        if scenario.path is None:
            raise UsageError("--isolate process needs the scenario as a file")
        self.scenario, self.overrides, self.timeout = scenario, overrides, timeout
        self.trace_dir = trace_dir
        self._environment: Environment | None = None

    def prepare(self) -> None:
        pass

    def environment(self) -> Environment | None:
        return self._environment

    def run_strategy(self, strategy: str) -> Iterator[Run]:
        with tempfile.TemporaryDirectory(prefix="recompile-probe-") as tmp:
            job, out = Path(tmp, "job.json"), Path(tmp, "runs.jsonl")
            job.write_text(json.dumps({"path": self.scenario.path, "overrides": self.overrides,
                                       "strategy": strategy, "trace_dir": self.trace_dir}))
            failure: RunError | None = None
            env = {**os.environ, "PYTHONUNBUFFERED": "1"}
            try:
                proc = subprocess.run(
                    [sys.executable, "-m", "recompile_probe.worker", str(job), str(out)],
                    stdin=subprocess.DEVNULL, capture_output=True, text=True,
                    timeout=self.timeout, env=env,
                )
                if proc.returncode != 0:
                    last = next((ln for ln in reversed(proc.stderr.splitlines()) if ln.strip()),
                                "")
                    failure = RunError("WorkerCrashed", f"worker exited with {proc.returncode}"
                                       + (f": {last.strip()}" if last else ""), None)
            except subprocess.TimeoutExpired:
                failure = RunError("Timeout", f"the strategy did not finish within "
                                   f"{self.timeout:g} s (--timeout)", None)
            done = yield from self._read(out)
        for name, sequence in self.scenario.sequences.items():
            if name not in done:
                yield _failed_run(self.scenario, strategy, name, sequence,
                                  failure or RunError("WorkerCrashed", "no result", None))

    def _read(self, out: Path) -> Iterator[Run]:
        done = set()
        if not out.exists():
            return done
        for line in out.read_text().splitlines():
            record = json.loads(line)
            if "fatal" in record:
                fatal = record["fatal"]
                raise _FATAL.get(fatal["type"], ProbeError)(fatal["message"], fatal.get("remedy"))
            if "environment" in record:
                self._environment = Environment(**record["environment"])
                continue
            run = run_from_dict(record["run"])
            done.add(run.sequence_name)
            yield replace(run, isolation="process")
        return done


def _failed_run(scenario: Scenario, strategy: str, name: str, sequence: tuple[int, ...],
                error: RunError) -> Run:
    return figureless_run(scenario.target, name, sequence, strategy, scenario.backend, "error",
                          error, description=scenario.strategy(strategy).description,
                          isolation="process")
