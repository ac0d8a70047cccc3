"""One (target, sequence, strategy) probe inside a Recorder -> a ``Run`` record (imports torch).

Per run: fresh Dynamo state, the strategy's config and stance, a counting backend wrapping the real
one, marks re-applied in eager code before every call, and the recorder listening. Per call: the
event, the wall latency and the comparison with eager. After the sequence: the cache entries and
their guard trees, then the steady-state cost (the last call repeated, outside the counts).
"""

from __future__ import annotations

import contextlib
import math
import statistics
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import torch

from . import analysis, compat, guards
from . import strategies as strategies_mod
from .errors import EagerFailure, ProbeError
from .model import CacheEntry, Call, CompileEvent, Run, RunError, figureless_run, replace
from .recorder import Recorder, delta
from .scenario import Scenario
from .strategies import Strategy
from .targets.loader import LoadedTarget


#: Dynamo logs the errors we record (e.g. guard creation failures) at ERROR on stderr; the report
#: already carries them. `--debug` turns this off.
QUIET_TORCH_LOGS = True


class CountingBackend:
    """Counts the graphs handed to the backend, then delegates (what CompileCounter counts)."""

    def __init__(self, backend: Any) -> None:
        self.backend = backend
        self.graphs = 0

    def __call__(self, gm: torch.fx.GraphModule, example_inputs: list) -> Callable:
        self.graphs += 1
        return self.backend(gm, example_inputs)


# --- eager reference ------------------------------------------------------------------------------

@dataclass(frozen=True)
class Timing:
    """Steady-state samples of one call, summarized: the median ranks, min and p90 show spread."""

    min_us: float
    median_us: float
    p90_us: float  #: nearest rank: the ceil(0.9 n)-th fastest sample

    @classmethod
    def of(cls, samples: list[float]) -> "Timing":
        ordered = sorted(samples)
        p90 = ordered[max(0, math.ceil(0.9 * len(ordered)) - 1)]
        return cls(round(ordered[0], 2), round(statistics.median(ordered), 2), round(p90, 2))


@dataclass
class EagerReference:
    """Eager outputs per batch size, computed once per sequence and shared by every strategy."""

    outputs: dict[int, Any] = field(default_factory=dict)
    steady_us: float | None = None


def eager_reference(target: LoadedTarget, sequence: tuple[int, ...], repeats: int) -> EagerReference:
    ref = EagerReference()
    with compat.eager_stance():
        for index, batch_size in enumerate(sequence):
            if batch_size in ref.outputs:
                continue
            try:
                args = target.make_args(batch_size)
            except ProbeError:
                raise
            except Exception as exc:
                raise EagerFailure(
                    f"making the inputs for batch size {batch_size} (call {index}) failed: "
                    f"{type(exc).__name__}: {_first_line(exc)}",
                    "Check the factory or the tensor specs; pass --debug for the traceback.",
                ) from exc
            try:
                ref.outputs[batch_size] = target.fn(*args)
            except Exception as exc:
                raise EagerFailure(
                    f"the target fails without torch.compile at call {index} (batch size "
                    f"{batch_size}): {type(exc).__name__}: {_first_line(exc)}",
                    "Fix the target or its inputs first: no strategy can be judged against a "
                    "failing eager run. Pass --debug for the traceback.",
                ) from exc
        if repeats:
            args = target.make_args(sequence[-1])
            ref.steady_us = statistics.median(_samples_us(_synced(lambda: target.fn(*args),
                                                                  _wait_for_device(args)), repeats))
    return ref


# --- comparison -----------------------------------------------------------------------------------

def outputs_match(actual: Any, expected: Any, rtol: float | None, atol: float | None) -> bool | None:
    """assert_close semantics (integers and bools exact); None when the outputs cannot be compared."""
    try:
        torch.testing.assert_close(actual, expected, rtol=rtol, atol=atol, equal_nan=True)
        return True
    except AssertionError:
        return False
    except Exception:  # noqa: BLE001 - types assert_close does not know: fall back to ==
        try:
            return bool(actual == expected)
        except Exception:  # noqa: BLE001
            return None


