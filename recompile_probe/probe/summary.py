"""A driven run summarised into its ``Run`` record: figures, events, entries and the user lines
behind them."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from ..analysis.shared import shared_code
from ..analysis.verdicts import too_noisy
from ..provenance.attribution import LiveEvidence, reason_origins, refined
from ..provenance.capture import Collector
from ..provenance.graph_breaks import graph_breaks
from ..provenance.origin import with_stacks
from ..reasons.text import failure_lines
from ..records.compile_ids import frame_of, sort_key
from ..records.coverage import Coverage
from ..records.origin import GraphBreakSite, Origin, RunSpecialization
from ..records.run import ArgumentDim, CacheEntry, Call, CompileEvent, Run
from ..scenario.model import Scenario
from ..sizes.points import BATCH, Point
from ..strategies.model import BATCH_SOURCES, Strategy
from ..targets.loader import LoadedTarget
from .driver import Driver
from .eager import EagerReference
from .entries import EntryInfo


def batch_values(points: tuple[Point, ...], symbols: tuple[str, ...]) -> tuple[int, ...]:
    """What ``sequence`` / ``batch_size`` hold: B, or the first symbol where there is no B."""
    symbol = BATCH if BATCH in symbols else symbols[0]
    return tuple(p.get(symbol) or 0 for p in points)


def summarize(
    driver: Driver,
    entries: list[EntryInfo] | None,
    steady: float | None,
    scenario: Scenario,
    target: LoadedTarget,
    sequence_name: str,
    points: tuple[Point, ...],
    strategy: Strategy,
    reference: EagerReference,
    acting: tuple[str, ...],
    lines: Lines,
    *,
    inherited: tuple[str, ...] = (),
    trace_file: str | None = None,
    coverage: Coverage | None = None,
) -> Run:
    """The run's record, built once. ``inherited``: notes on what the strategy inherits from the
    environment (they come first); ``trace_file``: its structured trace (run --trace-dir)."""
    driven = tuple(_with_symbol(e, target, driver) for e in driver.events)
    calls = driver.calls
    own = _own_frame_newest(list(driven))
    entry = next(
        (e for e in entries or () if own is not None and e.compile_id == own.compile_id), None
    )
    made_by = {e.compile_id: e for e in driven if not e.failed}
    cache_entries = tuple(
        _cache_entry(e, made_by.get(e.compile_id), calls)
        for e in sorted(entries or (), key=lambda e: sort_key(e.compile_id))
    )
    events, breaks, specializations = _provenance(driven, cache_entries, lines)
    closures_seen = any(e.closure_functions is not None for e in events)
    compared = [c.outputs_match for c in calls if c.event != "error"]
    times = [e.compile_time_ms for e in events]
    known_times = [t for t in times if t is not None]
    timing = driver.timing
    marked, notes, no_effect = _marking(driver, strategy, target, acting, entries, events)
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
        compile_time_ms=None if len(known_times) < len(times) else round(sum(known_times), 3),
        # a known difference is a difference, whatever could not be compared beside it
        outputs_match=(
            False if False in compared else None if not compared or None in compared else True
        ),
        calls=tuple(calls),
        compile_events=tuple(events),
        steady_state_us=steady,
        eager_us=None if reference.steady_us is None else round(reference.steady_us, 2),
        eager_min_us=None if reference.steady_min_us is None else round(reference.steady_min_us, 2),
        eager_noisy=too_noisy(reference.steady_min_us, reference.steady_us),
        coverage=coverage,
        strategy_description=strategy.description,
        guard_check_us=driver.guard_check_us,
        guard_latency_us=own.guard_latency_us if own else None,
        entries=cache_entries,
        failed_compiles=sum(e.failed for e in events) if driver.metrics_ok else None,
        guard_compile_id=own.compile_id if own else None,
        steady_state_min_us=timing.min_us if timing else None,
        steady_state_p90_us=timing.p90_us if timing else None,
        steady_state_noisy=too_noisy(timing.min_us, timing.median_us) if timing else None,
        timing_compiles=driver.timing_compiles,
        outputs_detail=next(
            (c.outputs_detail for c in calls if c.event != "error" and c.outputs_match is False),
            next(
                (c.outputs_detail for c in calls if c.event != "error" and c.outputs_match is None),
                None,
            ),
        ),
        marked_dims=marked,
        no_effect=no_effect,
        notes=(*inherited, *notes, *_own_frame_notes(driven, own), *driver.notes),
        points=tuple(p.to_dict() for p in points),
        argument_dims=tuple(
            ArgumentDim(source=source, dim=dim, symbol=symbol)
            for source, dim, symbol in target.dim_sources()
        ),
        param_names=tuple(target.param_names),
        specializations=specializations,
        graph_breaks=breaks,
        shared_code=shared_code(events) if closures_seen or not events else None,
        trace_file=trace_file,
        cut_after=driver.cut,
    )


@dataclass(frozen=True)
class Lines:
    """Where the user lines of a run are read: the compiles' captures, and Dynamo's graph-break
    list from the mark taken before the run."""

    collector: Collector
    break_mark: int | None


def _provenance(
    driven: tuple[CompileEvent, ...], entries: tuple[CacheEntry, ...], lines: Lines
) -> tuple[
    tuple[CompileEvent, ...],
    tuple[GraphBreakSite, ...] | None,
    tuple[RunSpecialization, ...] | None,
]:
    """The user lines behind the run: (its events with each failing guard's origin, and the
    kind that only its origin tells: user_specialization; its graph breaks; its
    specializations)."""
    collector = lines.collector
    found = graph_breaks(lines.break_mark)
    breaks = None if found is None else tuple(found)
    collected: list[RunSpecialization] = []
    seen: set[tuple] = set()
    known = 0
    for event in driven:
        # a failed compile's ShapeEnv still holds what it specialized: a constraint violation
        # is raised because the user's code specialized a marked dim
        compiled = collector.get(event.compile_id) if not event.failed or event.graphs else None
        if compiled is None:
            continue
        known += 1
        for spec in compiled.specializations:
            origin = spec.origin
            key = (spec.source, spec.value, None if origin is None else (origin.file, origin.line))
            if key not in seen:
                seen.add(key)
                collected.append(
                    RunSpecialization(
                        spec.source, spec.value, spec.reason, origin, event.compile_id
                    )
                )
    # no compile could be read: n/a, not "none"
    specializations = None if not known and driven else tuple(collected)
    evidence = LiveEvidence(collector.get, lambda cid: _first_uses(entries, cid))
    events = tuple(_reason_origins(e, evidence) for e in driven)
    return events, breaks, specializations


def _reason_origins(event: CompileEvent, evidence: LiveEvidence) -> CompileEvent:
    """reason_origins: one origin (or None) per failing guard line of the event's reason; and
    the kind only the first one's origin tells (user_specialization)."""
    lines = failure_lines(event.reason)
    if not lines:
        return event
    # Dynamo's user stack (read with the event) stays beside what the rule attributes
    found = with_stacks(reason_origins(lines, evidence), event.reason_origins)
    kind, detail = refined(event.reason, event.reason_kind, event.reason_detail, found)
    return replace(event, reason_origins=found, reason_kind=kind, reason_detail=detail)


