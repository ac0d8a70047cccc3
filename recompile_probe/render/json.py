"""The versioned JSON report (the contract other tools read)."""

from __future__ import annotations

from ..model import Report, to_json


def render(report: Report, **_: object) -> str:
    return to_json(report)
