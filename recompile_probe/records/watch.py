"""The records of `watch` and `summarize`: per compiled function, per process. No torch."""

from __future__ import annotations

import json
from dataclasses import dataclass

from ..errors import ReportError
from . import encode
from .origin import GraphBreakSite, Origin, Specialization
from .ranks import RankDivergence
from .report import SCHEMA_VERSION, Environment, Tool
from .run import CompileEvent


@dataclass(frozen=True)
class ReasonCount:
    """A distinct recompile reason of one function, and how often it occurred."""

    kind: str | None
    text: str  #: the first failing guard, comment stripped (object ids masked: ``masked``)
    count: int
    #: the user line behind it (as CompileEvent.reason_origins), from its first occurrence
    origin: Origin | None = None
    #: object ids in ``text`` (BACKEND_MATCH's ``id=0x...``, ID_MATCH, TYPE_MATCH) were replaced
    #: by ``…``, so that reasons differing only in them are one, counted in ``count``
    masked: bool = False


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
    origin: Origin | None = None


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
    #: graph breaks with their user line, over its compiles
    graph_break_origins: tuple[GraphBreakSite, ...] = ()
    #: sizes and ints its user code forced to a constant
    specializations: tuple[Specialization, ...] = ()
    #: the functions this one code object was compiled for, where more than one (a decorator's
    #: wrapper; told by the functions its closure held): they share its recompile limit
    shared_by: tuple[str, ...] = ()
    #: what to do about a shared code object's recompiles (reasons.kinds, advice); None: not one
    shared_remedy: str | None = None
    #: graph breaks as Dynamo's graph_break counter counted them over its compiles (it leaves
    #: some out, e.g. a branch on a data-dependent value); ``graph_breaks`` is what was seen:
    #: Dynamo's graph-break list, and at least one per resume function compiled after a break
    dynamo_graph_breaks: int | None = None
    #: its failed compiles that were torch's own assertions (kind torch_internal_error), by
    #: message (the error's first line), counted
    internal_errors: tuple[ReasonCount, ...] = ()


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
    #: functions the ranks of a distributed job compiled differently (analysis/ranks.py): []
    #: when the ranks agree; None (absent from JSON) when fewer than two ranks were seen
    rank_divergence: tuple[RankDivergence, ...] | None = None
    #: the ranks compared, lowest first (absent from JSON with rank_divergence)
    ranks_compared: tuple[int, ...] = ()
    #: the knobs against ranks compiling differently that the ranks' torch has, by name
    #: (torch._dynamo.config.enable_compiler_collectives, torch.compiler.
    #: set_enable_guard_collectives): advice, not measured; None where not known (a trace read
    #: back); absent from JSON with rank_divergence
    collective_knobs: tuple[str, ...] | None = None

    def totals(self) -> dict[str, int]:
        """Over every process (a function compiled in two processes counts twice)."""
        sections = [p.functions for p in self.processes] or [self.functions]
        fs = [f for functions in sections for f in functions]
        return {
            "processes": len(self.processes),
            "processes_compiled": sum(bool(p.events) for p in self.processes),
            "functions": len(fs),
            "compiles": sum(f.compiles for f in fs),
            "recompiles": sum(f.recompiles for f in fs),
            "failed": sum(f.failed for f in fs),
        }


def watch_to_json(report: WatchReport) -> str:
    data = encode.data(report)
    # Compile ids restart in each spawned process: the pid says which process an event is from.
    for process in data["processes"]:
        for event in process["events"]:
            event["pid"] = process["pid"]
    if report.rank_divergence is None:  # one rank or none: nothing was compared
        for name in ("rank_divergence", "ranks_compared", "collective_knobs"):
            data.pop(name)
    main = next((p["pid"] for p in data["processes"] if p["main"]), None)
    if main is not None:
        for event in data["events"]:
            event["pid"] = main
        data["totals"] = report.totals()
    return json.dumps({"schema_version": data.pop("schema_version"), **data}, indent=2) + "\n"


def is_watch_document(data: object) -> bool:
    """A `watch` or `summarize` JSON document (not a `run` report, which has ``runs``)."""
    return (
        isinstance(data, dict)
        and data.get("kind") in ("watch", "summarize")
        and "functions" in data
        and "runs" not in data
    )


def watch_from_dict(data: dict, source: str = "report") -> WatchReport:
    """The report `watch_to_json` wrote, read back (the per-event ``pid`` and the ``totals`` it
    adds are derived: dropped here, written again)."""
    from .decode import build

    version = data.get("schema_version")
    if version != SCHEMA_VERSION:
        raise ReportError(
            f"{source}: unsupported schema_version {version!r} (this recompile-probe reads "
            f"{SCHEMA_VERSION})"
        )
    return build(WatchReport, data, source)
