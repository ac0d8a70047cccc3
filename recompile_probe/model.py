"""The result records every renderer reads, and their versioned JSON form.

The JSON field names are a contract (README, "JSON report"): add fields, never rename them. A
figure the installed torch could not provide is ``None`` here, ``null`` in JSON and ``n/a`` in
tables; it is never guessed. No torch import: saved reports are read back without torch.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from typing import Any

from .errors import ReportError

SCHEMA_VERSION = 1

#: Per-call events. "eager": no compile happened and no cache entry accepted the call, so it ran
#: without compiled code (e.g. the frame is past its recompile limit).
EVENTS = ("compile", "recompile", "hit", "error", "eager")
STATUSES = ("ok", "error", "unsupported")


@dataclass(frozen=True)
class Call:
    """One call of the compiled target."""

    index: int  #: position in the sequence, from 0
    batch_size: int
    event: str  #: compile | recompile | hit | error | eager
    latency_us: float | None  #: wall time of the call, compile included
    outputs_match: bool | None  #: equal to eager (assert_close; integers exact); None: not compared
    #: graphs handed to the backend during this call (the counting backend, before/after it);
    #: 0 with failed_compiles > 0: an attempt that produced nothing, the failing frame ran eagerly
    graphs: int | None = None
    #: compile events of this call that failed (recompile limit hit, error_on_recompile, a
    #: backend or tracing error): an attempt, not a cache entry
    failed_compiles: int | None = None
    #: the point of this call, every size symbol -> size, e.g. {"B": 2, "S": 7}
    sizes: dict[str, int] | None = None
    #: which point of the sequence (runs[].points) the call belongs to, and its place within the
    #: point: always 0 without a driver; a driver may call the target several times per point
    point_index: int | None = None
    step: int | None = None


@dataclass(frozen=True)
class CompileEvent:
    """One Dynamo compilation (one CompilationMetrics record), failed ones included."""

    compile_id: str | None  #: "frame/attempt" as tlparse shows it, e.g. "0/1"
    function: str | None  #: co_name of the compiled frame
    call_index: int | None  #: the call that triggered it
    reason: str | None  #: recompile reason(s) as Dynamo logged them; None for a first compile
    guard_count: int | None  #: CompilationMetrics.guard_count
    shape_env_guard_count: int | None  #: CompilationMetrics.shape_env_guard_count
    graph_op_count: int | None  #: CompilationMetrics.graph_op_count
    compile_time_ms: float | None  #: CompilationMetrics.dynamo_cumulative_compile_time_us / 1000
    failed: bool  #: the compile raised (fail_type set)
    filename: str | None = None
    line: int | None = None  #: co_firstlineno
    recompile: bool = False  #: the frame already had a cache entry
    fail_type: str | None = None
    fail_reason: str | None = None
    #: the first failing guard's kind (reasons.KINDS), and that guard as structured data:
    #: {kind, what, source, dim, expected, actual, entry, text}
    reason_kind: str | None = None
    reason_detail: dict | None = None
    guard_latency_us: float | None = None  #: CompilationMetrics.guard_latency_us: a COLD figure
    #: graphs this compile handed to a backend (Dynamo's unique_graphs counter, per compile)
    graphs: int | None = None
    #: graph breaks this compile hit (Dynamo's graph_break counter, per compile)
    graph_breaks: int | None = None
    #: per failing guard line of ``reason``, in order: the user line behind it as an origin dict
    #: {file, line, function, code, role, file_exact}, or None where this torch cannot say
    #: (never a guessed line); None for a first compile or when nothing was captured
    reason_origins: tuple[dict | None, ...] | None = None
    #: every failing guard Dynamo named for this recompile, raw, one "N/M: guard" line per guard
    #: (``reason`` keeps the first per cache entry); () for a first compile or where not logged
    failures: tuple[str, ...] = ()


#: GuardLine.kind of the symbolic guards (the root's epilogue lambda guards)
SHAPE_ENV = "SHAPE_ENV"


@dataclass(frozen=True)
class GuardLine:
    """One guard of a cache entry: a code part of a leaf guard, comment stripped."""

    kind: str  #: the guard type, e.g. TENSOR_MATCH, TYPE_MATCH; SHAPE_ENV for symbolic guards
    source: str | None  #: the guarded value, e.g. L['x']; None at the root
    text: str
    #: the user line that created it (SHAPE_ENV), or where the tensor was first used
    #: (TENSOR_MATCH, role first_use): {file, line, function, code, role, file_exact}; None: n/a
    origin: dict | None = None
    #: every line that contributed to a SHAPE_ENV guard (Dynamo folds several into one), origin
    #: first; empty where none is known
    origins: tuple[dict, ...] = ()


@dataclass(frozen=True)
class CacheEntry:
    """A cache entry as the run left it: who created it and what it guards on."""

    function: str
    filename: str | None
    line: int | None
    compile_id: str | None
    call_index: int | None  #: the call whose compile created it
    batch_size: int | None
    guard_count: int | None  #: CompilationMetrics.guard_count of that compile
    shape_env_guard_count: int | None
    leaf_guard_count: int | None
    guards: tuple[GuardLine, ...] = ()
    #: the point of the call that created it
    sizes: dict[str, int] | None = None


@dataclass(frozen=True)
class RunError:
    type: str  #: exception class name (the root cause where Dynamo wraps one)
    message: str  #: first line of the message
    call_index: int | None  #: the call that raised; None when the run failed before any call


@dataclass(frozen=True)
class Violation:
    """A budget of the scenario's `expect:` section (or a CLI flag) that a run broke."""

    budget: str  #: e.g. max_recompiles, outputs_match, status
    limit: Any
    actual: Any  #: None when the figure is n/a in this torch (a budget that cannot be verified fails)
    reasons: tuple[str, ...] = ()  #: recompile reasons, differing calls or the error behind it
    source: str | None = None  #: where the budget was set: "file.yaml:12" or "--max-recompiles"


