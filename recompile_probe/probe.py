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

from . import analysis, compat, guards, origins
from . import reasons as reasons_mod
from . import strategies as strategies_mod
from .errors import EagerFailure, ProbeError
from .model import CacheEntry, Call, CompileEvent, Run, RunError, figureless_run, replace
from .recorder import Recorder, delta
from . import sizes
from .inputs import Inputs
from .scenario import Scenario
from .sizes import BATCH, Point
from .strategies import Strategy
from .targets.loader import LoadedTarget


#: Dynamo logs the errors we record (e.g. guard creation failures) at ERROR on stderr; the report
#: already carries them. `--debug` turns this off.
QUIET_TORCH_LOGS = True

#: the user line of each guard, specialization and graph break (origins.py): one ShapeEnv
#: reference per compile, read once after the run. benchmarks/provenance_overhead.py measures it.
PROVENANCE = True


class CountingBackend:
    """Counts the graphs handed to the backend, then delegates (what CompileCounter counts).

    With a collector it also keeps a reference to the compile's ShapeEnv (O(1); read after the
    run) for the user line of each guard: the backend runs only for frames that make a graph."""

    def __init__(self, backend: Any, collector: origins.Collector | None = None) -> None:
        self.backend = backend
        self.graphs = 0
        self.collector = collector

    def __call__(self, gm: torch.fx.GraphModule, example_inputs: list) -> Callable:
        if self.collector is not None:
            self.collector.capture()
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
    """Eager outputs per point, computed once per sequence and shared by every strategy.

    With a driver, ``calls`` holds the output of each call of the target within the point, in
    order, and ``outputs`` the driver's return value."""

    outputs: dict[Point, Any] = field(default_factory=dict)
    calls: dict[Point, list[Any]] = field(default_factory=dict)
    steady_us: float | None = None


def eager_reference(target: LoadedTarget, points: tuple[Point, ...], repeats: int
                    ) -> EagerReference:
    ref = EagerReference()
    last: Inputs | None = None
    #: the grad / inference mode of the last call: a driver may call under no_grad
    modes: list[tuple[bool, bool]] = []
    mode = (torch.is_grad_enabled(), torch.is_inference_mode_enabled())
    with compat.eager_stance():
        for index, point in enumerate(points):
            if point in ref.outputs:
                continue
            if target.driver is not None:
                seen: list[Inputs] = []

                def fn(*args: Any, **kwargs: Any) -> Any:
                    if target.driver_dims is not None:  # dims name what the driver passes
                        target.driver_dims(args, kwargs)
                    seen.append((args, kwargs))
                    modes.append((torch.is_grad_enabled(), torch.is_inference_mode_enabled()))
                    out = target.fn(*args, **kwargs)
                    ref.calls.setdefault(point, []).append(out)
                    return out

                ref.outputs[point] = _eager(lambda: target.driver(fn, **point.as_dict()),
                                            index, point, "the driver")
                last = seen[-1] if seen else last
                mode = modes[-1] if modes else mode
                continue
            assert target.make_inputs is not None
            try:
                args, kwargs = target.make_inputs(point)
            except ProbeError:
                raise
            except Exception as exc:
                raise EagerFailure(
                    f"making the inputs for {_at(point)} (call {index}) failed: "
                    f"{type(exc).__name__}: {_first_line(exc)}",
                    "Check the factory or the tensor specs; pass --debug for the traceback.",
                ) from exc
            ref.outputs[point] = _eager(lambda: target.fn(*args, **kwargs), index, point,
                                        "the target")
            last = (args, kwargs)
        if target.driver_dims is not None:
            target.driver_dims.finish()
        if repeats and target.make_inputs is not None:
            last = target.make_inputs(points[-1])
        if repeats and last is not None:
            args, kwargs = last
            with torch.set_grad_enabled(mode[0]), torch.inference_mode(mode[1]):
                ref.steady_us = statistics.median(_samples_us(_synced(
                    lambda: target.fn(*args, **kwargs), _wait_for_device(args, kwargs)),
                    repeats))
    return ref


def _at(point: Point) -> str:
    return f"batch size {point.get(BATCH)}" if point.symbols == (BATCH,) else f"point {point}"


