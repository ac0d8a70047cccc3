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
``budget`` caps the candidates measured, ``time_limit`` the seconds (bench.py); the result says
whether the optimum is proven (exhaustive and complete) and, when a limit stopped it, what was
not measured (stop.py).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from ...errors import UsageError, did_you_mean
from ...records.environment import current
from ...records.report import Report, ScenarioRef, Tool
from ...records.suggestion import Change, Evaluation, Necessity, Suggestion
from ...scenario.model import Scenario
from ...strategies.model import symbol_ranges
from ...version import __version__
from . import stop
from .bench import Bench, Stopped
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
    necessity_variants,
    settle,
    target_name,
    unfixable,
    yaml_for,
)
from .objective import ranked
from .reuse import saved_candidates
from .search import EXHAUSTIVE_MAX, WHOLE_FUNCTION, Search


def suggest(
    scenario: Scenario,
    *,
    sequence: str | None = None,
    budget: int | None = None,
    time_limit: float | None = None,
    strategy_name: str = "suggested",
    pool: Any = None,
    on_measured: Callable[[Evaluation, int], None] | None = None,
    on_plan: Callable[[str, int | None], None] | None = None,
    on_phase: Callable[[str, int], None] | None = None,
    saved: Report | None = None,
    saved_source: str | None = None,
) -> Suggestion:
    """``time_limit``: seconds of wall clock, checked between candidates; None or 0: no limit.
    ``saved``: a `run` report of this scenario (read from ``saved_source``) whose unmarked and
    whole-function runs are reused instead of measured again (reuse.py says when they count).
    ``on_plan`` (search, planned) once, before the search (planned None: greedy, not known);
    ``on_measured`` (evaluation, measured so far) per candidate; ``on_phase`` (phase, at most
    how many more candidates it measures) as each phase after the search begins."""
    started = time.monotonic()
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
    if time_limit is not None and time_limit < 0:
        raise UsageError("--time-limit: seconds, 0 for no limit")
    limit = time_limit or None
    bench = Bench(scenario, sequences, budget, on_measured, pool, limit, started)
    not_reused: list[str] = []
    if saved is not None:
        source = saved_source or "the report"
        found, not_reused = saved_candidates(saved, source, scenario, sequences)
        bench.reuse(found)
    locations, notes = discover(scenario, bench.target, sequences)
    search = Search(bench, locations)
    exhaustive = len(locations) <= EXHAUSTIVE_MAX
    planned = 3 ** len(locations) + len(WHOLE_FUNCTION) if exhaustive else None
    if on_plan is not None:
        on_plan("exhaustive" if exhaustive else "greedy", planned)

    def phase(name: str, more: int) -> None:
        if on_phase is not None and bench.stopped_by is None:  # stopped: nothing more to come
            on_phase(name, more)

    skips = stop.Skips()
    try:
        search.exhaustive() if exhaustive else search.greedy()
    except Stopped:
        skips.add("search", stop.search_sentence(exhaustive, planned, len(bench.candidates())))
    phase("timing the finalists", 3)
    try:
        bench.time_finalists()
    except Stopped:
        skips.add("timing", stop.TIMING)
    env_first = None
    phase("environment form", 1)
    try:
        env_first = fastest_form(bench, locations)
    except Stopped:
        # the leader was ranked at its marks' µs/call, maybe slower than the marking can be
        skips.add("environment", stop.ENVIRONMENT)
    best = settle(bench)
    if bench.unconfirmed:
        skips.add("confirmation", stop.CONFIRMATION)
    needed: list[Necessity] = []
    checks_with = checks_without = None
    verdict = None
    change = None
    if best is not None and best.status == "ok":
        variants = necessity_variants(search, best)
        phase("necessity of each mark", sum(not search.is_measured(v[2]) for v in variants))
        try:
            necessity(search, best, needed)
        except Stopped:
            skips.add("necessity", stop.necessity_sentence(len(needed), len(variants)))
        lines = (
            check_lines(best.marks, locations, bench.target.param_names)
            if not best.whole_function
            else ()
        )
        checks_used: tuple[str, ...] = ()
        if lines:
            phase("torch._check lines", 2)
            unconfirmed = bench.unconfirmed
            try:
                checks_with, checks_without, verdict, helped = measure_checks(bench, best, lines)
                if helped:
                    checks_used = lines
                if bench.unconfirmed > unconfirmed:
                    skips.add("confirmation", stop.CHECKS_UNCONFIRMED)
            except Stopped:
                skips.add("checks", stop.CHECKS)
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
            except Stopped:
                how = stop.limit_text(bench.stopped_by or "", budget, limit)
                env_note = f"not measured: {how} stopped the search first"
                skips.add("environment", stop.ENVIRONMENT)
        change = Change(
            code_for(
                best,
                target_name(scenario),
                checks_used,
                bench.target.param_names,
                locations,
                symbol_ranges(scenario.points),
                scenario.driver,
            ),
            env,
            env_measured,
            env_note,
            yaml_for(best, free_name(scenario, strategy_name), bench.runs.get(best.name, [])),
        )
    cut = sum(e.status == "cut" for e in bench.candidates())
    if cut:
        notes += (
            f"{cut} candidates cut: each was stopped at the call where its compiles passed "
            "those of the leader of the moment, so its compiles are a lower bound (≥) and it "
            "could not rank first; the others were measured in full",
        )
    if bench.finalists or bench.untimed_count():
        why = (
            "stopped" if "timing" in skips.phases else "untimed" if scenario.repeats == 0 else None
        )
        notes += (timing_note(bench.finalists, bench.untimed_count(), why),)
    if saved is not None:
        notes += (reuse_note(bench.reused, saved_source or "the report", not_reused),)
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
    elapsed = bench.elapsed()
    if bench.stopped_by is not None:
        notes = (
            *stop.notes(
                stopped_by=bench.stopped_by,
                budget=budget,
                time_limit=limit,
                elapsed=elapsed,
                exhaustive=exhaustive,
                planned=planned,
                measured=len(candidates),
                per=bench.per_candidate(),
                sequences=len(sequences),
                skips=skips,
            ),
            *notes,
        )
    complete = bench.stopped_by is None
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
        time_limit=limit,
        stopped_by=bench.stopped_by,
        planned=planned,
        skipped=tuple(skips.phases),
        elapsed_s=round(elapsed, 1),
        from_report=saved_source if saved is not None else None,
        reused=tuple(bench.reused),
        timed=tuple(bench.finalists),
    )


def timing_note(finalists: list[str], untimed: int, why: str | None = None) -> str:
    """Which candidates have a µs/call, and why the others have none: the search stopped
    before timing them, the scenario is untimed (``repeats: 0``), or no figure could change
    their rank."""
    if why == "untimed":
        return "µs/call not measured: the scenario has repeats: 0 (n/a for every candidate)"
    if why == "stopped":
        timed = f" ({', '.join(finalists)})" if finalists else ""
        return (
            f"µs/call measured for {len(finalists)} of the candidates tied for first{timed}: "
            f"the search stopped before the rest; n/a for the other {untimed}"
        )
    return (
        f"µs/call measured for the {len(finalists)} tied for first on status, outputs, compiles "
        f"and guards ({', '.join(finalists) or 'none'}); n/a for the other {untimed}: no "
        "µs/call could change their rank"
    )


def reuse_note(reused: list[str], source: str, not_reused: list[str]) -> str:
    said = (
        f"{len(reused)} candidates read from {source}, not measured again: {', '.join(reused)}"
        if reused
        else f"nothing read from {source}: it holds none of the candidates' runs"
    )
    return said + "".join(f"; not reused: {why}" for why in not_reused)