@dataclass(frozen=True)
class Run:
    """One (target, sequence, strategy) probe."""

    target: str
    sequence_name: str
    sequence: tuple[int, ...]
    strategy: str
    backend: str
    status: str  #: ok | error | unsupported
    error: RunError | None
    graphs: int | None  #: backend graphs, as a CompileCounter counts them
    compiles: int | None  #: Dynamo compilations (metrics records), failed ones included
    recompiles: int | None  #: compiles of a frame that already had a cache entry
    cache_entries: int | None  #: over every frame the run compiled
    guard_count: int | None  #: metrics guard_count of the newest cache entry
    shape_env_guard_count: int | None  #: metrics shape_env_guard_count of the newest cache entry
    leaf_guard_count: int | None  #: leaf guards in the newest entry's guard tree (relational de-duplicated)
    compile_time_ms: float | None  #: sum over compile events
    outputs_match: bool | None  #: every compared call matched eager
    calls: tuple[Call, ...] = ()
    compile_events: tuple[CompileEvent, ...] = ()
    steady_state_us: float | None = None  #: median µs/call repeating the last call after the sequence
    eager_us: float | None = None  #: the same figure for eager
    strategy_description: str = ""
    isolation: str = "inline"
    #: budgets broken; written by `check`, empty for `run`
    violations: tuple[Violation, ...] = ()
    #: warm µs per guard check of the entry that served the steady-state call
    guard_check_us: float | None = None
    #: CompilationMetrics.guard_latency_us of the newest entry: a COLD figure (caches flushed)
    guard_latency_us: float | None = None
    #: every cache entry at the end of the run, oldest first
    entries: tuple[CacheEntry, ...] = ()
    #: the structured trace of this run (run --trace-dir), for tlparse
    trace_file: str | None = None
    #: compile events that failed (a recompile limit hit, a data-dependent guard in an inner
    #: frame, ...): the frame, or that attempt, ran without compiled code
    failed_compiles: int | None = None
    #: compile id whose figures guard_count, shape_env_guard_count, leaf_guard_count and
    #: guard_latency_us are: the newest successful compile of the target's own frame (frame id 0
    #: after the run's reset: the outermost frame the probe called, wrappers included)
    guard_compile_id: str | None = None
    #: fastest and 90th-percentile (nearest rank) samples; steady_state_us is their median
    steady_state_min_us: float | None = None
    steady_state_p90_us: float | None = None
    #: the spread is too wide to rank on (analysis.too_noisy): never decides a winner
    steady_state_noisy: bool | None = None
    #: (argument, dim) pairs the strategy marked, or named as sources; None: it marks nothing
    marked_dims: int | None = None
    #: facts about how this run went that the figures alone do not say
    notes: tuple[str, ...] = ()
    #: the sequence's points, every size symbol -> size; ``sequence`` holds their B values (the
    #: first symbol's where the scenario has no B)
    points: tuple[dict[str, int], ...] = ()
    #: sizes and ints the user's code forced to a constant, per compile of the run:
    #: {source, value, reason, origin, compile_id}; None where this torch cannot say
    specializations: tuple[dict, ...] | None = ()
    #: graph breaks of the run grouped by (reason, user line): {reason, origin, count};
    #: None where this torch keeps no graph-break list
    graph_breaks: tuple[dict, ...] | None = ()


