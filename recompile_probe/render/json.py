"""Every document as its versioned JSON (schema_version 1; the schemas in schema/ describe them).
The records write themselves; this is the one place the formats are picked. No torch."""

from __future__ import annotations

import json

from ..analysis.explain import Explanation, to_dict
from ..records.report import Report, to_json
from ..records.suggestion import Suggestion
from ..records.suggestion import to_json as suggestion_json
from ..records.watch import WatchReport, watch_to_json


def render(report: Report, **_: object) -> str:
    return to_json(report)


def explain(report: Report, explanations: list[Explanation], notes: list[str]) -> str:
    return json.dumps(to_dict(report, explanations, notes), indent=2, default=list) + "\n"


def functions(report: WatchReport) -> str:
    return watch_to_json(report)


def suggestion(s: Suggestion) -> str:
    return suggestion_json(s)