def _first_uses(entries: tuple[CacheEntry, ...], compile_id: str | None) -> dict[str, Origin]:
    """Tensor source -> its first use, from the entry's TENSOR_MATCH lines."""
    out: dict[str, Origin] = {}
    for entry in entries:
        if entry.compile_id != compile_id:
            continue
        for g in entry.guards:
            if g.kind == "TENSOR_MATCH" and g.source and g.origin:
                out.setdefault(g.source, g.origin)
    return out


def _own_frame_newest(events: list[CompileEvent]) -> CompileEvent | None:
    """The newest successful compile of the target's own frame.

    After the run's reset frame ids restart, and the first frame Dynamo compiles is the outermost
    one the probe called (frame id 0), so the first event's frame is the target's, whatever its
    co_name (a decorator's wrapper, a module's forward). Matching by name would pick an inner
    frame's entry whenever a wrapper renames the outer one.
    """
    if not events:
        return None
    frame = frame_of(events[0].compile_id)
    if frame is None:
        return None
    return next(
        (e for e in reversed(events) if not e.failed and frame_of(e.compile_id) == frame), None
    )


def _own_frame_notes(events: Sequence[CompileEvent], own: CompileEvent | None) -> tuple[str, ...]:
    """Why the run's guard figures are n/a where the target's own frame never compiled."""
    if own is not None or not events:
        return ()
    frame = frame_of(events[0].compile_id)
    tried = [e for e in events if frame is not None and frame_of(e.compile_id) == frame]
    if not tried:
        return ()
    kinds = ", ".join(sorted({e.fail_type or "failed" for e in tried}))
    others = len({frame_of(e.compile_id) for e in events if not e.failed} - {frame})
    tail = (
        f"; the {others} other frame(s) that compiled are listed with the cache entries"
        if others
        else ""
    )
    return (
        f"guards n/a: the target's own frame ({tried[0].function}) never compiled: "
        f"{len(tried)} attempt(s) failed ({kinds}), so it has no cache entry whose guards to "
        f"count{tail}",
    )


