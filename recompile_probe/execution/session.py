"""A whole scenario: every sequence under every strategy -> a ``Report``.

``run_scenario`` reads in a few lines: pick an executor (inline, one process per strategy, or a
pool of reused workers), run the scenario's jobs, keep every run as it arrives; an interrupt
returns what finished, marked incomplete. ``run_jobs`` is the same pool for any list of (scenario,
strategy, sequence) jobs, for commands that measure more than one scenario's own strategies.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import sys
from collections.abc import Callable, Iterator, Sequence

from ..analysis.ranks import compare as compare_ranks
from ..errors import UsageError
from ..records.environment import CLEAN_ENV, cleaned, compile_variables, current
from ..records.order import ordered
from ..records.ranks import RankRuns
from ..records.report import Report, ScenarioRef, Tool
from ..records.run import Run
from ..scenario.model import Scenario
from ..version import __version__
from .executor import Executor, Job, OnRun, OnStart, scenario_jobs
from .pool import Pool, PoolExecutor
from .process import ProcessExecutor

ISOLATION_MODES = ("inline", "process")

__all__ = [
    "ISOLATION_MODES",
    "Job",
    "clean_environment",
    "cleared",
    "Pool",
    "header",
    "open_pool",
    "parse_jobs",
    "rank_runs_of",
    "run_jobs",
    "run_scenario",
    "scenario_jobs",
]


def run_scenario(
    scenario: Scenario,
    *,
    isolate: str = "inline",
    jobs: int = 1,
    pool: Pool | None = None,
    timeout: float | None = None,
    trace_dir: str | None = None,
    debug: bool = False,
    on_start: OnStart | None = None,
    on_run: OnRun | None = None,
) -> Report:
    """Run every (strategy, sequence) of the scenario (see ``executor_for`` for the modes).
    Ctrl-C ends it early in every mode: the report then holds every run that had finished,
    ``complete=False``."""
    executor = executor_for(scenario, isolate, jobs, pool, timeout, trace_dir, debug)
    finished: list[Run] = []
    complete = True
    try:
        try:
            for run in executor.runs(scenario_jobs(scenario), on_start, on_run):
                finished.append(run)
        except KeyboardInterrupt:
            complete = False
            finished.extend(executor.interrupted())
    finally:
        executor.close()  # no worker, nor anything it started, outlives the session
    report = header(scenario)
    runs = ordered(finished, scenario.points, scenario.strategies)
    return Report(
        report.tool,
        executor.environment() or report.environment,
        report.scenario,
        runs,
        complete=complete,
        rank_runs=rank_runs_of(scenario, runs),
    )


def rank_runs_of(scenario: Scenario, runs: Sequence[Run]) -> RankRuns | None:
    """A distributed scenario's runs, each strategy's ranks compared; None for one process."""
    if not scenario.ranks:
        return None
    return compare_ranks(runs, scenario.ranks, scenario.distributed_backend, scenario.strategies)


def executor_for(
    scenario: Scenario,
    isolate: str,
    jobs: int,
    pool: Pool | None,
    timeout: float | None,
    trace_dir: str | None,
    debug: bool,
) -> Executor:
    """``jobs`` > 1 (or a ``pool`` shared between scenarios): each (strategy, sequence) on a pool
    of reused worker processes, ``timeout`` limiting each run, the report the one
    ``isolate="process"`` gives apart from timings; ``isolate="process"``: a fresh process per
    strategy, ``timeout`` per strategy; else inline. ``debug`` keeps torch's own error logs
    (workers included). A scenario with ``ranks:`` runs on its rank processes in every mode
    (ranks.py), ``timeout`` bounding how long they may go without finishing a run."""
    if scenario.ranks:
        from .ranks import RankExecutor

        return RankExecutor(scenario, timeout, trace_dir, debug)
    if jobs > 1 or pool is not None:
        own = pool is None
        active = pool if pool is not None else Pool(jobs, timeout=timeout, debug=debug)
        return PoolExecutor(active, own=own, trace_dir=trace_dir)
    if isolate == "process":
        return ProcessExecutor(scenario, timeout, trace_dir, debug)
    from .inline import InlineExecutor  # imports torch: kept off the torch-free command paths

    return InlineExecutor(scenario, trace_dir, debug)


def parse_jobs(value: str | int) -> int:
    """``--jobs``: a number of workers >= 1, or ``auto`` (os.cpu_count())."""
    if isinstance(value, str) and value.strip().lower() == "auto":
        return os.cpu_count() or 1
    try:
        number = int(value)
    except (TypeError, ValueError):
        number = None
    if number is None or number < 1:
        raise UsageError(
            f"--jobs: expected a number of worker processes (1 or more) or auto, got {value!r}"
        )
    return number


def open_pool(jobs: int, *, timeout: float | None = None, debug: bool = False) -> Pool:
    """A pool of ``jobs`` reused worker processes, to share between calls (close it after)."""
    return Pool(jobs, timeout=timeout, debug=debug)


def run_jobs(
    jobs: Sequence[Job],
    jobs_n: int = 1,
    *,
    pool: Pool | None = None,
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


def header(scenario: Scenario) -> Report:
    return Report(
        Tool("recompile-probe", __version__),
        current(),
        ScenarioRef(scenario.name, scenario.path, scenario.sha256),
    )


@contextlib.contextmanager
def clean_environment(clean: bool = True) -> Iterator[dict[str, str]]:
    """`--clean-env`: for the block, the compile-relevant environment variables are unset (the
    workers started inside inherit none, a torch imported inside reads none) and every run
    puts the torch configs they or anything else changed back at their defaults. Yields what
    was inherited ({} when ``clean`` is False); everything is restored on exit."""
    if not clean:
        yield {}
        return
    removed = compile_variables()
    inherited = dict(removed)
    if "torch" in sys.modules:  # already imported: its configs read the variables already
        from ..torch_compat.settings import changed_config

        inherited.update(changed_config())
    had = os.environ.get(CLEAN_ENV)
    for name in removed:
        del os.environ[name]
    os.environ[CLEAN_ENV] = "1"
    try:
        yield inherited
    finally:
        os.environ.update(removed)
        if had is None:
            os.environ.pop(CLEAN_ENV, None)
        else:
            os.environ[CLEAN_ENV] = had


def cleared(report: Report, inherited: dict[str, str]) -> Report:
    """A report of a `--clean-env` session: no inherited setting in force, those kept out
    listed in ``environment.cleared_settings``."""
    return dataclasses.replace(report, environment=cleaned(report.environment, inherited))
