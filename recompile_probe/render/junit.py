"""JUnit XML as GitHub, GitLab and Jenkins read it: one testcase per scenario x sequence x strategy.

A broken budget is a <failure> (message: the budget; text: the recompile reasons), an unsupported
strategy is <skipped>, a scenario that could not run at all is one <error> testcase.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Iterable, Sequence

from ..analysis.budgets import describe
from ..analysis.check import Outcome
from ..analysis.sequence import batch_only, run_points, sequence_label
from ..records.report import Report
from ..records.run import Run
from . import cells
from .formats import Layout
from .lines import coverage


def _testcase(suite: ET.Element, report: Report, run: Run) -> tuple[int, int]:
    seconds = sum(c.latency_us or 0.0 for c in run.calls) / 1e6
    case = ET.SubElement(
        suite,
        "testcase",
        {
            "classname": f"recompile_probe.{report.scenario.name}.{run.sequence_name}",
            "name": run.strategy,
            "time": f"{seconds:.6f}",
        },
    )
    points = run_points(run)
    sequence = str(list(run.sequence)) if batch_only(points) else sequence_label(points, 100)
    summary = (
        f"sequence {sequence}: compiles={cells.num(run.compiles)} "
        f"recompiles={cells.num(run.recompiles)} graphs={cells.num(run.graphs)} "
        f"failed_compiles={cells.num(run.failed_compiles)} "
        f"guards={cells.num(run.guard_count)} "
        f"shape_env_guards={cells.num(run.shape_env_guard_count)} status={run.status}"
    )
    if run.coverage is not None:
        summary += "\n" + "\n".join(coverage.section([run], shown=None))
    for violation in run.violations:
        failure = ET.SubElement(
            case, "failure", {"message": describe(violation), "type": violation.budget}
        )
        lines = (
            [summary]
            + ([f"budget set at {violation.source}"] if violation.source else [])
            + [f"- {r}" for r in violation.reasons]
        )
        failure.text = "\n".join(lines)
    skipped = 0
    if run.status == "unsupported" and not run.violations:
        ET.SubElement(case, "skipped", {"message": run.error.message if run.error else ""})
        skipped = 1
    ET.SubElement(case, "system-out").text = summary
    return (1 if run.violations else 0), skipped


def reports(value: Sequence[Report], layout: Layout) -> str:
    return _suites(value, ())


def check(outcome: Outcome, layout: Layout) -> str:
    """A scenario that could not run is a suite of one testcase in error."""
    errors = [(s.name, s.path or "", e.message) for s, e in outcome.failures]
    return _suites(outcome.reports, errors)


def _suites(reports: Iterable[Report], errors: Iterable[tuple[str, str, str]]) -> str:
    """``errors``: (suite name, file, message) for scenarios that could not run."""
    root = ET.Element("testsuites", {"name": "recompile-probe"})
    totals = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    for report in reports:
        suite = ET.SubElement(root, "testsuite", {"name": report.scenario.name})
        properties = ET.SubElement(suite, "properties")
        for name, value in (
            ("scenario", report.scenario.path or ""),
            ("torch", report.environment.torch or ""),
            ("recompile-probe", report.tool.version),
        ):
            ET.SubElement(properties, "property", {"name": name, "value": value})
        counts = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
        for run in report.runs:
            failed, skipped = _testcase(suite, report, run)
            counts["tests"] += 1
            counts["failures"] += failed
            counts["skipped"] += skipped
        for k, v in counts.items():
            suite.set(k, str(v))
            totals[k] += v
    for name, file, message in errors:
        suite = ET.SubElement(
            root,
            "testsuite",
            {"name": name, "tests": "1", "failures": "0", "errors": "1", "skipped": "0"},
        )
        properties = ET.SubElement(suite, "properties")
        ET.SubElement(properties, "property", {"name": "scenario", "value": file})
        case = ET.SubElement(
            suite, "testcase", {"classname": f"recompile_probe.{name}", "name": "scenario"}
        )
        ET.SubElement(
            case,
            "error",
            {"message": message.splitlines()[0] if message else "", "type": "ScenarioFailed"},
        ).text = message
        totals["tests"] += 1
        totals["errors"] += 1
    for k, v in totals.items():
        root.set(k, str(v))
    ET.indent(root)
    return '<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"
