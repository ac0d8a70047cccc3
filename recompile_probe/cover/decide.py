"""Coverage of a declared range, decided while the run's cache entries are alive -> a record.

The strongest method that holds is used, and the record says which: ``proved`` where every
size condition of every entry translated (cover/symbolic.py) and guard evaluation agreed with
it at sampled points; ``enumerated`` where guards were evaluated at every point (a range up to
``ENUMERATE_LIMIT`` points); ``sampled`` otherwise, and whenever frames other than the target's
own were compiled (graph breaks, resume functions): those are decided by real calls under the
fail-on-recompile stance at sampled sizes, or left out (scope "top frame only") where the
scenario has no factory to make real inputs.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import sympy

from ..provenance.capture import RuntimeAsserts
from ..reasons.parse import parse_line
from ..reasons.text import resumed_at
from ..records.coverage import (
    GUARDS,
    STANCE,
    Coverage,
    Method,
    Outcome,
    RuntimeRaise,
    Scope,
    Unserved,
)
from ..records.origin import Origin
from ..records.run import GuardLine
from ..sizes import ranges as sr
from ..targets.frames import frame_code, frame_globals, frame_locals
from ..targets.inputs import Inputs
from ..targets.loader import LoadedTarget
from ..torch_compat import cache
from . import asserts
from .guards import Evaluator
from .inputs import Template
from .stance import StanceSampler
from .symbolic import (
    MAX_BOXES,
    Decision,
    Untranslatable,
    boxes_of,
    by_intervals,
    by_z3,
    conditions,
    z3_available,
)

#: points guard evaluation visits one by one before it samples instead (~10-40 µs a point)
ENUMERATE_LIMIT = 200_000
#: points of a sampled answer, and of the cross-check of a symbolic one
SAMPLE_LIMIT = 400
#: real calls the stance sampler makes at most
STANCE_LIMIT = 48


@dataclass(frozen=True)
class Request:
    """What the probe hands over after a sequence."""

    target: LoadedTarget
    ranges: Mapping[str, tuple[int, int]]
    template: Inputs  #: the last call's inputs, as the strategy marked them
    base: Mapping[str, int]  #: every symbol's size at that call
    #: the run's cache entries with their guard lines' user lines, for each failing guard
    guard_lines: Sequence[GuardLine] = ()
    #: the range a mark declared (min/max), symbol -> (lo, hi): outside it a compile raises
    declared: Mapping[str, tuple[int, int]] | None = None
    #: call the compiled target (marks applied) / real inputs at a point; None: no real calls
    call: Callable[[tuple, dict], Any] | None = None
    real_inputs: Callable[[Mapping[str, int]], Inputs] | None = None
    #: sizes the sequence used: always among the samples
    seen: Sequence[Mapping[str, int]] = ()
    #: count only the target's own resume frames as other frames (a test process, not reset)
    own_frames_only: bool = False
    #: the run's torch.compile(recompile_limit=...), where it set one (the config's otherwise)
    recompile_limit: int | None = None
    #: compile id -> what its graph asserts when it runs (the run's Collector); None: not read
    runtime_asserts: Callable[[str | None], RuntimeAsserts | None] | None = None
    #: what the caller knows of the range itself (how it was chosen), kept first in the notes
    notes: Sequence[str] = ()
    #: a non-tensor argument the inputs' factory makes differently at other sizes, e.g.
    #: "argument 1: 3 at B = 8, 1 at B = 0": guards would be asked at the last call's value, so
    #: real calls decide (with ``call`` and ``real_inputs``), and no answer is a proof
    varying: str | None = None


def decide(request: Request) -> Coverage:
    start = time.perf_counter()
    ranges = dict(request.ranges)

    def na(why: str, checked: int = 0) -> Coverage:
        return Coverage(
            ranges=ranges,
            method=None,
            scope=None,
            proved=False,
            why_na=why,
            notes=tuple(request.notes),
            points_checked=checked,
            seconds=round(time.perf_counter() - start, 4),
        )

    target = request.target
    code = frame_code(target.fn)
    entries = cache.cache_entries(code) if code is not None else None
    if entries is None:
        return na("this torch does not expose the frame's cache entries")
    template = Template.of(target, request.template, list(ranges))
    missing = [s for s in ranges if s not in template.sources.values()]
    if missing:
        return na(
            f"{', '.join(missing)} moves no dim of the target's inputs that this run can name"
        )
    evaluator = Evaluator(target, code, entries, template, dict(request.base))
    own = {s: request.base[s] for s in ranges}
    if entries:
        real = frame_locals(target.fn, *request.template)
        real_ok = real is not None and any(cache.accepts(e, real) for e in entries)
        rebuilt = evaluator.served(own)
        if rebuilt is None:
            return na("the target's inputs could not be rebuilt at other sizes", evaluator.checked)
        if real_ok and not rebuilt:
            return na(
                "the inputs rebuilt at the last call's own sizes are not accepted where the "
                f"real ones are ({evaluator.failing_guard(own) or 'no guard named'})",
                evaluator.checked,
            )
    notes: list[str] = list(request.notes)
    others = _other_frames(code, request.own_frames_only)
    scope = Scope.EVERY_FRAME
    sampler: StanceSampler | None = None
    real_calls = request.call is not None and request.real_inputs is not None
    # guards asked with the last call's value of a varying argument answer for no other size;
    # real calls with the factory's own inputs do, at the sizes they are made at
    by_calls = bool(request.varying) and real_calls
    if by_calls:
        decision, method = Decision([], [], None, complete=False), Method.SAMPLED
    else:
        decision, method = _decide_by_guards(evaluator, ranges, request, notes)
    if request.varying:
        said = (
            "the inputs' factory makes a non-tensor argument differently at other sizes "
            f"({request.varying})"
        )
        if by_calls:
            sampler = _sample_stance(request, ranges, decision, every=True)
            notes.append(
                f"{said}: guards read with the last call's value would answer for no other "
                f"size, so {sampler.calls} real call(s) under the fail-on-recompile stance, "
                "with the factory's inputs, sampled every frame"
            )
        else:
            notes.append(
                f"{said}; guards were asked with the last call's value, so a size where it "
                "differs may be answered wrongly: not a proof"
            )
    if others and sampler is None:
        if real_calls:
            sampler = _sample_stance(request, ranges, decision)
            method = Method.SAMPLED
            notes.append(
                f"other frames were compiled ({', '.join(sorted(others))}): their guards cannot "
                f"be read for unseen sizes, so {sampler.calls} real call(s) under the "
                "fail-on-recompile stance sampled them"
            )
        else:
            scope = Scope.TOP_FRAME
            notes.append(
                f"other frames were compiled ({', '.join(sorted(others))}) and this scenario "
                "has no factory for real calls: only the target's own frame is decided"
            )
    return _record(
        request, ranges, decision, method, scope, evaluator, entries, sampler, notes, start
    )


def _decide_by_guards(
    evaluator: Evaluator, ranges: dict[str, tuple[int, int]], request: Request, notes: list[str]
) -> tuple[Decision, Method]:
    symbolic = _symbolic(evaluator, ranges, request, notes)
    if symbolic is not None:
        return symbolic, Method.PROVED
    total = sr.count(ranges)
    names = list(ranges)
    if total <= ENUMERATE_LIMIT:
        flags = [(point, evaluator.served(dict(zip(names, point)))) for point in sr.points(ranges)]
        unknown = sum(ok is None for _, ok in flags)
        if not unknown:
            return _from_flags(names, flags), Method.ENUMERATED
        notes.append(
            f"{unknown} size(s) could not be evaluated (inputs too large to allocate, or an "
            "entry without a guard manager): the rest is listed, not a proof"
        )
        return _from_flags(names, flags, sampled=True), Method.SAMPLED
    points = _sample_points(ranges, request.seen)
    flags = [(point, evaluator.served(dict(zip(names, point)))) for point in points]
    decision = _from_flags(names, flags, sampled=True)
    notes.append(
        f"{total:,} points are more than {ENUMERATE_LIMIT:,} to evaluate one by one; guards were "
        f"evaluated at {len(points)} chosen sizes (the ends, 0, 1, 2, powers of two and their "
        "neighbours, odd primes, a spread)"
    )
    return decision, Method.SAMPLED


def _symbolic(
    evaluator: Evaluator, ranges: dict[str, tuple[int, int]], request: Request, notes: list[str]
) -> Decision | None:
    symbols = {name: sympy.Symbol(name, integer=True, nonnegative=True) for name in ranges}
    f_locals = evaluator.locals_at({s: request.base[s] for s in ranges})
    if f_locals is None:
        return None
    try:
        f_globals = frame_globals(evaluator.target.fn)
        read = [
            conditions(e, evaluator.template, f_locals, symbols, f_globals)
            for e in evaluator.entries
        ]
        if not any(r.needs_solver for r in read):
            boxes = [b for r in read for b in boxes_of(r, ranges, symbols)]
            decision = by_intervals(boxes, ranges)
        elif z3_available():
            small = sr.count(ranges) <= ENUMERATE_LIMIT
            decision = by_z3(read, ranges, symbols, runs=not small)
            if small:  # z3 decides the whole range; the lists come from guard evaluation
                names = list(ranges)
                flags = [(p, evaluator.served(dict(zip(names, p)))) for p in sr.points(ranges)]
                if any(ok is None for _, ok in flags):
                    notes.append("some sizes could not be evaluated; evaluated where they could")
                    return None
                listed = _from_flags(names, flags)
                if listed.counterexample != decision.counterexample:
                    notes.append(
                        f"z3's smallest unserved size ({decision.counterexample}) is not guard "
                        f"evaluation's ({listed.counterexample}); evaluated instead"
                    )
                    return None
                decision = listed
        else:
            notes.append(
                "a guard uses floor division, modulo or ties two sizes, which needs z3 to "
                "prove (pip install 'recompile-probe[proof]'); evaluated instead"
            )
            return None
    except Untranslatable as exc:
        notes.append(f"a size guard did not translate ({exc}); its sizes were evaluated instead")
        return None
    # Guards not about sizes are taken as the same everywhere: hold the answer to real guard
    # evaluation at chosen sizes before calling it proved.
    names = list(ranges)
    for point in _sample_points(ranges, request.seen):
        said, read_off = evaluator.served(dict(zip(names, point))), _in(decision, point)
        if said is not None and read_off is not None and said != read_off:
            notes.append(
                f"guard evaluation at {sr.format_box(names, tuple((v, v) for v in point))} "
                "disagreed with the guards read as conditions; evaluated instead"
            )
            return None
    return decision


def _in(decision: Decision, point: tuple[int, ...]) -> bool | None:
    """Whether the decision serves the point; None where its lists stop short of it."""
    if any(all(lo <= v <= hi for v, (lo, hi) in zip(point, box)) for box in decision.unserved):
        return False
    if decision.complete:
        return True
    if any(all(lo <= v <= hi for v, (lo, hi) in zip(point, box)) for box in decision.served):
        return True
    return None


def _from_flags(
    names: list[str], flags: Sequence[tuple[tuple[int, ...], bool | None]], sampled: bool = False
) -> Decision:
    served = [tuple((v, v) for v in p) for p, ok in flags if ok]
    unserved = [tuple((v, v) for v in p) for p, ok in flags if ok is False]
    if not sampled:
        served, unserved = sr.merge(served), sr.merge(unserved)
    first = tuple(lo for lo, _ in unserved[0]) if unserved else None
    return Decision(served, unserved, first, complete=not sampled)


def _sample_points(
    ranges: Mapping[str, tuple[int, int]], seen: Sequence[Mapping[str, int]]
) -> list[tuple[int, ...]]:
    per = [
        sr.samples(lo, hi, [s[name] for s in seen if name in s])
        for name, (lo, hi) in ranges.items()
    ]
    points = list(itertools.product(*per))
    if len(points) > SAMPLE_LIMIT:  # several symbols: every corner-ish value of the first
        step = len(points) / SAMPLE_LIMIT
        points = sorted({points[int(i * step)] for i in range(SAMPLE_LIMIT)} | {points[-1]})
    return points


def _other_frames(code: Any, own_only: bool = False) -> list[str]:
    """Other compiled frames a call may run through. ``own_only``: only the target's own
    resume functions (a test process holds other functions' frames too)."""
    codes = [c for c in cache.dynamo_codes() or [] if c is not code and cache.cache_entries(c)]
    if own_only:
        codes = [c for c in codes if _resumes(c, code)]
    return sorted({c.co_name for c in codes})


def _resumes(resume: Any, target: Any) -> bool:
    """``resume`` continues ``target`` after a graph break: its name says so, and the break line
    lies inside ``target`` (a suite's tests may each define their own ``f`` in one file)."""
    if resume.co_filename != target.co_filename:
        return False
    name = resume.co_name
    lines = [line for _, _, line in target.co_lines() if line is not None]
    first, last = target.co_firstlineno, max(lines, default=target.co_firstlineno)
    while True:
        found = resumed_at(name)
        if found is None:
            return False
        parent, at = found
        if parent == target.co_name:
            return first <= at <= last
        name = parent


def _sample_stance(
    request: Request, ranges: dict[str, tuple[int, int]], decision: Decision, every: bool = False
) -> StanceSampler:
    """Real calls at the sample points the guards found served (``every``: at all of them)."""
    assert request.call is not None and request.real_inputs is not None
    names = list(ranges)
    base = dict(request.base)
    make = request.real_inputs
    sampler = StanceSampler(request.call, lambda sizes: make({**base, **sizes}))
    picks = [p for p in _sample_points(ranges, request.seen) if every or _in(decision, p)]
    if len(picks) > STANCE_LIMIT:
        step = len(picks) / STANCE_LIMIT
        picks = sorted({picks[int(i * step)] for i in range(STANCE_LIMIT)} | {picks[-1]})
    for point in picks:
        sampler.served(dict(zip(names, point)))
    return sampler


def _record(
    request: Request,
    ranges: dict[str, tuple[int, int]],
    decision: Decision,
    method: Method,
    scope: Scope,
    evaluator: Evaluator,
    entries: Sequence[Any],
    sampler: StanceSampler | None,
    notes: list[str],
    start: float,
) -> Coverage:
    names = list(ranges)
    limit = request.recompile_limit or cache.recompile_limit()
    at_limit = limit is not None and len(entries) >= limit
    unserved: list[Unserved] = []
    for box in decision.unserved[:MAX_BOXES]:
        for part in _split(box, names, request.declared):
            smallest = {n: lo for n, (lo, _) in zip(names, part)}
            guard = evaluator.failing_guard(smallest)
            detail = parse_line(guard) if guard else None
            unserved.append(
                Unserved(
                    sizes=dict(zip(names, part)),
                    outcome=_outcome(part, names, request.declared, at_limit).value,
                    guard=guard,
                    reason_kind=detail.kind if detail else None,
                    origin=_origin(guard, detail, request.guard_lines),
                    decided_by=GUARDS,
                )
            )
    served = [dict(zip(names, box)) for box in decision.served[:MAX_BOXES]]
    counterexample = decision.counterexample
    raises: tuple[RuntimeRaise, ...] | None = None
    raises_sampled = False
    if sampler is not None:
        # served only where a real call was served: between samples nothing is known
        served = [
            {n: (v, v) for n, v in zip(names, point)}
            for point in sampler.asked
            if point not in sampler.refused
        ][:MAX_BOXES]
        for point, refusal in sorted(sampler.refused.items()):
            detail = parse_line(refusal.guard) if refusal.guard else None
            unserved.append(
                Unserved(
                    sizes={n: (v, v) for n, v in zip(names, point)},
                    outcome=(Outcome.EAGER if at_limit else Outcome.RECOMPILE).value,
                    guard=detail.text if detail else None,
                    reason_kind=detail.kind if detail else None,
                    origin=None,
                    decided_by=STANCE,
                )
            )
            if counterexample is None or point < counterexample:
                counterexample = point
        raises = tuple(
            RuntimeRaise(sizes={n: (v, v) for n, v in zip(names, point)}, assertion=text)
            for point, text in sorted(sampler.raised.items())
        )
        raises_sampled = True
    if raises is None and request.runtime_asserts is not None:
        raises, raises_sampled = _raises(request, evaluator, entries, ranges, decision, notes)
    unserved.sort(key=lambda u: tuple(lo for lo, _ in u.sizes.values()))
    if evaluator.too_large:
        notes.append(
            f"{evaluator.too_large} sampled size(s) need inputs too large to allocate here, "
            "even untouched: guard evaluation skipped them (the symbolic answer covers them)"
            if method is Method.PROVED
            else f"{evaluator.too_large} sampled size(s) need inputs too large to allocate "
            "here: not evaluated"
        )
    if sampler is not None and sampler.skipped:
        notes.append(
            f"{sampler.skipped} sampled size(s) got no real inputs (the factory failed or they "
            "do not fit in memory): undecided"
        )
    if at_limit and decision.unserved:
        notes.append(
            f"the frame holds {len(entries)} cache entries, its recompile limit ({limit}): a call "
            "at an unserved size compiles nothing and runs eagerly"
        )
    left_out = max(0, len(decision.unserved) - MAX_BOXES) + max(0, len(decision.served) - MAX_BOXES)
    if left_out and decision.complete and sampler is None:
        notes.append(
            f"the served and unserved lists stop at {MAX_BOXES} boxes each: {left_out} more "
            "are left out (boxes_left_out); the counterexample and the verdict hold for the "
            "whole range"
        )
    raises_left_out = 0 if raises is None else max(0, len(raises) - MAX_BOXES)
    if raises_left_out:
        notes.append(
            f"raises_at_runtime stops at {MAX_BOXES} boxes: {raises_left_out} more served "
            "box(es) that raise are left out (raises_left_out)"
        )
    if not decision.complete or sampler is not None:
        notes.append(
            f"the served and unserved lists stop at {MAX_BOXES} boxes each; the counterexample "
            "and the verdict hold for the whole range"
            if method is Method.PROVED and sampler is None
            else "served lists the sizes a sample found served; between samples nothing is known"
        )
    proved = (
        method in (Method.PROVED, Method.ENUMERATED)
        and scope is Scope.EVERY_FRAME
        and counterexample is None
        and not raises
        and not request.varying
    )
    return Coverage(
        ranges=ranges,
        method=method.value,
        scope=scope.value,
        proved=proved,
        served=tuple(served),
        unserved=tuple(unserved),
        counterexample=None if counterexample is None else dict(zip(names, counterexample)),
        raises_at_runtime=None if raises is None else raises[:MAX_BOXES],
        raises_left_out=raises_left_out,
        raises_sampled=raises_sampled,
        points_checked=evaluator.checked + (sampler.calls if sampler else 0),
        seconds=round(time.perf_counter() - start, 4),
        boxes_left_out=left_out,
        notes=tuple(notes),
        complete=(
            decision.complete and sampler is None and method is not Method.SAMPLED and not left_out
        ),
    )


def _split(
    box: sr.Box, names: list[str], declared: Mapping[str, tuple[int, int]] | None
) -> list[sr.Box]:
    """The box cut at the declared range's ends, so each part has one outcome."""
    if not declared:
        return [box]
    parts = [box]
    for i, name in enumerate(names):
        if name not in declared:
            continue
        lo_d, hi_d = declared[name]
        cut: list[sr.Box] = []
        for part in parts:
            lo, hi = part[i]
            edges = sorted({lo, hi + 1, *(e for e in (lo_d, hi_d + 1) if lo < e <= hi)})
            for a, b in zip(edges, edges[1:]):
                cut.append((*part[:i], (a, b - 1), *part[i + 1 :]))
        parts = cut
    return parts


def _outcome(
    box: sr.Box,
    names: list[str],
    declared: Mapping[str, tuple[int, int]] | None,
    at_limit: bool,
) -> Outcome:
    if declared:
        for name, (lo, hi) in zip(names, box):
            if name in declared and (hi < declared[name][0] or lo > declared[name][1]):
                return Outcome.RAISES
    return Outcome.EAGER if at_limit else Outcome.RECOMPILE


def _origin(guard: str | None, detail: Any, lines: Sequence[GuardLine]) -> Origin | None:
    """The user line behind a failing guard: the run's guard line with the same text, or for a
    tensor's size mismatch the tensor's first use."""
    if guard is None:
        return None
    for line in lines:
        if line.text == guard and line.origin is not None:
            return line.origin
    source = getattr(detail, "source", None)
    if source:
        for line in lines:
            if line.kind == "TENSOR_MATCH" and line.source == source and line.origin is not None:
                return line.origin
    return None


def _raises(
    request: Request,
    evaluator: Evaluator,
    entries: Sequence[Any],
    ranges: dict[str, tuple[int, int]],
    decision: Decision,
    notes: list[str],
) -> tuple[tuple[RuntimeRaise, ...] | None, bool]:
    """Served boxes whose graph raises a runtime assertion, every served point checked where
    the range is small enough to enumerate, else the sampled ones (a note says so); and
    whether they were sampled."""
    assert request.runtime_asserts is not None
    names = list(ranges)
    per_entry = asserts.read(entries, request.runtime_asserts, evaluator, names)
    if per_entry is None:
        return None, False
    if not any(per_entry):
        return (), False
    sampled = sr.count(ranges) > ENUMERATE_LIMIT
    if not sampled:
        points = [p for p in sr.points(ranges) if _in(decision, p)]
    else:
        points = [p for p in _sample_points(ranges, request.seen) if _in(decision, p)]
        notes.append(
            f"runtime assertions were checked at {len(points)} sampled served sizes, not all"
        )
    failing = asserts.failures(per_entry, evaluator, points, names)
    out: list[RuntimeRaise] = []
    for text in dict.fromkeys(failing.values()):
        boxes = sr.merge([tuple((v, v) for v in p) for p, t in failing.items() if t == text])
        out += [RuntimeRaise(sizes=dict(zip(names, box)), assertion=text) for box in boxes]
    out.sort(key=lambda f: tuple(lo for lo, _ in f.sizes.values()))
    return tuple(out), sampled