def _marking(
    driver: Driver,
    strategy: Strategy,
    target: LoadedTarget,
    acting: tuple[str, ...],
    entries: list[EntryInfo] | None,
    events: tuple[CompileEvent, ...],
) -> tuple[int | None, tuple[str, ...], str | None]:
    """(marked_dims, notes, no_effect): how many dims the strategy marked or named, a note when
    a strategy meant to mark had nothing to mark (e.g. batch_dims: {}, or a list of tensors),
    and why it had no effect when the sources it named match nothing the compiled frames guard
    on or fail on (Dynamo ignores a source that names nothing, so such a run is the default
    one)."""
    by_sources = any(v == BATCH_SOURCES for v in strategy.config.values())
    what = ", ".join(acting) or "no symbol"
    why = f"no dim of {what} is a tensor dim (dims are empty or name non-tensor arguments)"
    if driver.mark is not None:
        marked = len(driver.mark.marked)
        if marked == 0 and driver.calls:
            return 0, (f"nothing to mark: {why}; ran without marks",), None
        return marked, (), None
    written = _written_sources(strategy)
    if by_sources or written:
        named = target.sources(acting, driver.last_inputs) if by_sources else written
        if not named:
            return 0, (f"nothing to name: {why}; set no source",), None
        unmatched = _unmatched(sorted({s for s, _ in named}), entries, events)
        if unmatched is not None and len(unmatched) == len({s for s, _ in named}):
            no_effect = (
                f"no effect: matched no source: {', '.join(unmatched)} named nothing the "
                "compiled frames guard on, so Dynamo ignored them"
            )
            return len(named), (no_effect,), no_effect
        return len(named), (), None
    return None, (), None


def _written_sources(strategy: Strategy) -> list[tuple[str, int]]:
    """The (source, dim) pairs a custom strategy wrote into a sources knob itself."""
    out: list[tuple[str, int]] = []
    for dotted, value in strategy.config.items():
        if not dotted.endswith(("unbacked_sources", "dynamic_sources")):
            continue
        if not isinstance(value, str) or value == BATCH_SOURCES:
            continue
        for part in filter(None, (p.strip() for p in value.split(","))):
            source, _, dim = part.rpartition(":")
            if source and dim.isdigit():
                out.append((source, int(dim)))
            elif part.startswith("L["):  # a whole tensor, every dim
                out.append((part, -1))
    return out


def _unmatched(
    sources: list[str], entries: list[EntryInfo] | None, events: tuple[CompileEvent, ...]
) -> list[str] | None:
    """The sources no guard of any cache entry and no recompile reason names; None when that
    cannot be told: no entries, none whose guard tree could be read, or a compile that failed
    (it left no entry, and its error names symbols such as u0, not sources: the sources may be
    why it failed)."""
    if not entries or not any(e.guards for e in entries) or any(e.failed for e in events):
        return None
    texts = [g.text for e in entries for g in e.guards]
    texts += [t for e in events for t in (e.reason or "", *e.failures)]
    named = {g.source for e in entries for g in e.guards if g.source}
    return [s for s in sources if s not in named and not any(s in t for t in texts)]


def _with_symbol(event: CompileEvent, target: LoadedTarget, driver: Driver) -> CompileEvent:
    """reason_detail names the size symbol whose dim failed, where the source maps to one."""
    detail = event.reason_detail
    if detail is None or detail.dim is None:
        return event
    symbol = target.symbol_of(detail.source, detail.dim, driver.last_inputs)
    return replace(event, reason_detail=replace(detail, symbol=symbol))


def _cache_entry(info: EntryInfo, event: CompileEvent | None, calls: list[Call]) -> CacheEntry:
    call = event.call_index if event else None
    made = calls[call] if call is not None and call < len(calls) else None
    return CacheEntry(
        function=info.function,
        filename=info.filename,
        line=info.line,
        compile_id=info.compile_id,
        call_index=call,
        batch_size=made.batch_size if made else None,
        guard_count=event.guard_count if event else None,
        shape_env_guard_count=event.shape_env_guard_count if event else None,
        leaf_guard_count=info.leaf_guard_count,
        guards=info.guards,
        sizes=made.sizes if made else None,
        leaf_guard_kinds=info.leaf_kinds,
    )
