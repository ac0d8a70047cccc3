"""What `suggest` found, as frozen records, and their JSON (``schema_version`` 1). No torch.

One record per measured candidate (``Evaluation``), the ranking that picked the recommendation,
the measured runs that prove each of its marks is needed (``Necessity``), the recompiles no
marking removed (``Unfixable``) and the change in three forms. Renderers read only these.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from .report import SCHEMA_VERSION, Environment, ScenarioRef, Tool

#: What a candidate's ``status`` can be: ``mismatch`` = it ran but an output differed from eager;
#: ``cut`` = stopped once its compiles passed the leader's (its compiles are a lower bound).
STATUSES = ("ok", "mismatch", "error", "unsupported", "cut")
#: What can stop the measuring: --budget or --time-limit.
STOPPED_BY = ("budget", "time_limit")
#: The phases a limit can cut short (``Suggestion.skipped``).
PHASES = ("search", "timing", "confirmation", "necessity", "checks", "environment")


@dataclass(frozen=True)
class Location:
    """An (argument, dim) whose size varies over the scenario's points."""

    argument: int | str  #: positional index, keyword, or a path as `dims:` writes it
    dim: int
    #: the size symbol it follows (its size is a function of that symbol's value), or None
    symbol: str | None
    #: how the user's code names the tensor, e.g. "x", "kwargs['input_ids']", "cache.keys[0]"
    name: str
    #: Dynamo's source for it, e.g. "L['x']"; None where Dynamo has no plain source
    source: str | None
    sizes: tuple[int, ...] = ()  #: the distinct sizes seen, in order of appearance


@dataclass(frozen=True)
class MarkChoice:
    """One mark of a candidate: ``kind`` is dynamic (mark_dynamic) or unbacked (mark_unbacked)."""

    argument: int | str
    dim: int
    symbol: str | None
    kind: str
    name: str = ""  #: Location.name, for code and tables

    def to_dict(self) -> dict[str, Any]:
        return {
            "argument": self.argument,
            "dim": self.dim,
            "symbol": self.symbol,
            "kind": self.kind,
        }


@dataclass(frozen=True)
class Evaluation:
    """One candidate measured over every sequence of the scenario (a probe run per sequence)."""

    name: str  #: the candidate's label (its strategy name in the runs)
    marks: tuple[MarkChoice, ...]
    #: a whole-function strategy (dynamic_true, unbacked_sources, ...) instead of marks
    whole_function: str | None
    status: str  #: STATUSES; the worst over the sequences
    compiles: int | None  #: summed over the sequences; with status cut, those up to the cut
    recompiles: int | None
    graphs: int | None
    guard_count: int | None  #: the largest over the sequences (guards of each run's newest entry)
    shape_env_guard_count: int | None
    #: steady-state µs/call summed over the sequences (median, fastest and p90 samples)
    steady_state_us: float | None
    steady_state_min_us: float | None
    steady_state_p90_us: float | None
    outputs_match: bool | None
    #: the distinct first failing guards of its recompiles, as Dynamo wrote them
    reasons: tuple[str, ...] = ()
    #: torch._check lines traced before the call (see suggest.checked_target); empty: none
    checks: tuple[str, ...] = ()
    error: str | None = None
    #: how many (argument, dim) pairs it changes: its marks, or every varying dim for a
    #: whole-function strategy (the last key of the objective)
    cost: int = 0
    #: whose timing the µs/call figures are: "marks" (the mark calls before each call included)
    #: or "environment" (the same marking as TORCH_COMPILE_*_SOURCES, measured faster)
    form: str = "marks"
    #: with form "environment": the marks' own median µs/call (mark calls included)
    marks_steady_state_us: float | None = None
    #: with a declared coverage range: every size proved served in every sequence's run (it
    #: ranks before the compile count); None: no range was asked
    covered: bool | None = None
    #: what coverage found, e.g. "proved over B ∈ [1, 4096]" or "B = 1 not served (recompile)"
    coverage_note: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "marks": [m.to_dict() for m in self.marks],
            "whole_function": self.whole_function,
            "status": self.status,
            "compiles": self.compiles,
            "recompiles": self.recompiles,
            "graphs": self.graphs,
            "guard_count": self.guard_count,
            "shape_env_guard_count": self.shape_env_guard_count,
            "steady_state_us": self.steady_state_us,
            "steady_state_min_us": self.steady_state_min_us,
            "steady_state_p90_us": self.steady_state_p90_us,
            "outputs_match": self.outputs_match,
            "reasons": list(self.reasons),
            "checks": list(self.checks),
            "error": self.error,
            "form": self.form,
            "marks_steady_state_us": self.marks_steady_state_us,
        }


@dataclass(frozen=True)
class Necessity:
    """The measured run that shows one mark of the recommendation is needed."""

    mark: MarkChoice
    change: str  #: "dropped" (unmarked) or "dynamic" (unbacked turned into dynamic)
    variant: str  #: the Evaluation.name measured with that change
    why: str  #: how the variant is worse, e.g. "3 compiles instead of 1"
    reason: str | None  #: the variant's first recompile reason, where it has one

    def to_dict(self) -> dict[str, Any]:
        return {
            "mark": self.mark.to_dict(),
            "change": self.change,
            "variant": self.variant,
            "why": self.why,
            "reason": self.reason,
        }