# --- the probe ------------------------------------------------------------------------------------

def _first_line(exc: BaseException | str) -> str:
    text = str(exc)
    return next((ln.strip() for ln in text.splitlines() if ln.strip()), type(exc).__name__
                if isinstance(exc, BaseException) else "")


def describe_error(exc: BaseException, call_index: int | None) -> RunError:
    """The root cause where Dynamo wraps one (UserError around GuardOnDataDependentSymNode, ...)."""
    root = exc
    seen = {id(exc)}
    # Dynamo's wrappers (UserError, Unsupported, BackendCompilerFailed, ...) raise while handling
    # the real error, so it may sit in __context__ rather than __cause__.
    while type(root).__module__.startswith("torch._dynamo"):
        inner = root.__cause__ or root.__context__
        if inner is None or id(inner) in seen:
            break
        root = inner
        seen.add(id(root))
    message = _first_line(root) or _first_line(exc)
    # Some messages put the substance in a bullet under a generic first line
    # (ConstraintViolationError: "Constraints violated (...)!" then "- You marked ...").
    bullet = next((ln.strip()[2:] for ln in str(root).splitlines() if ln.strip().startswith("- ")),
                  None)
    if bullet:
        message = f"{message} {bullet}"
    return RunError(type(root).__name__, message, call_index)


def _wait_for_device(args: tuple) -> Callable[[], None] | None:
    """A synchronize for the accelerator the inputs live on, so timings include the kernels."""
    for arg in args:
        if isinstance(arg, torch.Tensor) and arg.device.type not in ("cpu", "meta"):
            module = getattr(torch, arg.device.type, None)
            sync = getattr(module, "synchronize", None)
            return sync if callable(sync) else None
    return None


def _synced(fn: Callable[[], Any], sync: Callable[[], None] | None) -> Callable[[], Any]:
    if sync is None:
        return fn

    def call() -> Any:
        out = fn()
        sync()
        return out

    return call


def _samples_us(fn: Callable[[], Any], repeats: int) -> list[float]:
    samples = []
    for _ in range(repeats):
        start = time.perf_counter_ns()
        fn()
        samples.append((time.perf_counter_ns() - start) / 1000.0)
    return samples


def warm_up(backend: str, mode: str | None = None, options: dict | None = None) -> None:
    """One throw-away compile, so the first strategy does not pay the process's first compile."""
    def _warm(x: torch.Tensor) -> torch.Tensor:
        return (x + 1).sum()

    compat.reset_dynamo()
    with compat.isolated_caches(backend):
        fn = torch.compile(_warm, backend=compat.resolve_backend(backend, mode, options, None))
        fn(torch.ones(3))
    compat.reset_dynamo()


def _figureless(scenario: Scenario, target: LoadedTarget, name: str, seq: tuple[int, ...],
                strategy: Strategy, status: str, error: RunError) -> Run:
    return figureless_run(target.name, name, seq, strategy.name, scenario.backend, status, error,
                          description=strategy.description)


