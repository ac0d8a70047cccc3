"""A whole scenario: every sequence under every strategy -> a ``Report``.

The top-level flow, readable in a few lines: build the report header, pick an executor (inline or
one process per strategy), run each (strategy, sequence), hand every finished ``Run`` to the
caller as it arrives. An interrupt returns what finished, marked incomplete.
"""

from __future__ import annotations

import contextlib
import platform
import sys
from importlib import metadata
from typing import Callable

from . import __version__
from .model import Environment, Report, Run, ScenarioRef, Tool
from .scenario import Scenario

ISOLATION_MODES = ("inline", "process")


def environment() -> Environment:
    try:
        torch_version: str | None = metadata.version("torch")
    except metadata.PackageNotFoundError:
        torch_version = None
    if "torch" in sys.modules:  # the imported build is the truth (e.g. a source build)
        torch_version = getattr(sys.modules["torch"], "__version__", torch_version)
    return Environment(torch_version, platform.python_version(), platform.platform())


def header(scenario: Scenario) -> Report:
    return Report(Tool("recompile-probe", __version__), environment(),
                  ScenarioRef(scenario.name, scenario.path))


def run_scenario(
    scenario: Scenario,
    *,
    isolate: str = "inline",
    timeout: float | None = None,
    overrides: dict | None = None,
    trace_dir: str | None = None,
    debug: bool = False,
    on_start: Callable[[str, str], None] | None = None,
    on_run: Callable[[Run], None] | None = None,
) -> Report:
    """Run every (strategy, sequence) of the scenario; ``overrides`` re-create it in workers.

    Ctrl-C (KeyboardInterrupt) ends it early in either mode: the report then holds every run that
    had finished, ``complete=False``. ``debug`` keeps torch's own error logs (workers included).
    """
    from .isolation import InlineExecutor, ProcessExecutor

    executor = (ProcessExecutor(scenario, overrides or {}, timeout, trace_dir, debug)
                if isolate == "process" else InlineExecutor(scenario, trace_dir, debug))
    runs: list[Run] = []
    complete = True
    try:
        try:
            executor.prepare()
            for strategy in scenario.strategies:
                if on_start:
                    on_start(strategy, ", ".join(scenario.sequences))
                for run in executor.run_strategy(strategy):
                    runs.append(run)
                    if on_run:
                        on_run(run)
        except KeyboardInterrupt:
            complete = False
            # A worker's runs that finished after the last one handed over.
            for run in executor.interrupted():
                runs.append(run)
                if on_run:
                    with contextlib.suppress(KeyboardInterrupt):
                        on_run(run)
    finally:
        executor.close()  # no worker, nor anything it started, outlives the session
    report = header(scenario)
    return Report(report.tool, executor.environment() or report.environment, report.scenario,
                  _in_order(runs, scenario), complete=complete)


def _in_order(runs: list[Run], scenario: Scenario) -> tuple[Run, ...]:
    """Sequence-major order, strategies as the scenario lists them."""
    seq_rank = {name: i for i, name in enumerate(scenario.sequences)}
    strat_rank = {name: i for i, name in enumerate(scenario.strategies)}
    return tuple(sorted(runs, key=lambda r: (seq_rank.get(r.sequence_name, 0),
                                             strat_rank.get(r.strategy, 0))))
