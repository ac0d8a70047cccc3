"""One (target, sequence, strategy) probe inside a Recorder -> a ``Run`` record (imports torch).

Per run: fresh Dynamo state, the strategy's config and stance, a counting backend wrapping the real
one, marks re-applied in eager code before every call, and the recorder listening. Per call: the
event, the wall latency and the comparison with eager. After the sequence: the cache entries and
their guard trees, then the steady-state cost (the last point re-run as the program runs it).
"""

from __future__ import annotations

import contextlib
import os
import warnings
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path

import torch

from ..cover.decide import Request, decide
from ..provenance.capture import Collector, capture_hook
from ..provenance.graph_breaks import graph_break_mark
from ..recording.recorder import Recorder, delta
from ..records.coverage import Coverage
from ..records.environment import CLEAN_ENV
from ..records.run import Run, RunError, figureless_run
from ..scenario.model import Scenario, coverage_ranges
from ..sizes.points import Point, varying
from ..sizes.ranges import format_ranges
from ..strategies.apply import (
    applied,
    compile_kwargs,
    declared_ranges,
    dim_sources,
    inherited_overrides,
    marker,
    missing_features,
    patched,
    shapes_spec,
)
from ..strategies.model import BATCH_SOURCES, Strategy, symbol_ranges
from ..targets.loader import LoadedTarget
from ..torch_compat.dynamo import isolated_caches, reset_dynamo, resolve_backend
from ..torch_compat.logs import quiet_torch_logs, structured_trace
from ..torch_compat.metrics import unique_graphs
from ..torch_compat.settings import defaults_restored
from .backend import CountingBackend
from .driver import Driver
from .eager import EagerReference
from .entries import EntryInfo, all_entries
from .failures import describe_error
from .summary import Lines, batch_values, summarize


def warm_up(backend: str, mode: str | None = None, options: dict | None = None) -> None:
    """One throw-away compile, so the first strategy does not pay the process's first compile."""

    def _warm(x: torch.Tensor) -> torch.Tensor:
        return (x + 1).sum()

    reset_dynamo()
    with isolated_caches(backend):
        fn = torch.compile(_warm, backend=resolve_backend(backend, mode, options, None))
        fn(torch.ones(3))
    reset_dynamo()


def _figureless(
    scenario: Scenario,
    target: LoadedTarget,
    name: str,
    points: tuple[Point, ...],
    strategy: Strategy,
    status: str,
    error: RunError,
) -> Run:
    return replace(
        figureless_run(
            target.name,
            name,
            batch_values(points, scenario.symbols),
            strategy.name,
            scenario.backend,
            status,
            error,
            description=strategy.description,
        ),
        points=tuple(p.to_dict() for p in points),
        specializations=None,
        graph_breaks=None,
        shared_code=None,
    )  # nothing ran: n/a, not "none"