def probe(
    scenario: Scenario,
    target: LoadedTarget,
    sequence_name: str,
    sequence: tuple[int, ...],
    strategy: Strategy,
    reference: EagerReference,
    trace_dir: str | None = None,
) -> Run:
    why = strategies_mod.missing_features(strategy, target_is_compiled=target.compiled is not None)
    if why is not None:
        return _figureless(scenario, target, sequence_name, sequence, strategy, "unsupported",
                           RunError("Unsupported", why, None))
    compat.reset_dynamo()
    trace_file: Callable[[], str | None] = lambda: None  # noqa: E731
    with contextlib.ExitStack() as stack:
        if trace_dir is not None:
            folder = Path(trace_dir, _safe(strategy.name))
            folder.mkdir(parents=True, exist_ok=True)
            trace_file = stack.enter_context(compat.structured_trace(str(folder)))
        try:
            compiled, graphs = _setup(stack, scenario, target, strategy)
        except Exception as exc:  # e.g. a bad compile kwarg or config value in the scenario
            return _figureless(scenario, target, sequence_name, sequence, strategy, "error",
                               describe_error(exc, None))
        if QUIET_TORCH_LOGS:
            stack.enter_context(compat.quiet_torch_logs())
        mark = strategies_mod.marker(strategy)
        if mark is not None:  # marks live on the tensors: undo them, whatever the factory returns
            stack.callback(mark.restore)
        driver = _Driver(scenario, target, strategy, compiled, graphs, reference,
                         stack.enter_context(Recorder()), mark)
        driver.drive(sequence)
        entries = guards.all_entries()
        steady = driver.steady_state()
    run = _summarize(driver, entries, steady, scenario, target, sequence_name, sequence,
                     strategy, reference)
    written = trace_file()
    if written is None:
        return run
    named = Path(written).with_name(f"{_safe(sequence_name)}.log")
    Path(written).replace(named)  # one readable name per (strategy, sequence)
    return replace(run, trace_file=str(named))


def _safe(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in name)


def _setup(stack: contextlib.ExitStack, scenario: Scenario, target: LoadedTarget,
           strategy: Strategy) -> tuple[Callable, Callable[[], int | None]]:
    """Enter the strategy's state; return the callable to drive and a graph counter."""
    kwargs, extra_config = strategies_mod.compile_kwargs(strategy, scenario.compile)
    stack.enter_context(compat.isolated_caches(scenario.backend))
    for dotted, value in extra_config.items():
        stack.enter_context(strategies_mod.patched(dotted, value))
    if strategy.as_is:
        # The user's own backend: Dynamo's unique_graphs counter stands in for ours.
        before = compat.unique_graphs()
        compiled: Callable = target.compiled  # type: ignore[assignment]
        graphs: Callable[[], int | None] = lambda: delta(compat.unique_graphs(), before)  # noqa
    else:
        counter = CountingBackend(compat.resolve_backend(
            scenario.backend, scenario.backend_mode,
            dict(scenario.backend_options or {}) or None, strategy.dynamic))
        compiled = torch.compile(target.fn, backend=counter, **kwargs)
        graphs = lambda: counter.graphs  # noqa: E731
    stack.enter_context(strategies_mod.applied(
        strategy, strategies_mod.batch_sources(target.arg_names, target.batch_dims)))
    return compiled, graphs