def _eager(call: Callable[[], Any], index: int, point: Point, what: str) -> Any:
    try:
        return call()
    except ProbeError:
        raise
    except Exception as exc:
        raise EagerFailure(
            f"{what} fails without torch.compile at call {index} ({_at(point)}): "
            f"{type(exc).__name__}: {_first_line(exc)}",
            "Fix the target or its inputs first: no strategy can be judged against a "
            "failing eager run. Pass --debug for the traceback.",
        ) from exc


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


def _wait_for_device(args: tuple, kwargs: dict | None = None) -> Callable[[], None] | None:
    """A synchronize for the accelerator the inputs live on, so timings include the kernels."""
    for arg in (*args, *(kwargs or {}).values()):
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


def _figureless(scenario: Scenario, target: LoadedTarget, name: str, points: tuple[Point, ...],
                strategy: Strategy, status: str, error: RunError) -> Run:
    return replace(figureless_run(target.name, name, batch_values(points, scenario.symbols),
                                  strategy.name, scenario.backend, status, error,
                                  description=strategy.description),
                   points=tuple(p.as_dict() for p in points), specializations=None,
                   graph_breaks=None)  # nothing ran: n/a, not "none"


def batch_values(points: tuple[Point, ...], symbols: tuple[str, ...]) -> tuple[int, ...]:
    """What ``sequence`` / ``batch_size`` hold: B, or the first symbol where there is no B."""
    symbol = BATCH if BATCH in symbols else symbols[0]
    return tuple(p.get(symbol) or 0 for p in points)


def probe(
    scenario: Scenario,
    target: LoadedTarget,
    sequence_name: str,
    points: tuple[Point, ...],
    strategy: Strategy,
    reference: EagerReference,
    trace_dir: str | None = None,
) -> Run:
    why = strategies_mod.missing_features(strategy, target_is_compiled=target.compiled is not None)
    if why is not None:
        return _figureless(scenario, target, sequence_name, points, strategy, "unsupported",
                           RunError("Unsupported", why, None))
    compat.reset_dynamo()
    collector = origins.Collector() if PROVENANCE else None
    break_mark = origins.graph_break_mark() if PROVENANCE else None
    acting = sizes.varying(points)
    trace_file: Callable[[], str | None] = lambda: None  # noqa: E731
    with contextlib.ExitStack() as stack:
        if trace_dir is not None:
            folder = Path(trace_dir, _safe(strategy.name))
            folder.mkdir(parents=True, exist_ok=True)
            trace_file = stack.enter_context(compat.structured_trace(str(folder)))
        try:
            compiled, graphs = _setup(stack, scenario, target, strategy, acting, points,
                                      collector)
        except Exception as exc:  # e.g. a bad compile kwarg or config value in the scenario
            return _figureless(scenario, target, sequence_name, points, strategy, "error",
                               describe_error(exc, None))
        if QUIET_TORCH_LOGS:
            stack.enter_context(compat.quiet_torch_logs())
        mark = strategies_mod.marker(strategy, acting)
        if mark is not None:  # marks live on the tensors: undo them, whatever the factory returns
            stack.callback(mark.restore)
        driver = _Driver(scenario, target, strategy, compiled, graphs, reference,
                         stack.enter_context(Recorder()), mark)
        driver.drive(points)
        entries = guards.all_entries(collector)
        steady = driver.steady_state()
    run = _summarize(driver, entries, steady, scenario, target, sequence_name, points,
                     strategy, reference, acting)
    if collector is not None:
        run = _provenance(run, collector, break_mark)
    written = trace_file()
    if written is None:
        return run
    named = Path(written).with_name(f"{_safe(sequence_name)}.log")
    Path(written).replace(named)  # one readable name per (strategy, sequence)
    return replace(run, trace_file=str(named))


def _safe(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in name)