@dataclass(frozen=True)
class ReasonCount:
    """A distinct recompile reason of one function, and how often it occurred."""

    kind: str | None
    text: str  #: the first failing guard, comment stripped
    count: int
    #: the user line behind it (as CompileEvent.reason_origins), from its first occurrence
    origin: dict | None = None


@dataclass(frozen=True)
class CauseCount:
    """A root cause of a function's recompiles (causes.Cause), and what it cost."""

    label: str  #: e.g. "size of dim 0 of kwargs['input_ids']: 1 → 2"
    what: str
    source: str | None
    dim: int | None
    before: str | None
    after: str | None
    kind: str
    #: a container's length (len(kwargs) == 6): fails whenever an optional argument comes or goes
    incidental: bool
    recompiles: int  #: recompiles it is the most informative cause of
    seen_in: int  #: recompiles where any entry failed for it
    compile_ids: tuple[str, ...] = ()  #: the recompiles it is the most informative cause of
    #: the user line behind it: creating line, or where the tensor was first used (role)
    origin: dict | None = None


@dataclass(frozen=True)
class FunctionSummary:
    """Everything compiled for one code object, from compile events (watch, summarize, record)."""

    function: str  #: qualified name where known, else co_name
    filename: str | None
    line: int | None
    compiles: int
    recompiles: int
    failed: int
    graphs: int | None
    graph_breaks: int | None
    cache_entries: int | None  #: at the end (None: not known, e.g. read from a trace)
    guard_count: int | None  #: of the latest successful compile
    shape_env_guard_count: int | None
    recompile_limit_hit: bool
    reasons: tuple[ReasonCount, ...] = ()
    #: every failing guard of its recompiles grouped by root cause, most informative first
    causes: tuple[CauseCount, ...] = ()
    #: the compiled code object's own name (co_qualname) when ``function`` names what the user
    #: compiled instead (a library decorator's wrapper); None when they are the same
    code_name: str | None = None
    #: where the user called what they compiled, "file.py:67", from the compile's Python stack
    call_site: str | None = None
    #: graph breaks with their user line, over its compiles: {reason, origin, count}
    graph_break_origins: tuple[dict, ...] = ()
    #: sizes and ints its user code forced to a constant: {source, value, reason, origin}
    specializations: tuple[dict, ...] = ()


@dataclass(frozen=True)
class ProcessSummary:
    """One process of a watched program: the program itself, or one of its descendants
    (DataLoader workers, multiprocessing, torchrun ranks). Each process has its own compile ids:
    in JSON every event record carries the ``pid`` it belongs to."""

    pid: int
    ppid: int | None  #: its parent's pid, where recorded
    main: bool  #: the program watch started (its figures are the report's top-level ones)
    role: str | None  #: e.g. "DataLoader worker 0", "rank 1", "SpawnProcess-2"; None: not known
    argv: tuple[str, ...]  #: sys.argv as the process saw it (a forked child keeps its parent's)
    forked_from: int | None  #: forked (not spawned) from this pid: it inherited its compiled code
    recorder: bool  #: the recorder ran in it (False: it imported torch but never Dynamo)
    exit_recorded: bool  #: its exit was seen, so cache entries are known (False: killed, os._exit)
    functions: tuple[FunctionSummary, ...] = ()
    events: tuple[CompileEvent, ...] = ()
    warnings: tuple[str, ...] = ()


