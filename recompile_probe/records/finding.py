"""A finding: one thing a CI system shows on a line of the pull request's diff. No torch.

Findings are what the `github` annotations and the GitLab Code Quality report print: a line that
made Dynamo recompile, a broken budget, a size a declared range does not serve, ranks that
compiled differently, a baseline regression, a scenario that could not run. Built once, from the
records, by ``analysis/findings.py``; each format only writes them out.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum


class Kind(Enum):
    RECOMPILE = "recompile"
    BUDGET = "budget"
    #: a size of a declared coverage range that no cache entry serves
    UNSERVED = "unserved"
    RANK_DIVERGENCE = "rank_divergence"
    REGRESSION = "regression"
    #: a scenario that could not run at all
    SCENARIO = "scenario"


class Severity(Enum):
    """GitHub's three annotation levels; Code Quality's words for them in ``codequality``."""

    NOTICE = "notice"
    WARNING = "warning"
    ERROR = "error"

    @property
    def codequality(self) -> str:
        return {"notice": "info", "warning": "minor", "error": "major"}[self.value]


@dataclass(frozen=True)
class Finding:
    kind: Kind
    severity: Severity
    #: relative to the repository root (GITHUB_WORKSPACE, CI_PROJECT_DIR, else the working
    #: directory) so that the CI system finds it in the diff; None: no file to point at
    file: str | None
    line: int | None
    title: str
    message: str
    #: stable across runs of the same code: no timings, ids or object addresses go into it
    fingerprint: str
    #: where it was seen: "scenario / sequence / strategy" for each run, the function for watch
    seen_in: tuple[str, ...] = ()
