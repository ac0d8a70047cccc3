"""A whole scenario: every sequence under every strategy -> a ``Report``.

The top-level flow, readable in a few lines: build the report header, pick an executor (inline,
one process per strategy, or a pool of N workers), run each (strategy, sequence), hand every
finished ``Run`` to the caller as it arrives. An interrupt returns what finished, marked
incomplete.

``run_jobs`` is the same pool for any list of (scenario, strategy, sequence) jobs, for commands
that measure more than one scenario's own strategies (candidates, many scenarios).
"""

from __future__ import annotations

import contextlib
import os
import platform
import re
import sys
from importlib import metadata
from typing import TYPE_CHECKING, Callable, Iterator, Sequence

from . import __version__
from .errors import UsageError
from .model import Environment, Report, Run, ScenarioRef, Tool
from .scenario import Scenario

if TYPE_CHECKING:
    from .isolation import Job, Pool

ISOLATION_MODES = ("inline", "process")

#: The JSON fields of a run that are wall-clock measurements (or derived from one), wherever they
#: occur (run, calls[], compile_events[]): two runs of the same report differ only there. `--jobs
#: N` is tested to give `--isolate process`'s report with exactly these fields left out.
TIMING_FIELDS = frozenset({
    "latency_us",  # calls[]
    "compile_time_ms",  # run and compile_events[]
    "guard_latency_us",  # run and compile_events[] (Dynamo's own timing)
    "steady_state_us", "steady_state_min_us", "steady_state_p90_us",
    "steady_state_noisy",  # min against median of the same samples
    "eager_us", "guard_check_us",
})


#: Besides timings, two things in a report are the process's, not the run's:
#: - the object addresses Dynamo writes into ID_MATCH / TYPE_MATCH guard text, e.g.
#:   ``___check_obj_id(G['torch'], 140238952812192)``: id() in the process that compiled (two
#:   `--isolate process` runs of one scenario differ there too);
#: - the number Dynamo appends to the globals it installs in the target's module, e.g.
#:   ``G['__builtins_dict___68']``: a process-wide counter (bytecode_transformation.unique_id)
#:   that torch._dynamo.reset() does not reset, so it counts every compile the process made
#:   before (in an `--isolate process` worker, the warm-up's and the earlier sequences').
ADDRESS = re.compile(r"(___check_(?:type|obj)_id\(.+?, )\d+(?=\))")
INSTALLED_GLOBAL = re.compile(r"\b(__builtins_dict__|__resume_at_\d+|___context_manager_\d+|"
                              r"__warnings_warn_wrapper|__gen_rand_values)_\d+\b")


def without_timings(data: object) -> object:
    """A report's JSON data (``model.to_dict``) without TIMING_FIELDS, at any depth."""
    if isinstance(data, dict):
        return {k: without_timings(v) for k, v in data.items() if k not in TIMING_FIELDS}
    if isinstance(data, (list, tuple)):
        return [without_timings(v) for v in data]
    return data


def comparable(data: object) -> object:
    """``without_timings``, with ADDRESS numbers replaced by ``<id>`` and INSTALLED_GLOBAL
    counters by ``<n>``: what must be equal between two runs of one scenario in different
    processes or after different histories (``--jobs N`` against ``--isolate process``)."""
    data = without_timings(data)

    def mask(value: object) -> object:
        if isinstance(value, dict):
            return {k: mask(v) for k, v in value.items()}
        if isinstance(value, list):
            return [mask(v) for v in value]
        if not isinstance(value, str):
            return value
        return INSTALLED_GLOBAL.sub(r"\1_<n>", ADDRESS.sub(r"\1<id>", value))

    return mask(data)


def parse_jobs(value: str | int) -> int:
    """``--jobs``: a number of workers >= 1, or ``auto`` (os.cpu_count())."""
    if isinstance(value, str) and value.strip().lower() == "auto":
        return os.cpu_count() or 1
    try:
        number = int(value)
    except (TypeError, ValueError):
        number = None
    if number is None or number < 1:
        raise UsageError(f"--jobs: expected a number of worker processes (1 or more) or auto, "
                         f"got {value!r}")
    return number