def probe(
    scenario: Scenario,
    target: LoadedTarget,
    sequence_name: str,
    points: tuple[Point, ...],
    strategy: Strategy,
    reference: EagerReference,
    trace_dir: str | None = None,
    quiet: bool = True,
    cap: int | None = None,
) -> Run:
    """``quiet``: torch's own error logs (guard creation failures, ...) off for the run: the
    report already carries what they say (``--debug`` keeps them). ``cap``: stop the sequence
    at the call whose compiles pass this many (the run's ``cut_after``), untimed and without
    coverage: a caller that only needs to know the run compiles more."""
    why = missing_features(strategy, target_is_compiled=target.compiled is not None)
    if why is not None:
        return _figureless(
            scenario,
            target,
            sequence_name,
            points,
            strategy,
            "unsupported",
            RunError("Unsupported", why, None),
        )
    reset_dynamo()
    collector = Collector()
    break_mark = graph_break_mark()
    acting = varying(points)
    trace_file: Callable[[], str | None] = lambda: None  # noqa: E731
    with contextlib.ExitStack() as stack:
        if trace_dir is not None:
            folder = Path(trace_dir, _safe(strategy.name))
            folder.mkdir(parents=True, exist_ok=True)
            trace_file = stack.enter_context(structured_trace(str(folder)))
        if os.environ.get(CLEAN_ENV):  # --clean-env: no inherited compile setting either
            stack.enter_context(defaults_restored())
        # before the strategy's own patches: what it inherits
        overridden = inherited_overrides(
            strategy, lambda: dim_sources_of(target, acting, points[0]), os.environ
        )
        try:
            compiled, graphs = _setup(stack, scenario, target, strategy, acting, points, collector)
        except Exception as exc:  # e.g. a bad compile kwarg or config value in the scenario
            return _figureless(
                scenario,
                target,
                sequence_name,
                points,
                strategy,
                "error",
                describe_error(exc, None),
            )
        if quiet:
            stack.enter_context(quiet_torch_logs())
        mark = marker(strategy, acting, symbol_ranges(scenario.points))
        if mark is not None:  # marks live on the tensors: undo them, whatever the factory returns
            stack.callback(mark.restore)
        driver = Driver(
            scenario,
            target,
            strategy,
            compiled,
            graphs,
            reference,
            stack.enter_context(Recorder()),
            mark,
            cap,
        )
        driver.drive(points)
        entries = all_entries(collector)
        steady = driver.steady_state(points) if driver.cut is None else None
        ranges = coverage_ranges(scenario)
        coverage = (
            None
            if ranges is None or driver.cut is not None
            else covered(
                scenario, target, strategy, points, acting, driver, entries, ranges, collector
            )
        )
    written = trace_file()
    if written is not None:
        named = Path(written).with_name(f"{_safe(sequence_name)}.log")
        Path(written).replace(named)  # one readable name per (strategy, sequence)
        written = str(named)
    return summarize(
        driver,
        entries,
        steady,
        scenario,
        target,
        sequence_name,
        points,
        strategy,
        reference,
        acting,
        Lines(collector, break_mark),
        inherited=(*overridden, *reference.notes),
        trace_file=written,
        coverage=coverage,
    )


def covered(
    scenario: Scenario,
    target: LoadedTarget,
    strategy: Strategy,
    points: tuple[Point, ...],
    acting: tuple[str, ...],
    driver: Driver,
    entries: list[EntryInfo] | None,
    ranges: dict[str, tuple[int, int]],
    collector: Collector | None = None,
) -> Coverage:
    """The range decided from the entries the sequence left, before they go."""
    if driver.last_inputs is None:
        why = "the sequence made no call that succeeded" if driver.error else "no call was made"
        return Coverage(ranges=ranges, method=None, scope=None, proved=False, why_na=why)
    factory = target.make_inputs
    # the sizes of the call the template is: the last call that succeeded
    base = next(
        (dict(c.sizes) for c in reversed(driver.calls) if c.event != "error" and c.sizes),
        points[-1].to_dict(),
    )
    return decide(
        Request(
            target=target,
            ranges=ranges,
            template=driver.last_inputs,
            base=base,
            guard_lines=[line for e in entries or () for line in e.guards],
            declared=declared_ranges(strategy, acting, symbol_ranges(scenario.points)),
            call=driver.call if factory is not None and target.driver is None else None,
            real_inputs=(
                None
                if factory is None or target.driver is not None
                else lambda sizes: factory(Point.of(sizes, scenario.symbols))
            ),
            seen=[p.to_dict() for p in points],
            runtime_asserts=None if collector is None else collector.runtime_asserts,
            recompile_limit={**scenario.compile, **strategy.compile}.get("recompile_limit"),
            notes=_widened(scenario, ranges),
            varying=None if factory is None else _varying(factory, scenario, points, ranges),
        )
    )


#: the largest end of a range whose inputs are built to compare the factory's other arguments
_BUILT_UP_TO = 4096


def _varying(
    factory: Callable[[Point], tuple[tuple, dict]],
    scenario: Scenario,
    points: tuple[Point, ...],
    ranges: dict[str, tuple[int, int]],
) -> str | None:
    """Which non-tensor argument the factory makes differently at other sizes (an int derived
    from B), said as "argument 1: 3 at B = 8, 1 at B = 0"; None where none does. The guards are
    asked with the last call's values of those, so they are not the same at every size."""
    last = points[-1].to_dict()
    asked = [p.to_dict() for p in points]
    # one symbol at a time at its range's ends, the others as the last call had them: inputs
    # grow along one dim only
    asked += [
        {**last, symbol: end}
        for symbol, ends in ranges.items()
        for end in ends
        if end <= _BUILT_UP_TO
    ]
    seen: dict[str, tuple[object, dict[str, int]]] = {}
    for sizes in asked:
        try:
            with warnings.catch_warnings():  # the run has said what its inputs warn of
                warnings.simplefilter("ignore")
                args, kwargs = factory(Point.of(sizes, scenario.symbols))
        except Exception:  # noqa: BLE001 - a size the factory cannot make says nothing here
            continue
        values = [(f"argument {i}", v) for i, v in enumerate(args)]
        values += [(f"{k}=", v) for k, v in kwargs.items()]
        for name, value in _scalars(values):
            first = seen.setdefault(name, (value, sizes))
            if first[0] != value:
                return f"{name}: {first[0]!r} at {_at(first[1])}, {value!r} at {_at(sizes)}"
    return None