def _setup(stack: contextlib.ExitStack, scenario: Scenario, target: LoadedTarget,
           strategy: Strategy, acting: tuple[str, ...], points: tuple[Point, ...],
           collector: origins.Collector | None = None
           ) -> tuple[Callable, Callable[[], int | None]]:
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
        if collector is not None:  # the user's backend is not ours: capture around any backend
            stack.enter_context(origins.capture_hook(collector.add))
    else:
        counter = CountingBackend(compat.resolve_backend(
            scenario.backend, scenario.backend_mode,
            dict(scenario.backend_options or {}) or None, strategy.dynamic), collector)
        compiled = torch.compile(target.fn, backend=counter, **kwargs)
        graphs = lambda: counter.graphs  # noqa: E731
    needs_sources = any(v == strategies_mod.BATCH_SOURCES for v in strategy.config.values())
    first = target.make_inputs(points[0]) if needs_sources and target.make_inputs else None
    stack.enter_context(strategies_mod.applied(
        strategy, strategies_mod.dim_sources(target.sources(acting, first))))
    return compiled, graphs


class _Driver:
    """Calls the compiled target through a sequence of points and classifies each call.

    Without a driver function: one call per point, with the inputs the scenario makes. With one:
    per point, ``driver(fn, **sizes)`` where ``fn`` is the compiled target behind a wrapper that
    marks, records and times each call the program makes.
    """

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
        self.last_inputs: Inputs | None = None
        #: (grad, inference mode) the last call ran under: a driver may call under no_grad, and
        #: the steady state must replay that call, not one that misses its cache entry
        self.last_mode: tuple[bool, bool] = (True, False)
        #: graphs made by the sequence itself, read before the steady state adds any
        self.sequence_graphs: int | None = None
        self.notes: list[str] = []
        self.guard_check_us: float | None = None
        self.timing: Timing | None = None
        self._graphs_seen = 0
        self._code = guards.frame_code(target.fn)
        #: whether guard checks on our reconstruction of the frame's locals can be trusted:
        #: settled at the first compile (the entry it just made must accept its own call)
        self._locals_ok: bool | None = None
        self._sync: Callable[[], None] | None = None  # set from the first call's inputs

    def _mark(self, args: tuple, kwargs: dict) -> None:
        if self.mark is not None:  # in eager code, right before the call (the vLLM placement)
            self.mark(args, kwargs, self.target.dims, self.target.param_names)

    def _call(self, args: tuple, kwargs: dict) -> Any:
        self._mark(args, kwargs)
        out = self.compiled(*args, **kwargs)
        if self._sync is not None:  # time the kernels, not only their launch
            self._sync()
        return out

    def drive(self, points: tuple[Point, ...]) -> None:
        for point_index, point in enumerate(points):
            if self.target.driver is None:
                assert self.target.make_inputs is not None
                args, kwargs = self.target.make_inputs(point)
                self._record(point_index, point, 0, args, kwargs,
                             self.reference.outputs[point])
            else:
                self._drive_point(point_index, point)
            if self.error is not None:
                break
        self.sequence_graphs = self.graphs()

    def _drive_point(self, point_index: int, point: Point) -> None:
        expected = self.reference.calls.get(point, [])
        step = [0]

        def fn(*args: Any, **kwargs: Any) -> Any:
            i = step[0]
            step[0] += 1
            out = self._record(point_index, point, i, args, kwargs,
                               expected[i] if i < len(expected) else _MISSING)
            if self.error is not None:
                raise _Stop()
            return out

        first = len(self.calls)
        try:
            result = self.target.driver(fn, **point.as_dict())
        except _Stop:
            return
        except Exception as exc:  # noqa: BLE001 - the program failed around our calls
            self.error = describe_error(exc, len(self.calls))
            return
        if step[0] != len(expected):
            self.notes.append(f"point {point}: the driver called the target {step[0]} times, "
                              f"{len(expected)} times in eager")
        # The program's own result is compared too; a difference lands on the point's last call.
        match = outputs_match(result, self.reference.outputs[point], self.scenario.rtol,
                              self.scenario.atol)
        if match is not True and len(self.calls) > first:
            last = self.calls[-1]
            self.calls[-1] = replace(last, outputs_match=False if match is False or
                                     last.outputs_match is False else None)

    def _record(self, point_index: int, point: Point, step: int, args: tuple, kwargs: dict,
                expected: Any) -> Any:
        index = len(self.calls)
        if index == 0:
            self._sync = _wait_for_device(args, kwargs)
        before, graphs_before = len(self.recorder), self.graphs()
        out = None
        try:
            start = time.perf_counter_ns()
            out = self._call(args, kwargs)
            latency: float | None = round((time.perf_counter_ns() - start) / 1000.0, 2)
        except Exception as exc:  # the strategy's failure is a finding, not a crash
            self.error = describe_error(exc, index)
        self.recorder.poll()
        new = [replace(e, call_index=index) for e in self.recorder.since(before)]
        self.events.extend(new)
        graphs = delta(self.graphs(), graphs_before)
        failed = sum(e.failed for e in new) if self.metrics_ok else None
        batch = point.get(BATCH) if BATCH in self.scenario.symbols else \
            point.get(self.scenario.symbols[0])
        where = dict(sizes=point.as_dict(), point_index=point_index, step=step)
        if self.error is not None:
            self.calls.append(Call(index, batch or 0, "error", None, None, graphs, failed,
                                   **where))
            return None
        match = None if expected is _MISSING else outputs_match(
            out, expected, self.scenario.rtol, self.scenario.atol)
        self.calls.append(Call(index, batch or 0, self._event(new, args, kwargs), latency, match,
                               graphs, failed, **where))
        self.last_inputs = (args, kwargs)
        self.last_mode = (torch.is_grad_enabled(), torch.is_inference_mode_enabled())
        return out

    def _served(self, args: tuple, kwargs: dict) -> Any:
        """The entry that serves these args; None if none does; False if that cannot be told."""
        f_locals = guards.frame_locals(self.target.fn, args, kwargs)
        if f_locals is None or self._locals_ok is False:
            return False
        return guards.serving_entry(self._code, f_locals)

    def _event(self, new: list[CompileEvent], args: tuple, kwargs: dict) -> str:
        if self.metrics_ok:
            if new:
                if self._locals_ok is None and any(not e.failed for e in new):
                    self._locals_ok = self._served(args, kwargs) not in (None, False)
                return "recompile" if any(e.recompile for e in new) else "compile"
            # No compile: a cache hit, unless no entry accepts the call and it ran eagerly
            # (e.g. past the recompile limit).
            if self._locals_ok:
                return "eager" if self._served(args, kwargs) is None else "hit"
            # Locals not trusted (or never settled): with no cache entry in any frame nothing
            # compiled can have run, e.g. under the eager_on_recompile stance from the start.
            return "eager" if guards.all_entries() == [] else "hit"
        # No metrics in this torch: a new backend graph is the only compile signal left.
        seen, self._graphs_seen = self._graphs_seen, self.graphs() or 0
        return "hit" if self._graphs_seen == seen else "compile" if not seen else "recompile"

    def steady_state(self) -> float | None:
        """Median µs/call of the last call repeated; compiles here are outside the counts."""
        if self.error is not None or self.last_inputs is None or not self.scenario.repeats:
            return None
        args, kwargs = self.last_inputs
        grad, inference = self.last_mode
        with torch.set_grad_enabled(grad), torch.inference_mode(inference):
            self._call(args, kwargs)  # untimed: a compile here must not pollute the median
            self.timing = Timing.of(_samples_us(lambda: self._call(args, kwargs),
                                                self.scenario.repeats))
            steady = self.timing.median_us
            entry = self._served(args, kwargs) if self._locals_ok else None
            f_locals = guards.frame_locals(self.target.fn, args, kwargs)
            if entry and f_locals is not None:
                before = (lambda: self._mark(args, kwargs)) if self.mark is not None else None
                cost = guards.check_cost_us(entry, f_locals, before)
                self.guard_check_us = None if cost is None else round(cost, 3)
        return steady