@dataclass(frozen=True)
class WatchReport:
    """`watch` (a program run) or `summarize` (trace files read back).

    ``functions`` and ``events`` are the watched program's own process, exactly what it would
    report alone; ``processes`` has a section per process, the program first, then each
    descendant that imported torch.
    """

    tool: Tool
    environment: Environment
    source: str  #: the command line, or the trace files read
    functions: tuple[FunctionSummary, ...]
    events: tuple[CompileEvent, ...] = ()
    exit_code: int | None = None  #: the program's (watch)
    interrupted: bool = False
    skipped_lines: int = 0  #: unreadable trace lines (summarize)
    kind: str = "watch"  #: watch | summarize
    schema_version: int = SCHEMA_VERSION
    processes: tuple[ProcessSummary, ...] = ()  #: watch: the program first, then descendants

    def totals(self) -> dict[str, int]:
        """Over every process (a function compiled in two processes counts twice)."""
        sections = [p.functions for p in self.processes] or [self.functions]
        fs = [f for functions in sections for f in functions]
        return {"processes": len(self.processes),
                "processes_compiled": sum(bool(p.events) for p in self.processes),
                "functions": len(fs), "compiles": sum(f.compiles for f in fs),
                "recompiles": sum(f.recompiles for f in fs), "failed": sum(f.failed for f in fs)}


def watch_to_json(report: WatchReport) -> str:
    data = dataclasses.asdict(report)
    # Compile ids restart in each spawned process: the pid says which process an event is from.
    for process in data["processes"]:
        for event in process["events"]:
            event["pid"] = process["pid"]
    main = next((p["pid"] for p in data["processes"] if p["main"]), None)
    if main is not None:
        for event in data["events"]:
            event["pid"] = main
        data["totals"] = report.totals()
    return json.dumps({"schema_version": data.pop("schema_version"), **data}, indent=2) + "\n"


def figureless_run(target: str, sequence_name: str, sequence: tuple[int, ...], strategy: str,
                   backend: str, status: str, error: RunError, *, description: str = "",
                   isolation: str = "inline") -> Run:
    """A run that produced no figures: unsupported, failed before its first call, or lost."""
    return Run(target, sequence_name, tuple(sequence), strategy, backend, status, error,
               None, None, None, None, None, None, None, None, None,
               strategy_description=description, isolation=isolation)


@dataclass(frozen=True)
class Tool:
    name: str
    version: str


@dataclass(frozen=True)
class Environment:
    torch: str | None
    python: str
    platform: str


@dataclass(frozen=True)
class ScenarioRef:
    name: str
    path: str | None


@dataclass(frozen=True)
class Report:
    tool: Tool
    environment: Environment
    scenario: ScenarioRef
    runs: tuple[Run, ...] = ()
    schema_version: int = SCHEMA_VERSION
    #: False when the run was interrupted and ``runs`` holds only what finished.
    complete: bool = True

    def sequences(self) -> list[tuple[str, tuple[int, ...]]]:
        """(name, batch sizes) in first-seen order."""
        seen: dict[str, tuple[int, ...]] = {}
        for run in self.runs:
            seen.setdefault(run.sequence_name, run.sequence)
        return list(seen.items())

    def runs_for(self, sequence_name: str) -> list[Run]:
        return [r for r in self.runs if r.sequence_name == sequence_name]


# --- JSON -----------------------------------------------------------------------------------------

def to_dict(report: Report) -> dict[str, Any]:
    """The JSON-ready form; key order follows the contract."""
    data = dataclasses.asdict(report)
    ordered = {"schema_version": data.pop("schema_version")}
    ordered.update(data)
    return ordered


def to_json(report: Report, indent: int | None = 2) -> str:
    return json.dumps(to_dict(report), indent=indent) + "\n"


def _build(cls: type, data: dict[str, Any], where: str) -> Any:
    """Build a record, ignoring unknown keys (newer writers) and defaulting optional ones."""
    if not isinstance(data, dict):
        raise ReportError(f"{where}: expected an object, got {type(data).__name__}")
    kwargs = {}
    for f in dataclasses.fields(cls):
        if f.name in data:
            kwargs[f.name] = data[f.name]
        elif f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
            raise ReportError(f"{where}: missing field {f.name!r}")
    return cls(**kwargs)


