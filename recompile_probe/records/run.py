"""The records of one run: its calls, compile events, cache entries and figures. No torch.

The JSON field names are a contract (docs/json.md): add fields, never rename them. A figure the
installed torch could not provide is ``None`` here, ``null`` in JSON and ``n/a`` in tables; it is
never guessed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .coverage import Coverage
from .origin import GraphBreakSite, Origin, RunSpecialization
from .reason_detail import ReasonDetail

#: Per-call events. "eager": no compile happened and no cache entry accepted the call, so it ran
#: without compiled code (e.g. the frame is past its recompile limit).
EVENTS = ("compile", "recompile", "hit", "error", "eager")
STATUSES = ("ok", "error", "unsupported")


@dataclass(frozen=True)
class ClosureFunction:
    """A Python function the closure of a compiled frame held (a decorator's wrapper holds the
    function it wraps)."""

    name: str | None  #: its qualified name
    module: str | None
    file: str
    line: int  #: the line its ``def`` starts on


@dataclass(frozen=True)
class SharedCode:
    """One code object Dynamo compiled for several functions (a decorator's wrapper), told apart
    by the functions its closure held at each compile."""

    function: str | None  #: the code object's own name, file and first line
    filename: str | None
    line: int | None
    functions: tuple[str, ...]  #: one name per distinct closure, in first-seen order
    compiles: int
    recompiles: int  #: those of kind shared_code_object


@dataclass(frozen=True)
class ArgumentDim:
    """One dim of the target's arguments a size symbol moves, as Dynamo names its source."""

    source: str  #: e.g. ``L['x']``
    dim: int
    symbol: str


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
    #: why outputs_match is what it is when it is not true: the path of the first difference
    #: ("logits: Tensor-likes are not close! ...") or what could not be compared and where
    #: ("not compared: past_key_values.fn is a Foo"); None when the outputs matched
    outputs_detail: str | None = None


@dataclass(frozen=True, kw_only=True)
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
    #: the first failing guard's kind (reasons.KINDS), and that guard as structured data
    reason_kind: str | None = None
    reason_detail: ReasonDetail | None = None
    guard_latency_us: float | None = None  #: CompilationMetrics.guard_latency_us: a COLD figure
    #: graphs this compile handed to a backend, counted as they are handed over (where this torch
    #: has no hook for it, Dynamo's unique_graphs counter's movement during the compile)
    graphs: int | None = None
    #: graph breaks this compile hit (the growth of Dynamo's graph-break list during the compile;
    #: where it keeps none, its graph_break counter's)
    graph_breaks: int | None = None
    #: per failing guard line of ``reason``, in order: the user line behind it, or None where
    #: this torch cannot say (never a guessed line); None for a first compile or when nothing
    #: was captured
    reason_origins: tuple[Origin | None, ...] | None = None
    #: every failing guard Dynamo named for this recompile, raw, one "N/M: guard" line per guard
    #: (``reason`` keeps the first per cache entry); () for a first compile or where not logged
    failures: tuple[str, ...] = ()
    #: torch._dynamo.reset() calls seen before this compile in its process: a reset restarts
    #: compile ids, so "0/0" after one reset is another compile than "0/0" before it
    resets: int = 0
    #: the Python functions the compiled frame's closure held: () where it held none; None where
    #: not seen (a trace, a torch whose compile takes no closure)
    closure_functions: tuple[ClosureFunction, ...] | None = None
    #: graph breaks as Dynamo's own graph_break counter counted them during this compile. It
    #: leaves some out (a branch on a data-dependent value is listed, not counted), so it can be
    #: below ``graph_breaks``; None where the counter moved otherwise (cleared) or was not read
    dynamo_graph_breaks: int | None = None


#: GuardLine.kind of the symbolic guards (the shape env's epilogue lambda guard at the root)
SHAPE_ENV = "SHAPE_ENV"
#: GuardLine.kind of ``a is b`` guards (two sources must stay the same object), which Dynamo
#: also installs as an epilogue lambda guard at the root: not symbolic, not shape-env guards
OBJECT_ALIASING = "OBJECT_ALIASING"


@dataclass(frozen=True)
class GuardLine:
    """One guard of a cache entry: a code part of a leaf guard, comment stripped."""

    kind: str  #: the guard type, e.g. TENSOR_MATCH, TYPE_MATCH; SHAPE_ENV for symbolic guards
    source: str | None  #: the guarded value, e.g. L['x']; None at the root
    text: str
    #: the user line that created it (SHAPE_ENV), or where the tensor was first used
    #: (TENSOR_MATCH, role first_use); None: n/a
    origin: Origin | None = None
    #: every line that contributed to a SHAPE_ENV guard (Dynamo folds several into one), origin
    #: first; empty where none is known
    origins: tuple[Origin, ...] = ()


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
    #: leaf guards per kind, most first: adds up to leaf_guard_count (``guards`` has a line per
    #: code part, so a leaf with several parts is several lines); None where not read
    leaf_guard_kinds: dict[str, int] | None = None


@dataclass(frozen=True)
class RunError:
    type: str  #: exception class name (the root cause where Dynamo wraps one)
    #: first line of the message; for a torch_internal_error, after the words "torch raised an
    #: internal assertion; this is not your code: "
    message: str
    call_index: int | None  #: the call that raised; None when the run failed before any call
    #: torch_internal_error where it is one of torch's own assertions (reasons.kinds); None for
    #: any other error
    kind: str | None = None


@dataclass(frozen=True)
class Violation:
    """A budget of the scenario's `expect:` section (or a CLI flag) that a run broke."""

    budget: str  #: e.g. max_recompiles, outputs_match, status
    limit: Any
    #: None when the figure is n/a in this torch (a budget that cannot be verified fails)
    actual: Any
    reasons: tuple[str, ...] = ()  #: recompile reasons, differing calls or the error behind it
    source: str | None = None  #: where the budget was set: "file.yaml:12" or "--max-recompiles"


@dataclass(frozen=True, kw_only=True)
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
    #: leaf guards in the newest entry's guard tree (relational de-duplicated)
    leaf_guard_count: int | None
    compile_time_ms: float | None  #: sum over compile events
    outputs_match: bool | None  #: every compared call matched eager
    calls: tuple[Call, ...] = ()
    compile_events: tuple[CompileEvent, ...] = ()
    #: median µs per call of the last point re-run ``repeats`` times after the sequence,
    #: as the program runs it (through the driver; fresh inputs); null if that re-run compiled
    steady_state_us: float | None = None
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
    #: compiles while the last point was re-run for timing (a steady state has none; with any,
    #: steady_state_us is null and a note says why); None: not timed
    timing_compiles: int | None = None
    #: the first compared call's outputs_detail that is not a match: where the outputs differ,
    #: or what could not be compared; None when every compared call matched
    outputs_detail: str | None = None
    #: (argument, dim) pairs the strategy marked, or named as sources; None: it marks nothing
    marked_dims: int | None = None
    #: why the strategy changed nothing, e.g. "no effect: matched no source: L['input_ids'] ..."
    #: (sources that name no value of the compiled frame); such a run is never a fix
    no_effect: str | None = None
    #: facts about how this run went that the figures alone do not say
    notes: tuple[str, ...] = ()
    #: the sequence's points, every size symbol -> size; ``sequence`` holds their B values (the
    #: first symbol's where the scenario has no B)
    points: tuple[dict[str, int], ...] = ()
    #: sizes and ints the user's code forced to a constant, per compile of the run; None where
    #: this torch cannot say
    specializations: tuple[RunSpecialization, ...] | None = ()
    #: graph breaks of the run grouped by (reason, user line); None where this torch keeps no
    #: graph-break list
    graph_breaks: tuple[GraphBreakSite, ...] | None = ()
    #: code objects compiled for several functions (a decorator's wrapper), told by the
    #: functions the frame's closure held; None where no compile's closure was seen
    shared_code: tuple[SharedCode, ...] | None = ()
    #: the target's arguments as this run named them, one per dim a size symbol moves: what
    #: explain's code advice is written in, kept so that a saved report is explained without
    #: importing the target; None in a report written before, or for a run that never loaded
    #: its target
    argument_dims: tuple[ArgumentDim, ...] | None = None
    #: the target's positional parameter names (and its **kwargs name), for marks by index;
    #: None as for argument_dims
    param_names: tuple[str | None, ...] | None = None
    #: the rank whose process made this run, in a scenario with `ranks:` (each strategy and
    #: sequence then has one run per rank); None: a single-process run
    rank: int | None = None
    #: the fastest sample of eager_us's re-run; None where not timed
    eager_min_us: float | None = None
    #: eager_us's spread too wide to compare against (analysis.too_noisy: median > 1.3x the
    #: fastest sample); None where not timed
    eager_noisy: bool | None = None
    #: whether every size of the scenario's `coverage:` range (or --cover) is served by the
    #: cache entries the sequence left (records/coverage.py); None: no range was asked
    coverage: Coverage | None = None
    #: the compiles at which the probe stopped the sequence before its end, because they passed
    #: a cap its caller set (suggest: a candidate past the leader's compiles cannot rank first);
    #: the figures are those up to that call. None: the sequence ran to its end
    cut_after: int | None = None


def figureless_run(
    target: str,
    sequence_name: str,
    sequence: tuple[int, ...],
    strategy: str,
    backend: str,
    status: str,
    error: RunError,
    *,
    description: str = "",
    isolation: str = "inline",
) -> Run:
    """A run that produced no figures: unsupported, failed before its first call, or lost."""
    return Run(
        target=target,
        sequence_name=sequence_name,
        sequence=tuple(sequence),
        strategy=strategy,
        backend=backend,
        status=status,
        error=error,
        graphs=None,
        compiles=None,
        recompiles=None,
        cache_entries=None,
        guard_count=None,
        shape_env_guard_count=None,
        leaf_guard_count=None,
        compile_time_ms=None,
        outputs_match=None,
        strategy_description=description,
        isolation=isolation,
    )