def open_pool(jobs: int, *, timeout: float | None = None, debug: bool = False) -> "Pool":
    """A pool of ``jobs`` reused worker processes, to share between calls (close it after)."""
    from .isolation import Pool

    return Pool(jobs, timeout=timeout, debug=debug)


def scenario_jobs(scenario: Scenario) -> list["Job"]:
    """Every (strategy, sequence) of the scenario, in the order one process runs them."""
    from .isolation import Job

    return [Job(scenario, strategy, sequence) for strategy in scenario.strategies
            for sequence in scenario.sequences]


def run_jobs(
    jobs: Sequence["Job"],
    jobs_n: int = 1,
    *,
    pool: "Pool | None" = None,
    timeout: float | None = None,
    trace_dir: str | None = None,
    debug: bool = False,
    on_start: Callable[[str, str], None] | None = None,
    on_run: Callable[[Run], None] | None = None,
) -> Iterator[Run]:
    """Run the jobs on ``jobs_n`` worker processes (or on ``pool``); yield their runs in the
    order of ``jobs``. ``on_run`` sees each run as it finishes, ``on_start`` (strategy, sequence)
    each job as a worker takes it. ``timeout`` limits each job.

    On Ctrl-C the runs that had finished and were not yielded yet are yielded (in order, the
    unfinished ones left out), then KeyboardInterrupt is raised again. A scenario that cannot be
    prepared (its target fails eagerly, cannot be imported) raises its ProbeError.
    """
    from .isolation import Pool

    own = pool is None
    active = Pool(jobs_n, timeout=timeout, debug=debug) if pool is None else pool
    batch = active.run(list(jobs), trace_dir=trace_dir, on_start=on_start, on_run=on_run)
    try:
        try:
            yield from batch
        except KeyboardInterrupt:
            yield from batch.interrupted()
            raise
    finally:
        batch.close()
        if own:
            active.close()


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
    jobs: int = 1,
    pool: "Pool | None" = None,
) -> Report:
    """Run every (strategy, sequence) of the scenario; ``overrides`` re-create it in workers.

    Ctrl-C (KeyboardInterrupt) ends it early in every mode: the report then holds every run that
    had finished, ``complete=False``. ``debug`` keeps torch's own error logs (workers included).
    ``jobs`` > 1 (or a ``pool`` shared between scenarios) runs each (strategy, sequence) on a
    pool of reused worker processes, ``timeout`` then limiting each run; the report is the one
    ``isolate="process"`` gives, apart from timings.
    """
    if jobs > 1 or pool is not None:
        return _run_pooled(scenario, jobs, pool, timeout, trace_dir, debug, on_start, on_run)
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


def _run_pooled(scenario: Scenario, jobs: int, pool: "Pool | None", timeout: float | None,
                trace_dir: str | None, debug: bool, on_start: Callable[[str, str], None] | None,
                on_run: Callable[[Run], None] | None) -> Report:
    active = pool if pool is not None else open_pool(jobs, timeout=timeout, debug=debug)
    runs: list[Run] = []
    complete = True
    try:
        try:
            for run in run_jobs(scenario_jobs(scenario), pool=active, trace_dir=trace_dir,
                                on_start=on_start, on_run=on_run):
                runs.append(run)
        except KeyboardInterrupt:
            complete = False
    finally:
        if pool is None:
            active.close()  # no worker, nor anything it started, outlives the session
    report = header(scenario)
    return Report(report.tool, active.environment or report.environment, report.scenario,
                  _in_order(runs, scenario), complete=complete)


def _in_order(runs: list[Run], scenario: Scenario) -> tuple[Run, ...]:
    """Sequence-major order, strategies as the scenario lists them."""
    seq_rank = {name: i for i, name in enumerate(scenario.sequences)}
    strat_rank = {name: i for i, name in enumerate(scenario.strategies)}
    return tuple(sorted(runs, key=lambda r: (seq_rank.get(r.sequence_name, 0),
                                             strat_rank.get(r.strategy, 0))))
