"""Drives the compiled target through a sequence of points and classifies each call.

Without a driver function: one call per point, with the inputs the scenario makes. With one: per
point, ``driver(fn, **sizes, **driver_options)`` where ``fn`` is the compiled target behind a
wrapper that marks, records and times each call the program makes.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from ..recording.recorder import Recorder, delta
from ..records.run import Call, CompileEvent, RunError
from ..scenario.model import Scenario
from ..sizes.points import BATCH, Point
from ..strategies.apply import Marker
from ..strategies.model import Strategy
from ..targets.frames import frame_code, frame_locals
from ..targets.inputs import Inputs
from ..targets.loader import LoadedTarget
from ..torch_compat.metrics import metrics_available
from . import entries
from .compare import Comparison, compare
from .eager import EagerReference
from .failures import describe_error, first_line
from .stand_in import dressed_as
from .timing import Timing, wait_for_device


class Driver:
    """One run's calls: their events, latencies and outputs, then the steady state."""

    def __init__(
        self,
        scenario: Scenario,
        target: LoadedTarget,
        strategy: Strategy,
        compiled: Callable,
        graphs: Callable[[], int | None],
        reference: EagerReference,
        recorder: Recorder,
        mark: Marker | None,
        cap: int | None = None,
    ) -> None:
        self.scenario, self.target, self.compiled = scenario, target, compiled
        self.graphs, self.reference, self.recorder = graphs, reference, recorder
        self.mark = mark
        #: stop the sequence once its compiles pass this many (``cut``); None: run it all
        self.cap = cap
        #: the compiles at which the cap stopped the sequence; None: not stopped
        self.cut: int | None = None
        self.options = strategy.driver_options
        self.metrics_ok = metrics_available()
        self.calls: list[Call] = []
        self.events: list[CompileEvent] = []
        self.error: RunError | None = None
        self.last_inputs: Inputs | None = None
        #: graphs made by the sequence itself, read before the steady state adds any
        self.sequence_graphs: int | None = None
        self.notes: list[str] = []
        self.guard_check_us: float | None = None
        self.timing: Timing | None = None
        #: compiles while the last point was re-run for timing; None: not timed
        self.timing_compiles: int | None = None
        self._graphs_seen = 0
        self._code = frame_code(target.fn)
        #: whether guard checks on our reconstruction of the frame's locals can be trusted:
        #: settled at the first compile (the entry it just made must accept its own call)
        self._locals_ok: bool | None = None
        self._sync: Callable[[], None] | None = None  # set from the first call's inputs

    def _mark(self, args: tuple, kwargs: dict) -> None:
        if self.mark is not None:  # in eager code, right before the call (the vLLM placement)
            self.mark(args, kwargs, self.target.dims, self.target.param_names)

    def call(self, args: tuple, kwargs: dict) -> Any:
        """One call of the compiled target as the sequence makes it (marks applied), recording
        nothing: for the coverage sampler's real calls."""
        self._mark(args, kwargs)
        return self.compiled(*args, **kwargs)

    def _call(self, args: tuple, kwargs: dict) -> Any:
        out = self.call(args, kwargs)
        if self._sync is not None:  # time the kernels, not only their launch
            self._sync()
        return out

    def drive(self, points: tuple[Point, ...]) -> None:
        for point_index, point in enumerate(points):
            if self.target.driver is None:
                assert self.target.make_inputs is not None
                args, kwargs = self.target.make_inputs(point)
                self._record(point_index, point, 0, args, kwargs, self.reference.outputs[point])
            else:
                self._drive_point(point_index, point)
            if self.error is not None or self.cut is not None:
                break
        self.sequence_graphs = self.graphs()

    def _drive_point(self, point_index: int, point: Point) -> None:
        expected = self.reference.calls.get(point, [])
        step = [0]

        def fn(*args: Any, **kwargs: Any) -> Any:
            i = step[0]
            step[0] += 1
            out = self._record(
                point_index, point, i, args, kwargs, expected[i] if i < len(expected) else _MISSING
            )
            if self.error is not None or self.cut is not None:
                raise _Stop()
            return out

        dressed_as(fn, self.target.fn)
        first = len(self.calls)
        try:
            result = self.target.drive(fn, point, self.options)
        except _Stop:
            return
        except Exception as exc:  # noqa: BLE001 - the program failed around our calls
            self.error = describe_error(exc, len(self.calls))
            return
        if step[0] != len(expected):
            self.notes.append(
                f"point {point}: the driver called the target {step[0]} times, "
                f"{len(expected)} times in eager"
            )
        # The program's own result is compared too; a difference lands on the point's last call.
        outcome = compare(
            result,
            self.reference.result(point_index, point),
            self.scenario.rtol,
            self.scenario.atol,
        )
        if outcome.match is not True and len(self.calls) > first:
            last = self.calls[-1]
            if last.outputs_match is not False:  # the call's own difference says more
                self.calls[-1] = replace(
                    last,
                    outputs_match=outcome.match,
                    outputs_detail=f"the driver's result: {outcome.detail}",
                )

    def _record(
        self, point_index: int, point: Point, step: int, args: tuple, kwargs: dict, expected: Any
    ) -> Any:
        index = len(self.calls)
        if index == 0:
            self._sync = wait_for_device(args, kwargs)
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
        if self.cap is not None and self.metrics_ok and len(self.events) > self.cap:
            self.cut = len(self.events)
        graphs = delta(self.graphs(), graphs_before)
        failed = sum(e.failed for e in new) if self.metrics_ok else None
        batch = (
            point.get(BATCH)
            if BATCH in self.scenario.symbols
            else point.get(self.scenario.symbols[0])
        )
        sizes = point.to_dict()
        if self.error is not None:
            self.calls.append(
                Call(
                    index,
                    batch or 0,
                    "error",
                    None,
                    None,
                    graphs,
                    failed,
                    sizes=sizes,
                    point_index=point_index,
                    step=step,
                )
            )
            return None
        outcome = (
            Comparison(None, "not compared: eager made fewer calls at this point")
            if expected is _MISSING
            else compare(out, expected, self.scenario.rtol, self.scenario.atol)
        )
        self.calls.append(
            Call(
                index,
                batch or 0,
                self._event(new, args, kwargs),
                latency,
                outcome.match,
                graphs,
                failed,
                sizes=sizes,
                point_index=point_index,
                step=step,
                outputs_detail=outcome.detail,
            )
        )
        self.last_inputs = (args, kwargs)
        return out

    def _served(self, args: tuple, kwargs: dict) -> Any:
        """The entry that serves these args; None if none does; False if that cannot be told."""
        f_locals = frame_locals(self.target.fn, args, kwargs)
        if f_locals is None or self._locals_ok is False:
            return False
        return entries.serving_entry(self._code, f_locals)

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
            return "eager" if entries.all_entries() == [] else "hit"
        # No metrics in this torch: a new backend graph is the only compile signal left.
        seen, self._graphs_seen = self._graphs_seen, self.graphs() or 0
        return "hit" if self._graphs_seen == seen else "compile" if not seen else "recompile"

    def steady_state(self, points: tuple[Point, ...]) -> float | None:
        """Median µs/call of the last point re-run ``repeats`` times as the program runs it:
        through the driver when there is one (its grad, inference and autocast state, its fresh
        inputs), else with fresh inputs from the factory. A compile while timing means the
        figure is not a steady state: it is counted (``timing_compiles``) and the figure
        dropped, with the reasons in a note."""
        if self.error is not None or self.last_inputs is None or not self.scenario.repeats:
            return None
        point = points[-1]
        before = len(self.recorder)
        samples: list[float] = []
        try:
            if self.target.driver is not None:
                self._rerun_driver(point, samples)
            else:
                assert self.target.make_inputs is not None
                for _ in range(self.scenario.repeats):
                    args, kwargs = self.target.make_inputs(point)
                    start = time.perf_counter_ns()
                    self._call(args, kwargs)
                    samples.append((time.perf_counter_ns() - start) / 1000.0)
        except Exception as exc:  # noqa: BLE001 - the sequence passed; say why timing did not
            self.notes.append(
                f"timing: re-running the last point failed ({type(exc).__name__}: "
                f"{first_line(exc)}); µs/call n/a"
            )
            samples.clear()
        self.recorder.poll()
        during = self.recorder.since(before)
        self.timing_compiles = len(during)
        if during:
            reasons = sorted({first_line(e.reason) for e in during if e.reason})
            self.notes.append(
                f"timing: {len(during)} compile(s) while re-running the last point "
                f"{point}, so it is not a steady state and µs/call is n/a"
                + (f" ({'; '.join(reasons[:3])})" if reasons else "")
            )
            return None
        if not samples:
            if self.target.driver is not None and not any("timing:" in n for n in self.notes):
                self.notes.append(
                    "timing: the driver did not call the target when the last point was re-run; "
                    "µs/call n/a"
                )
            return None
        self.timing = Timing.of(samples)
        args, kwargs = self.last_inputs
        entry = self._served(args, kwargs) if self._locals_ok else None
        f_locals = frame_locals(self.target.fn, args, kwargs)
        if entry and f_locals is not None:
            mark = (lambda: self._mark(args, kwargs)) if self.mark is not None else None
            cost = entries.check_cost_us(entry, f_locals, mark)
            self.guard_check_us = None if cost is None else round(cost, 3)
        return self.timing.median_us

    def _rerun_driver(self, point: Point, samples: list[float]) -> None:
        def fn(*args: Any, **kwargs: Any) -> Any:
            start = time.perf_counter_ns()
            out = self._call(args, kwargs)
            samples.append((time.perf_counter_ns() - start) / 1000.0)
            return out

        dressed_as(fn, self.target.fn)
        for _ in range(self.scenario.repeats):
            self.target.drive(fn, point, self.options)


_MISSING = object()


class _Stop(BaseException):  # not Exception: a driver's own `except Exception` must not eat it
    """Unwinds a driver once the compiled target failed (the failure is already recorded) or
    its compiles passed the cap."""