class _Driver:
    """Calls the compiled target through a sequence and classifies each call."""

    def __init__(self, scenario: Scenario, target: LoadedTarget, strategy: Strategy,
                 compiled: Callable, graphs: Callable[[], int | None],
                 reference: EagerReference, recorder: Recorder,
                 mark: strategies_mod.Marker | None) -> None:
        self.scenario, self.target, self.compiled = scenario, target, compiled
        self.graphs, self.reference, self.recorder = graphs, reference, recorder
        self.mark = mark
        self.metrics_ok = compat.metrics_available()
        self.calls: list[Call] = []
        self.events: list[CompileEvent] = []
        self.error: RunError | None = None
        self.last_args: tuple | None = None
        self.guard_check_us: float | None = None
        self.timing: Timing | None = None
        self._graphs_seen = 0
        self._code = guards.frame_code(target.fn)
        #: whether guard checks on our reconstruction of the frame's locals can be trusted:
        #: settled at the first compile (the entry it just made must accept its own call)
        self._locals_ok: bool | None = None
        self._sync: Callable[[], None] | None = None  # set from the first call's inputs

    def _call(self, args: tuple) -> Any:
        if self.mark is not None:  # in eager code, right before the call (the vLLM placement)
            self.mark(args, self.target.batch_dims)
        out = self.compiled(*args)
        if self._sync is not None:  # time the kernels, not only their launch
            self._sync()
        return out

    def drive(self, sequence: tuple[int, ...]) -> None:
        for index, batch_size in enumerate(sequence):
            args = self.target.make_args(batch_size)
            if index == 0:
                self._sync = _wait_for_device(args)
            before, graphs_before = len(self.recorder), self.graphs()
            try:
                start = time.perf_counter_ns()
                out = self._call(args)
                latency: float | None = round((time.perf_counter_ns() - start) / 1000.0, 2)
            except Exception as exc:  # the strategy's failure is a finding, not a crash
                self.error = describe_error(exc, index)
            self.recorder.poll()
            new = [replace(e, call_index=index) for e in self.recorder.since(before)]
            self.events.extend(new)
            graphs = delta(self.graphs(), graphs_before)
            failed = sum(e.failed for e in new) if self.metrics_ok else None
            if self.error is not None:
                self.calls.append(Call(index, batch_size, "error", None, None, graphs, failed))
                return
            match = outputs_match(out, self.reference.outputs[batch_size], self.scenario.rtol,
                                  self.scenario.atol)
            self.calls.append(Call(index, batch_size, self._event(new, args), latency, match,
                                   graphs, failed))
            self.last_args = args
            del out

    def _served(self, args: tuple) -> Any:
        """The entry that serves these args; None if none does; False if that cannot be told."""
        f_locals = guards.frame_locals(self.target.fn, args)
        if f_locals is None or self._locals_ok is False:
            return False
        return guards.serving_entry(self._code, f_locals)

    def _event(self, new: list[CompileEvent], args: tuple) -> str:
        if self.metrics_ok:
            if new:
                if self._locals_ok is None and any(not e.failed for e in new):
                    self._locals_ok = self._served(args) not in (None, False)
                return "recompile" if any(e.recompile for e in new) else "compile"
            # No compile: a cache hit, unless no entry accepts the call and it ran eagerly
            # (e.g. past the recompile limit).
            if self._locals_ok:
                return "eager" if self._served(args) is None else "hit"
            # Locals not trusted (or never settled): with no cache entry in any frame nothing
            # compiled can have run, e.g. under the eager_on_recompile stance from the start.
            return "eager" if guards.all_entries() == [] else "hit"
        # No metrics in this torch: a new backend graph is the only compile signal left.
        seen, self._graphs_seen = self._graphs_seen, self.graphs() or 0
        return "hit" if self._graphs_seen == seen else "compile" if not seen else "recompile"

    def steady_state(self) -> float | None:
        """Median µs/call of the last call repeated; compiles here are outside the counts."""
        if self.error is not None or self.last_args is None or not self.scenario.repeats:
            return None
        args = self.last_args
        self._call(args)  # untimed: a compile here must not pollute the median
        self.timing = Timing.of(_samples_us(lambda: self._call(args), self.scenario.repeats))
        steady = self.timing.median_us
        entry = self._served(args) if self._locals_ok else None
        f_locals = guards.frame_locals(self.target.fn, args)
        if entry and f_locals is not None:
            mark = self.mark
            before = (lambda: mark(args, self.target.batch_dims)) if mark is not None else None
            cost = guards.check_cost_us(entry, f_locals, before)
            self.guard_check_us = None if cost is None else round(cost, 3)
        return steady