def _scalars(values: list[tuple[str, object]], depth: int = 4) -> Iterator[tuple[str, object]]:
    """The ints, floats, bools and strings among ``values``, in lists, tuples and dicts too
    (``argument 1[0]``, ``config=['steps']``), a few levels and items deep."""
    for name, value in values:
        if isinstance(value, (bool, int, float, str)):
            yield name, value
        elif depth and isinstance(value, (list, tuple)):
            yield from _scalars([(f"{name}[{i}]", v) for i, v in enumerate(value[:64])], depth - 1)
        elif depth and isinstance(value, dict):
            items = list(value.items())[:64]
            yield from _scalars([(f"{name}[{k!r}]", v) for k, v in items], depth - 1)


def _at(sizes: dict[str, int]) -> str:
    return ", ".join(f"{k} = {v}" for k, v in sizes.items())


def _widened(scenario: Scenario, ranges: dict[str, tuple[int, int]]) -> tuple[str, ...]:
    """A note where the range decided is wider than the one asked (a budget's range)."""
    asked = scenario.coverage
    if not asked or dict(asked) == ranges:
        return ()
    return (
        f"asked {format_ranges(dict(asked))}, decided {format_ranges(ranges)}: widened to "
        f"every no_recompile_in budget's range, so each budget is judged on what was decided",
    )


def dim_sources_of(
    target: LoadedTarget, acting: tuple[str, ...], point: Point
) -> list[tuple[str, int]]:
    """(source, dim) of the acting symbols' dims; [] where they cannot be named."""
    try:
        inputs = target.make_inputs(point) if target.make_inputs else None
        return target.sources(acting, inputs)
    except Exception:  # noqa: BLE001 - naming dims is advisory here: no note, not a failed run
        return []


def _safe(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in name)


def _setup(
    stack: contextlib.ExitStack,
    scenario: Scenario,
    target: LoadedTarget,
    strategy: Strategy,
    acting: tuple[str, ...],
    points: tuple[Point, ...],
    collector: Collector | None = None,
) -> tuple[Callable, Callable[[], int | None]]:
    """Enter the strategy's state; return the callable to drive and a graph counter."""
    kwargs, extra_config = compile_kwargs(strategy, scenario.compile)
    stack.enter_context(isolated_caches(scenario.backend))
    for dotted, value in extra_config.items():
        stack.enter_context(patched(dotted, value))
    if strategy.as_is:
        # The user's own backend: Dynamo's unique_graphs counter stands in for ours.
        before = unique_graphs()
        compiled: Callable = target.compiled  # type: ignore[assignment]
        graphs: Callable[[], int | None] = lambda: delta(unique_graphs(), before)  # noqa
        if collector is not None:  # the user's backend is not ours: capture around any backend
            stack.enter_context(capture_hook(collector.add))
    else:
        counter = CountingBackend(
            resolve_backend(
                scenario.backend,
                scenario.backend_mode,
                dict(scenario.backend_options or {}) or None,
                strategy.dynamic,
            ),
            collector,
        )
        if strategy.shapes_spec:
            kwargs.update(
                shapes_spec(
                    target.dims,
                    acting,
                    target.make_inputs(points[0]) if target.make_inputs else None,
                    target.param_names,
                    symbol_ranges(scenario.points),
                )
            )
        compiled = torch.compile(target.fn, backend=counter, **kwargs)
        graphs = lambda: counter.graphs  # noqa: E731
    needs_sources = any(v == BATCH_SOURCES for v in strategy.config.values())
    first = target.make_inputs(points[0]) if needs_sources and target.make_inputs else None
    stack.enter_context(applied(strategy, dim_sources(target.sources(acting, first))))
    return compiled, graphs
