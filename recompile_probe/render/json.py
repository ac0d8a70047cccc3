"""Every document as its versioned JSON (schema_version 1; the schemas in schema/ describe them).
The records write themselves; this module only picks the writer. No torch."""

from __future__ import annotations

import json
from collections.abc import Sequence

from ..analysis.check import Outcome
from ..analysis.explain import Explained, to_dict
from ..records.report import Report, reports_to_json
from ..records.suggestion import Suggestion
from ..records.suggestion import to_json as suggestion_json
from ..records.watch import WatchReport, watch_to_json
from .formats import Layout


def reports(value: Sequence[Report], layout: Layout) -> str:
    """One report as itself (the `run` format); several as a bundle."""
    return reports_to_json(list(value))


def check(outcome: Outcome, layout: Layout) -> str:
    return reports_to_json(list(outcome.reports))


def explain(explained: Explained, layout: Layout) -> str:
    data = to_dict(explained.report, list(explained.explanations), list(explained.notes))
    return json.dumps(data, indent=2, default=list) + "\n"


def functions(report: WatchReport, layout: Layout) -> str:
    return watch_to_json(report)


def suggest(s: Suggestion, layout: Layout) -> str:
    return suggestion_json(s)