_MISSING = object()


class _Stop(BaseException):  # not Exception: a driver's own `except Exception` must not eat it
    """Unwinds a driver once the compiled target failed: the failure is already recorded."""


def _summarize(driver: _Driver, entries: list[guards.EntryInfo] | None, steady: float | None,
               scenario: Scenario, target: LoadedTarget, sequence_name: str,
               points: tuple[Point, ...], strategy: Strategy, reference: EagerReference,
               acting: tuple[str, ...]) -> Run:
    events = [_with_symbol(e, target, driver) for e in driver.events]
    calls = driver.calls
    own = _own_frame_newest(events)
    entry = next((e for e in entries or () if own is not None and e.compile_id == own.compile_id),
                 None)
    made_by = {e.compile_id: e for e in events if not e.failed}
    compared = [c.outputs_match for c in calls if c.event != "error"]
    times = [e.compile_time_ms for e in events]
    timing = driver.timing
    marked, notes = _marking(driver, strategy, target, acting)
    sequence = batch_values(points, scenario.symbols)
    return Run(
        target=target.name,
        sequence_name=sequence_name,
        sequence=tuple(sequence),
        strategy=strategy.name,
        backend=scenario.backend,
        status="error" if driver.error else "ok",
        error=driver.error,
        graphs=driver.sequence_graphs,
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
        entries=tuple(_cache_entry(e, made_by.get(e.compile_id), calls)
                      for e in sorted(entries or (), key=_compile_order)),
        failed_compiles=sum(e.failed for e in events) if driver.metrics_ok else None,
        guard_compile_id=own.compile_id if own else None,
        steady_state_min_us=timing.min_us if timing else None,
        steady_state_p90_us=timing.p90_us if timing else None,
        steady_state_noisy=analysis.too_noisy(timing.min_us, timing.median_us) if timing else None,
        marked_dims=marked,
        notes=(*notes, *driver.notes),
        points=tuple(p.as_dict() for p in points),
    )


