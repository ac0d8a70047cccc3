"""A saved `run` report read back by a command that reuses its runs (explain, suggest): the
scenario file it was written from, found and checked unchanged. Torch-free."""

from __future__ import annotations

from pathlib import Path

from ..errors import ReportError
from ..records.report import Report
from ..records.run import Run
from ..scenario.model import Scenario
from ..sizes.points import Point


def scenario_of(
    report: Report, source: str, given: Path | None, warnings: list[str], command: str
) -> Scenario:
    """The scenario ``report`` was written from: ``given`` (moved) or the path it names, refused
    when it is gone, another scenario, or changed since (its sha256). ``command``: who reuses
    the runs, for the messages ("explain", "suggest")."""
    from ..scenario.load import load

    ref = report.scenario
    path = str(given) if given is not None else ref.path
    if path is None:
        raise ReportError(
            f"{source}: the report names no scenario file (scenario {ref.name!r} was built in "
            f"code), and {command} needs its strategies",
            f"Pass the scenario file: {command} SCENARIO --from-report REPORT.",
        )
    if not Path(path).is_file():
        raise ReportError(
            f"{source}: the scenario file the report was written from is gone: {path}",
            f"If it moved, pass it: {command} SCENARIO --from-report REPORT; otherwise "
            f"{command} (or run) the scenario again.",
        )
    scenario = load(path)
    if scenario.name != ref.name:
        raise ReportError(
            f"{source}: the report is of scenario {ref.name!r}, but {path} is scenario "
            f"{scenario.name!r}",
            "Pass the scenario the report was written from.",
        )
    if ref.sha256 is None:
        warnings.append(
            f"{source} does not record the scenario file's sha256 (written by an older "
            f"recompile-probe): cannot tell whether {path} changed since; its runs are "
            f"reused as the file reads now."
        )
    elif scenario.sha256 != ref.sha256:
        raise ReportError(
            f"{source}: the scenario file {path} changed since the report was written (its "
            f"sha256 differs): the report's runs may not be of the strategies, sizes or target "
            f"the file now names",
            f"Write the report again (recompile-probe run {path} -f json -o REPORT), or "
            f"{command} without --from-report.",
        )
    return scenario


def run_points(run: Run) -> tuple[Point, ...]:
    """The points a saved run was measured at (a report from before points were kept: its
    batch sizes)."""
    if run.points:
        return tuple(Point.of(p) for p in run.points)
    return tuple(Point.batch(b) for b in run.sequence)
