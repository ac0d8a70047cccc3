"""GitLab's Code Quality report: a JSON array of issues its merge-request widget shows on the
diff, one per finding (description, check_name, fingerprint, severity, location.path and
location.lines.begin, as GitLab documents them). Findings on no file are left out: the format
has no place for them; the JUnit file and the step summary keep them.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

from ..analysis import findings
from ..analysis.check import Outcome
from ..records.finding import Finding
from ..records.report import Report
from ..records.watch import WatchReport
from .formats import Layout


def issue(f: Finding) -> dict[str, Any]:
    return {
        "type": "issue",
        "check_name": f"recompile-probe/{f.kind.value}",
        "description": f"{f.title.removeprefix('recompile-probe: ')}: {f.message}",
        "categories": ["Performance"],
        "severity": f.severity.codequality,
        "fingerprint": f.fingerprint,
        "location": {"path": f.file, "lines": {"begin": f.line or 1}},
    }


def document(found: Iterable[Finding]) -> str:
    return json.dumps([issue(f) for f in found if f.file], indent=2, ensure_ascii=False) + "\n"


def reports(value: Sequence[Report], layout: Layout) -> str:
    return document(findings.of_reports(value, definitions=layout.definitions))


def check(outcome: Outcome, layout: Layout) -> str:
    return document(findings.of_check(outcome))


def functions(report: WatchReport, layout: Layout) -> str:
    return document(findings.of_functions(report))