def _provenance(run: Run, collector: origins.Collector, break_mark: int | None) -> Run:
    """The user lines behind the run: each failing guard of each recompile (and the kind that
    only its origin tells: user_specialization), the specializations and the graph breaks."""
    found = origins.graph_breaks(break_mark)
    breaks = None if found is None else tuple(
        {"reason": b.reason, "origin": None if b.origin is None else b.origin.to_dict(),
         "count": b.count} for b in found)
    specializations: list[dict] | None = []
    seen: set[tuple] = set()
    known = 0
    for event in run.compile_events:
        compiled = collector.get(event.compile_id) if not event.failed else None
        if compiled is None:
            continue
        known += 1
        for spec in compiled.specializations:
            data = spec.to_dict()
            origin = data["origin"]
            key = (spec.source, spec.value, None if origin is None else
                   (origin["file"], origin["line"]))
            if key not in seen:
                seen.add(key)
                specializations.append({"source": data["source"], "value": data["value"],
                                        "reason": data["reason"], "origin": origin,
                                        "compile_id": event.compile_id})
    if not known and run.compile_events:
        specializations = None  # no compile could be read: n/a, not "none"
    events = tuple(_reason_origins(e, run.entries, collector) for e in run.compile_events)
    return replace(run, compile_events=events, graph_breaks=breaks,
                   specializations=None if specializations is None else tuple(specializations))


