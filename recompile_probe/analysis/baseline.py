"""Comparing two sets of reports (a baseline and a fresh run, or two torch versions). No torch.

Runs are matched by (scenario name, sequence name, strategy). A regression is more compiles,
recompiles, graphs or guards than before (beyond a tolerance), a run that stopped being ok, or
outputs that stopped matching eager; an improvement is the opposite.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from ..records.report import Report
from ..records.run import Run

#: (Run field, label) of the compared counts, in table order
METRICS = (
    ("compiles", "compiles"),
    ("recompiles", "recompiles"),
    ("graphs", "graphs"),
    ("guard_count", "guards"),
    ("shape_env_guard_count", "shape guards"),
)

Key = tuple[str, str, str]


@dataclass(frozen=True)
class Change:
    scenario: str
    sequence: str
    strategy: str
    metric: str  #: a METRICS label, "status" or "outputs_match"
    old: Any
    new: Any
    kind: str  #: regression | improvement


@dataclass(frozen=True)
class Pair:
    key: Key
    old: Run | None
    new: Run | None


def _index(reports: Iterable[Report]) -> dict[Key, Run]:
    return {
        (rep.scenario.name, run.sequence_name, run.strategy): run
        for rep in reports
        for run in rep.runs
    }


def pair(old: Iterable[Report], new: Iterable[Report]) -> list[Pair]:
    """Every run of either side, matched; new order first, then runs only the old side has."""
    before, after = _index(old), _index(new)
    keys = list(after) + [k for k in before if k not in after]
    return [Pair(k, before.get(k), after.get(k)) for k in keys]


@dataclass(frozen=True)
class Comparison:
    """`diff`'s document: two sides' runs matched, and the increase allowed per count."""

    pairs: tuple[Pair, ...]
    tolerance: int = 0

    @property
    def regressed(self) -> bool:
        return any(c.kind == "regression" for p in self.pairs for c in changes(p, self.tolerance))


def changes(p: Pair, tolerance: int = 0) -> list[Change]:
    if p.old is None or p.new is None:
        return []
    out = []
    for field, label in METRICS:
        a, b = getattr(p.old, field), getattr(p.new, field)
        if a is None or b is None or a == b:
            continue
        if b > a + tolerance:
            out.append(Change(*p.key, label, a, b, "regression"))
        elif b < a:
            out.append(Change(*p.key, label, a, b, "improvement"))
    if p.old.status != p.new.status:
        kind = (
            "regression"
            if p.old.status == "ok"
            else "improvement"
            if p.new.status == "ok"
            else "regression"
        )
        out.append(Change(*p.key, "status", p.old.status, p.new.status, kind))
    if p.old.outputs_match is True and p.new.outputs_match is False:
        out.append(Change(*p.key, "outputs_match", True, False, "regression"))
    elif p.old.outputs_match is False and p.new.outputs_match is True:
        out.append(Change(*p.key, "outputs_match", False, True, "improvement"))
    return out