def _summarize(driver: _Driver, entries: list[guards.EntryInfo] | None, steady: float | None,
               scenario: Scenario, target: LoadedTarget, sequence_name: str,
               sequence: tuple[int, ...], strategy: Strategy, reference: EagerReference) -> Run:
    events, calls = driver.events, driver.calls
    own = _own_frame_newest(events)
    entry = next((e for e in entries or () if own is not None and e.compile_id == own.compile_id),
                 None)
    made_by = {e.compile_id: e for e in events if not e.failed}
    compared = [c.outputs_match for c in calls if c.event != "error"]
    times = [e.compile_time_ms for e in events]
    timing = driver.timing
    marked, notes = _marking(driver, strategy, target)
    return Run(
        target=target.name,
        sequence_name=sequence_name,
        sequence=tuple(sequence),
        strategy=strategy.name,
        backend=scenario.backend,
        status="error" if driver.error else "ok",
        error=driver.error,
        graphs=driver.graphs(),
        compiles=len(events) if driver.metrics_ok else None,
        recompiles=sum(e.recompile for e in events) if driver.metrics_ok else None,
        cache_entries=None if entries is None else len(entries),
        guard_count=own.guard_count if own else None,
        shape_env_guard_count=own.shape_env_guard_count if own else None,
        leaf_guard_count=entry.leaf_guard_count if entry else None,
        compile_time_ms=None if None in times else round(sum(times), 3),
        outputs_match=None if not compared or None in compared else all(compared),
        calls=tuple(calls),
        compile_events=tuple(events),
        steady_state_us=steady,
        eager_us=None if reference.steady_us is None else round(reference.steady_us, 2),
        strategy_description=strategy.description,
        guard_check_us=driver.guard_check_us,
        guard_latency_us=own.guard_latency_us if own else None,
        entries=tuple(_cache_entry(e, made_by.get(e.compile_id), sequence)
                      for e in sorted(entries or (), key=_compile_order)),
        failed_compiles=sum(e.failed for e in events) if driver.metrics_ok else None,
        guard_compile_id=own.compile_id if own else None,
        steady_state_min_us=timing.min_us if timing else None,
        steady_state_p90_us=timing.p90_us if timing else None,
        steady_state_noisy=analysis.too_noisy(timing.min_us, timing.median_us) if timing else None,
        marked_dims=marked,
        notes=notes,
    )


def _frame_id(compile_id: str | None) -> str | None:
    return None if not compile_id else compile_id.split("/", 1)[0]


def _own_frame_newest(events: list[CompileEvent]) -> CompileEvent | None:
    """The newest successful compile of the target's own frame.

    After the run's reset frame ids restart, and the first frame Dynamo compiles is the outermost
    one the probe called (frame id 0), so the first event's frame is the target's, whatever its
    co_name (a decorator's wrapper, a module's forward). Matching by name would pick an inner
    frame's entry whenever a wrapper renames the outer one.
    """
    if not events:
        return None
    frame = _frame_id(events[0].compile_id)
    if frame is None:
        return None
    return next((e for e in reversed(events)
                 if not e.failed and _frame_id(e.compile_id) == frame), None)


def _marking(driver: _Driver, strategy: Strategy,
             target: LoadedTarget) -> tuple[int | None, tuple[str, ...]]:
    """(marked_dims, notes): how many batch dims the strategy marked or named, and a note when a
    strategy meant to mark had nothing to mark (e.g. batch_dims: {}, or a list of tensors)."""
    named = [s for s in strategies_mod.batch_sources(target.arg_names, target.batch_dims)
             .split(",") if s]
    by_sources = any(v == strategies_mod.BATCH_SOURCES for v in strategy.config.values())
    why = "no batch dim is a tensor dim (batch_dims is empty or names a non-tensor argument)"
    if driver.mark is not None:
        marked = len(driver.mark.marked)
        if marked == 0 and driver.calls:
            return 0, (f"nothing to mark: {why}; ran without marks",)
        return marked, ()
    if by_sources:
        if not named:
            return 0, (f"nothing to name: {why}; set no source",)
        return len(named), ()
    return None, ()


def _compile_order(entry: guards.EntryInfo) -> tuple[int, ...]:
    try:
        return tuple(int(p) for p in (entry.compile_id or "").split("/"))
    except ValueError:
        return (1 << 30,)


def _cache_entry(info: guards.EntryInfo, event: CompileEvent | None,
                 sequence: tuple[int, ...]) -> CacheEntry:
    call = event.call_index if event else None
    return CacheEntry(
        function=info.function, filename=info.filename, line=info.line,
        compile_id=info.compile_id, call_index=call,
        batch_size=sequence[call] if call is not None and call < len(sequence) else None,
        guard_count=event.guard_count if event else None,
        shape_env_guard_count=event.shape_env_guard_count if event else None,
        leaf_guard_count=info.leaf_guard_count, guards=info.guards)
