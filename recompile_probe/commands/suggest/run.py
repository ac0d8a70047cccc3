"""`suggest`: the smallest marking that removes every avoidable recompile, found by measurement.

The flow: find the (argument, dim) pairs whose size varies over the scenario's points (from the
inputs the scenario really makes, a driver's calls included, not only from `dims:`); measure
candidate markings, each a probe run of every sequence like any `run` strategy (fresh Dynamo
state each time); rank them on the objective; prove the winner minimal with the measured runs
of its one-mark-less and unbacked-to-dynamic variants; then measure what the advice adds
(torch._check lines, the environment form) before printing any of it.

The objective, in order: status ok with outputs equal to eager; fewest compiles over every
sequence; fewest guards of the newest entry (guard_count, then shape_env_guard_count); lowest
steady-state µs/call, where two candidates whose [fastest, p90] sample ranges overlap count as
equally fast (a marking counts at its faster form: the marks, or the same dims named in
TORCH_COMPILE_*_SOURCES, which saves the per-call mark calls); fewest changed dims (a
whole-function strategy counts as every varying dim plus one); fewest unbacked marks.

The search (search.py): every marking (static / dynamic / unbacked per varying dim, 3^n) plus
the whole-function strategies this torch supports up to EXHAUSTIVE_MAX dims, greedy beyond.
``budget`` caps the candidates measured; the result says whether the optimum is proven
(exhaustive and complete).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ...errors import UsageError, did_you_mean
from ...records.environment import current
from ...records.report import ScenarioRef, Tool
from ...records.suggestion import Change, Evaluation, Necessity, Suggestion
from ...scenario.model import Scenario
from ...version import __version__
from .bench import Bench, BudgetSpent
from .discover import discover
from .forms import (
    check_lines,
    code_for,
    environment_form,
    fastest_form,
    free_name,
    measure_checks,
    measure_environment,
    necessity,
    settle,
    target_name,
    unfixable,
    yaml_for,
)
from .objective import ranked, worse
from .search import EXHAUSTIVE_MAX, WHOLE_FUNCTION, Search


def suggest(
    scenario: Scenario,
    *,
    sequence: str | None = None,
    budget: int | None = None,
    strategy_name: str = "suggested",
    pool: Any = None,
    on_measured: Callable[[Evaluation, int], None] | None = None,
    on_plan: Callable[[str, int | None], None] | None = None,
) -> Suggestion:
    sequences = dict(scenario.points)
    if sequence is not None:
        if sequence not in sequences:
            raise UsageError(
                f"--sequence: no sequence named {sequence!r} in the scenario",
                did_you_mean(sequence, list(sequences)) or f"Sequences: {', '.join(sequences)}.",
            )
        sequences = {sequence: sequences[sequence]}
    if budget is not None and budget < 1:
        raise UsageError("--budget: at least 1 candidate")
    bench = Bench(scenario, sequences, budget, on_measured, pool)
    locations, notes = discover(scenario, bench.target, sequences)
    search = Search(bench, locations)
    exhaustive = len(locations) <= EXHAUSTIVE_MAX
    planned = 3 ** len(locations) + len(WHOLE_FUNCTION) if exhaustive else None
    if on_plan is not None:
        on_plan("exhaustive" if exhaustive else "greedy", planned)
    complete = True
    try:
        search.exhaustive() if exhaustive else search.greedy()
    except BudgetSpent:
        complete = False
    env_first = None
    try:
        env_first = fastest_form(bench, locations)
    except BudgetSpent:
        complete = False
    best = settle(bench)
    needed: list[Necessity] = []
    checks_with = checks_without = None
    verdict = None
    change = None
    if best is not None and best.status == "ok":
        try:
            needed = necessity(search, best)
        except BudgetSpent:
            complete = False
            notes += ("the budget ran out before every mark's necessity was measured",)
        lines = (
            check_lines(best.marks, locations, bench.target.param_names)
            if not best.whole_function
            else ()
        )
        checks_used: tuple[str, ...] = ()
        if lines:
            try:
                checks_with, checks_without, verdict = measure_checks(bench, best, lines)
                if worse(checks_without, checks_with) is not None:
                    checks_used = lines
            except BudgetSpent:
                complete = False
                notes += ("the budget ran out before the torch._check lines were measured",)
        env, env_note = (
            environment_form(best.marks, locations) if not best.whole_function else ({}, None)
        )
        env_measured = None
        if env:
            try:
                env_measured, env_note = (
                    env_first
                    if env_first and env_first[0].name == best.name + " (environment)"
                    else measure_environment(bench, best, env)
                )
            except BudgetSpent:
                env_note = "not measured: the budget ran out"
        change = Change(
            code_for(best, target_name(scenario), checks_used, bench.target.param_names),
            env,
            env_measured,
            env_note,
            yaml_for(best, free_name(scenario, strategy_name), bench.runs.get(best.name, [])),
        )
    if bench.confirmations:
        notes += (
            f"{bench.confirmations} confirmation runs: a win on µs/call alone over a "
            "cheaper candidate was measured again before it counted",
        )
    # Only what competes (Bench.candidates): the forms measured for the recommendation are shown
    # with it, not ranked against it.
    candidates = tuple(ranked(bench.candidates()))
    if best is not None:  # later re-measurements (necessity) must not reorder the table under it
        best = next((c for c in candidates if c.name == best.name), best)
        candidates = (
            *(c for c in candidates if c.name == best.name),
            *(c for c in candidates if c.name != best.name),
        )
    return Suggestion(
        Tool("recompile-probe", __version__),
        current(),
        ScenarioRef(scenario.name, scenario.path, scenario.sha256),
        tuple(sequences),
        scenario.backend,
        locations,
        "exhaustive" if exhaustive else "greedy",
        exhaustive and complete,
        budget,
        best,
        candidates,
        tuple(needed),
        checks_with,
        checks_without,
        verdict,
        unfixable(bench.runs, best.name) if best is not None else (),
        change,
        tuple(notes),
        complete,
    )
