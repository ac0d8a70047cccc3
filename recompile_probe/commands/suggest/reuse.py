"""What a saved `run` report already measured of suggest's candidates: the unmarked candidate is
the report's `default` runs, a whole-function candidate its runs of that strategy. A run is
reused only where it is the same measurement suggest would make: the strategy as the scenario
defines it now is the built-in, and the report ran it over every sequence of the search at the
same sizes and on the same backend. Torch-free."""

from __future__ import annotations

from typing import Any

from ...errors import ReportError
from ...records.report import Report
from ...records.run import Run
from ...scenario.model import Scenario
from ...sizes.points import Point
from ...strategies.builtins import BUILTINS
from ..saved import run_points
from .search import WHOLE_FUNCTION, unmarked_key, whole_key


def saved_candidates(
    report: Report, source: str, scenario: Scenario, sequences: dict[str, tuple[Point, ...]]
) -> tuple[dict[Any, list[Run]], list[str]]:
    """Candidate key -> the report's runs of it (one per sequence, in the search's order), and
    why each strategy the report holds was not reused, where it could have been."""
    if report.scenario.sha256 is not None and report.scenario.sha256 != scenario.sha256:
        raise ReportError(
            f"{source}: the report was written from another version of the scenario file "
            f"(its sha256 differs): its runs may not be of the sizes or target suggest measures",
            f"Write the report again (recompile-probe run {scenario.path or 'SCENARIO'} -f json "
            "-o REPORT), or suggest without --from-report.",
        )
    keys = {"default": unmarked_key(), **{name: whole_key(name) for name in WHOLE_FUNCTION}}
    found: dict[Any, list[Run]] = {}
    why: list[str] = []
    held = dict.fromkeys(r.strategy for r in report.runs)
    for name in held:
        if name not in keys:
            continue  # not one of suggest's candidates (mark_dynamic marks the batch symbols)
        if scenario.strategy(name) != BUILTINS[name]:
            why.append(f"{name}: the scenario defines its own strategy of that name")
            continue
        runs, lacking = [], []
        for sequence, points in sequences.items():
            run = next(
                (r for r in report.runs if r.strategy == name and r.sequence_name == sequence),
                None,
            )
            if run is None or run_points(run) != points or run.backend != scenario.backend:
                lacking.append(sequence)
            else:
                runs.append(run)
        if lacking:
            why.append(
                f"{name}: the report has no run of it over {', '.join(lacking)} at these sizes "
                f"on backend {scenario.backend}"
            )
            continue
        found[keys[name]] = runs
    return found, why