def _tupled(data: Any, *keys: str) -> Any:
    """JSON lists back to the tuples the records hold (so a report equals its round trip)."""
    if not isinstance(data, dict):
        return data
    return {**data, **{k: tuple(data[k]) for k in keys if isinstance(data.get(k), list)}}


def run_from_dict(data: dict[str, Any], where: str = "run") -> Run:
    data = dict(data)
    data["sequence"] = tuple(data.get("sequence", ()))
    if data.get("error") is not None:
        data["error"] = _build(RunError, data["error"], f"{where}.error")
    data["calls"] = tuple(
        _build(Call, c, f"{where}.calls[{i}]") for i, c in enumerate(data.get("calls", ()))
    )
    data["compile_events"] = tuple(
        _build(CompileEvent, _tupled(e, "reason_origins", "failures"), f"{where}.compile_events[{i}]")
        for i, e in enumerate(data.get("compile_events", ()))
    )
    data["entries"] = tuple(
        _build(CacheEntry, {**e, "guards": tuple(
            _build(GuardLine, _tupled(g, "origins"), f"{where}.entries[{i}].guards[{j}]")
            for j, g in enumerate(e.get("guards", ())))}, f"{where}.entries[{i}]")
        for i, e in enumerate(data.get("entries", ()))
    )
    data = _tupled(data, "specializations", "graph_breaks")
    data["notes"] = tuple(data.get("notes", ()))
    data["points"] = tuple(data.get("points", ()))
    data["violations"] = tuple(
        _build(Violation, {**v, "reasons": tuple(v.get("reasons", ()))},
               f"{where}.violations[{i}]")
        for i, v in enumerate(data.get("violations", ()))
    )
    return _build(Run, data, where)


def from_dict(data: dict[str, Any]) -> Report:
    if not isinstance(data, dict):
        raise ReportError("not a recompile-probe report: the top level is not an object")
    version = data.get("schema_version")
    if version != SCHEMA_VERSION:
        raise ReportError(
            f"unsupported schema_version {version!r} (this recompile-probe reads {SCHEMA_VERSION})"
        )
    runs = tuple(run_from_dict(r, f"runs[{i}]") for i, r in enumerate(data.get("runs", ())))
    return Report(
        tool=_build(Tool, data.get("tool", {}), "tool"),
        environment=_build(Environment, data.get("environment", {}), "environment"),
        scenario=_build(ScenarioRef, data.get("scenario", {}), "scenario"),
        runs=runs,
        schema_version=version,
        complete=data.get("complete", True),
    )


def from_json(text: str, source: str = "report") -> Report:
    """One report; a bundle of several (written by `check` for several scenarios) is refused."""
    reports = reports_from_json(text, source)
    if len(reports) != 1:
        raise ReportError(f"{source}: holds {len(reports)} reports; expected one")
    return reports[0]


def reports_from_json(text: str, source: str = "report") -> list[Report]:
    """A single report or a bundle ``{"schema_version": 1, "reports": [...]}``."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ReportError(f"{source}: not valid JSON ({exc})") from None
    try:
        if isinstance(data, dict) and "reports" in data and "runs" not in data:
            if data.get("schema_version") != SCHEMA_VERSION:
                raise ReportError(f"unsupported schema_version {data.get('schema_version')!r}")
            return [from_dict(r) for r in data["reports"]]
        return [from_dict(data)]
    except ReportError as exc:
        raise ReportError(f"{source}: {exc.message}") from None


def reports_to_json(reports: list[Report]) -> str:
    """One report as itself (the `run` format); several as a bundle."""
    if len(reports) == 1:
        return to_json(reports[0])
    return json.dumps({"schema_version": SCHEMA_VERSION,
                       "reports": [to_dict(r) for r in reports]}, indent=2) + "\n"


def replace(obj: Any, **changes: Any) -> Any:
    return dataclasses.replace(obj, **changes)


__all__ = [
    "SCHEMA_VERSION", "EVENTS", "STATUSES", "Call", "CompileEvent", "RunError", "Run", "Tool",
    "Violation", "reports_from_json", "reports_to_json",
    "Environment", "ScenarioRef", "Report", "to_dict", "to_json", "from_dict", "from_json",
    "run_from_dict", "replace", "figureless_run",
]
