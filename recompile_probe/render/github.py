"""GitHub Actions workflow commands: one ``::error``/``::warning``/``::notice`` line per finding,
on the file and line the finding names, which GitHub shows on the pull request's diff.

Escaping follows GitHub's runner: in the message ``%``, ``\\r`` and ``\\n``; in a property (file,
title) also ``:`` and ``,``. Findings come from analysis/findings.py; this only writes them.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from ..analysis import findings
from ..analysis.check import Outcome
from ..records.finding import Finding
from ..records.report import Report
from ..records.watch import WatchReport
from .formats import Layout


def escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def command(f: Finding) -> str:
    props = []
    if f.file:
        props.append(f"file={escape_property(f.file)}")
        if f.line:
            props.append(f"line={f.line}")
    props.append(f"title={escape_property(f.title)}")
    return f"::{f.severity.value} {','.join(props)}::{escape_data(f.message)}"


def lines(found: Iterable[Finding]) -> str:
    text = "\n".join(command(f) for f in found)
    return text + "\n" if text else ""


def reports(value: Sequence[Report], layout: Layout) -> str:
    return lines(findings.of_reports(value, definitions=layout.definitions))


def check(outcome: Outcome, layout: Layout) -> str:
    return lines(findings.of_check(outcome))


def functions(report: WatchReport, layout: Layout) -> str:
    return lines(findings.of_functions(report))