def _reason_origins(event: CompileEvent, entries: tuple[CacheEntry, ...],
                    collector: origins.Collector) -> CompileEvent:
    """reason_origins: one origin (or None) per failing guard line of the event's reason."""
    lines = reasons_mod.failure_lines(event.reason)
    if not lines:
        return event
    found: list[dict | None] = []
    for line in lines:
        compile_id, text = origins.reason_guard(line)
        detail = reasons_mod.parse_line(line)
        origin = None
        try:
            if detail.what == "size" and detail.source is not None:
                # a dim the user's code forced to a constant in that compile (range(x.size(0))
                # under dynamic=True) is that line's doing; otherwise the dim was static by
                # design: nothing created the guard, show where the tensor was first used
                compiled = collector.get(compile_id)
                size = f"{detail.source}.size()[{detail.dim}]"
                spec = next((sp for sp in (compiled.specializations if compiled else ())
                             if size in sp.sources and sp.origin is not None), None)
                if spec is not None:
                    origin = spec.origin.to_dict()
                else:
                    entry = next((e for e in entries if e.compile_id == compile_id), None)
                    guard = next((g for g in entry.guards if g.kind == "TENSOR_MATCH" and
                                  g.source == detail.source), None) if entry else None
                    origin = guard.origin if guard else None
            elif detail.what in ("shape-env expression", "value"):
                compiled = collector.get(compile_id)
                attributed = compiled.attribute(text, _first_uses(entries, compile_id)) \
                    if compiled is not None else None
                got = attributed.origin if attributed is not None else None
                if got is not None and not attributed.sources:
                    # no symbol behind it (a static int's constant guard): Dynamo's comment
                    # names where the value was used, not a line that created a guard
                    got = replace(got, role="first_use")
                origin = None if got is None else got.to_dict()
        except Exception:  # noqa: BLE001 - private structures; unreadable means n/a
            origin = None
        found.append(origin)
    first = found[0]
    refined = reasons_mod.refine(reasons_mod.parse_line(lines[0]),
                                 first.get("role") if first else None)
    if refined is not None and refined.kind != event.reason_kind and \
            event.reason_kind in reasons_mod.KINDS and refined.kind == "user_specialization":
        detail = {**(event.reason_detail or {}), "kind": refined.kind}
        event = replace(event, reason_kind=refined.kind, reason_detail=detail)
    return replace(event, reason_origins=tuple(found))


def _first_uses(entries: tuple[CacheEntry, ...], compile_id: str | None
                ) -> dict[str, origins.Origin]:
    """Tensor source -> its first use, from the entry's TENSOR_MATCH lines (duck sizing's line)."""
    out: dict[str, origins.Origin] = {}
    for entry in entries:
        if entry.compile_id != compile_id:
            continue
        for g in entry.guards:
            if g.kind == "TENSOR_MATCH" and g.source and g.origin:
                out.setdefault(g.source, origins.Origin(**g.origin))
    return out


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


def _marking(driver: _Driver, strategy: Strategy, target: LoadedTarget,
             acting: tuple[str, ...]) -> tuple[int | None, tuple[str, ...]]:
    """(marked_dims, notes): how many dims the strategy marked or named, and a note when a
    strategy meant to mark had nothing to mark (e.g. batch_dims: {}, or a list of tensors)."""
    by_sources = any(v == strategies_mod.BATCH_SOURCES for v in strategy.config.values())
    what = ", ".join(acting) or "no symbol"
    why = f"no dim of {what} is a tensor dim (dims are empty or name non-tensor arguments)"
    if driver.mark is not None:
        marked = len(driver.mark.marked)
        if marked == 0 and driver.calls:
            return 0, (f"nothing to mark: {why}; ran without marks",)
        return marked, ()
    if by_sources:
        named = target.sources(acting, driver.last_inputs)
        if not named:
            return 0, (f"nothing to name: {why}; set no source",)
        return len(named), ()
    return None, ()


def _with_symbol(event: CompileEvent, target: LoadedTarget, driver: _Driver) -> CompileEvent:
    """reason_detail names the size symbol whose dim failed, where the source maps to one."""
    detail = event.reason_detail
    if not detail or detail.get("dim") is None:
        return event
    symbol = target.symbol_of(detail.get("source"), detail.get("dim"), driver.last_inputs)
    return replace(event, reason_detail={**detail, "symbol": symbol})


def _compile_order(entry: guards.EntryInfo) -> tuple[int, ...]:
    try:
        return tuple(int(p) for p in (entry.compile_id or "").split("/"))
    except ValueError:
        return (1 << 30,)


def _cache_entry(info: guards.EntryInfo, event: CompileEvent | None,
                 calls: list[Call]) -> CacheEntry:
    call = event.call_index if event else None
    made = calls[call] if call is not None and call < len(calls) else None
    return CacheEntry(
        function=info.function, filename=info.filename, line=info.line,
        compile_id=info.compile_id, call_index=call,
        batch_size=made.batch_size if made else None,
        guard_count=event.guard_count if event else None,
        shape_env_guard_count=event.shape_env_guard_count if event else None,
        leaf_guard_count=info.leaf_guard_count, guards=info.guards,
        sizes=made.sizes if made else None)