@dataclass(frozen=True)
class Unfixable:
    """A recompile the recommendation still has: no measured marking removed it."""

    sequence: str
    call_index: int | None
    reason: str
    reason_kind: str | None
    remedy: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "sequence": self.sequence,
            "call_index": self.call_index,
            "reason": self.reason,
            "reason_kind": self.reason_kind,
            "remedy": self.remedy,
        }


@dataclass(frozen=True)
class Change:
    """The recommendation written out: code before the call, environment, scenario YAML."""

    code: tuple[str, ...]
    #: env var -> value (TORCH_COMPILE_DYNAMIC_SOURCES / _UNBACKED_SOURCES); empty where this torch
    #: has no such knob or a mark has no Dynamo source
    environment: dict[str, str] = field(default_factory=dict)
    #: the environment form measured like any candidate: same figures as the marks, or not
    environment_measured: Evaluation | None = None
    environment_note: str | None = None
    yaml: str = ""  #: a custom_strategies entry and an expect budget, ready to paste


@dataclass(frozen=True)
class Suggestion:
    tool: Tool
    environment: Environment
    scenario: ScenarioRef
    sequences: tuple[str, ...]
    backend: str
    locations: tuple[Location, ...]
    search: str  #: "exhaustive" | "greedy"
    optimal: bool  #: every candidate of the space was measured
    budget: int | None
    recommendation: Evaluation | None
    #: the ranked candidates, best first (the recommendation is the first)
    candidates: tuple[Evaluation, ...]
    necessity: tuple[Necessity, ...] = ()
    #: the recommendation with and without torch._check lines, measured; None: not tried
    checks_with: Evaluation | None = None
    checks_without: Evaluation | None = None
    checks_verdict: str | None = None
    unfixable: tuple[Unfixable, ...] = ()
    change: Change | None = None
    notes: tuple[str, ...] = ()
    #: every phase ran to its end: no limit (--budget, --time-limit) stopped the measuring
    complete: bool = True
    #: --time-limit in seconds; None: no limit
    time_limit: float | None = None
    #: what stopped the measuring: "budget" or "time_limit"; None: nothing did
    stopped_by: str | None = None
    #: the candidates of the search space (exhaustive); None: greedy, not known in advance
    planned: int | None = None
    #: the phases a limit cut short, not measured or only in part: "search", "confirmation",
    #: "necessity", "checks", "environment" (the notes say what each one misses)
    skipped: tuple[str, ...] = ()
    #: wall-clock seconds of the whole search, set-up included
    elapsed_s: float | None = None
    #: the saved `run` report (--from-report) whose runs were reused; None: everything measured
    from_report: str | None = None
    #: the candidates read from that report instead of measured (their names, as in candidates)
    reused: tuple[str, ...] = ()
    #: the candidates whose µs/call was measured: those tied for first before µs/call (the
    #: others' is null, as no figure could change their rank), the forms and read ones aside
    timed: tuple[str, ...] = ()

    @property
    def evaluations(self) -> int:
        return len(self.candidates)


def _recommendation(e: Evaluation | None) -> dict[str, Any] | None:
    if e is None:
        return None
    return {
        "marks": [m.to_dict() for m in e.marks],
        "whole_function": e.whole_function,
        "compiles": e.compiles,
        "guard_count": e.guard_count,
        "shape_env_guard_count": e.shape_env_guard_count,
        "steady_state_us": e.steady_state_us,
        "outputs_match": e.outputs_match,
        "checks": list(e.checks),
        "name": e.name,
        "form": e.form,
    }


def to_json(s: Suggestion) -> str:
    change = s.change
    data = {
        "schema_version": SCHEMA_VERSION,
        "tool": {"name": s.tool.name, "version": s.tool.version},
        "environment": {
            "torch": s.environment.torch,
            "python": s.environment.python,
            "platform": s.environment.platform,
        },
        "scenario": {
            "name": s.scenario.name,
            "path": s.scenario.path,
            "sha256": s.scenario.sha256,
            "sequences": list(s.sequences),
            "backend": s.backend,
        },
        "locations": [
            {
                "argument": loc.argument,
                "dim": loc.dim,
                "symbol": loc.symbol,
                "name": loc.name,
                "source": loc.source,
                "sizes": list(loc.sizes),
            }
            for loc in s.locations
        ],
        "search": s.search,
        "budget": s.budget,
        "evaluations": s.evaluations,
        "optimal": s.optimal,
        "complete": s.complete,
        "time_limit": s.time_limit,
        "stopped_by": s.stopped_by,
        "planned": s.planned,
        "skipped": list(s.skipped),
        "elapsed_s": s.elapsed_s,
        "from_report": s.from_report,
        "reused": list(s.reused),
        "timed": list(s.timed),
        "recommendation": _recommendation(s.recommendation),
        "necessity": [n.to_dict() for n in s.necessity],
        "checks": None
        if s.checks_with is None
        else {
            "with": s.checks_with.to_dict(),
            "without": s.checks_without.to_dict() if s.checks_without else None,
            "verdict": s.checks_verdict,
        },
        "candidates": [c.to_dict() for c in s.candidates],
        "unfixable": [u.to_dict() for u in s.unfixable],
        "change": None
        if change is None
        else {
            "code": list(change.code),
            "environment": dict(change.environment),
            "environment_measured": (
                change.environment_measured.to_dict() if change.environment_measured else None
            ),
            "environment_note": change.environment_note,
            "yaml": change.yaml,
        },
        "notes": list(s.notes),
    }
    return json.dumps(data, indent=2) + "\n"
