"""Verdicts and derived facts: pure functions over result records (no torch)."""

from __future__ import annotations

import math
from dataclasses import dataclass

from .model import CauseCount, CompileEvent, FunctionSummary, ReasonCount, Run
from .sizes import BATCH, Point, format_point, format_sequence


@dataclass(frozen=True)
class Transition:
    """One recompile, placed in the sequence."""

    strategy: str
    call_index: int
    batch_before: int | None
    batch_after: int
    reason: str | None
    compile_id: str | None
    kind: str | None = None  #: reasons.KINDS
    #: what changed between the previous call and this one: "1 → 2", "S 7 → 33", ...
    change: str = ""


#: A steady-state median above this multiple of the fastest sample is too noisy to rank on: stalls
#: (e.g. ~250 ms thread-pool stalls on a loaded 2-core box) reached the median itself. Measured on
#: that box: a quiet measurement reads 1.02-1.12, a disturbed one 1.28-1.99.
NOISE_RATIO = 1.3


def too_noisy(min_us: float | None, median_us: float | None) -> bool | None:
    """median > NOISE_RATIO x min; None when either figure is missing."""
    if min_us is None or median_us is None or min_us <= 0:
        return None
    return median_us > NOISE_RATIO * min_us


def noisy(run: Run) -> bool:
    """The run's µs/call must not rank it (an old report without the spread ranks as before)."""
    flag = run.steady_state_noisy
    if flag is None:
        flag = too_noisy(run.steady_state_min_us, run.steady_state_us)
    return bool(flag)


def eligible(run: Run) -> bool:
    """A run that can win: it finished, and its outputs did not differ from eager."""
    return run.status == "ok" and run.outputs_match is not False and run.compiles is not None


def _value(x: float | None) -> float:
    return math.inf if x is None else x


def _key(run: Run) -> tuple[float, ...]:
    # "fewest guards": guard_count first, then the symbolic (shape-env) guards it includes.
    return (_value(run.compiles), _value(run.guard_count), _value(run.shape_env_guard_count))


def tied(runs: list[Run]) -> list[Run]:
    """The eligible runs that only µs/call could separate: fewest compiles, then guards."""
    candidates = [r for r in runs if eligible(r)]
    if not candidates:
        return []
    top = min(_key(r) for r in candidates)
    return [r for r in candidates if _key(r) == top]


def best(runs: list[Run]) -> Run | None:
    """Fewest compiles, then fewest guards, then the lowest steady-state cost; errors excluded.

    µs/call decides a tie only when no tied run's measurement is too noisy to rank on; otherwise
    the first tied run in scenario order wins and the verdict says why.
    """
    top = tied(runs)
    if not top:
        return None
    if any(noisy(r) for r in top):
        return top[0]
    return min(top, key=lambda r: _value(r.steady_state_us))


def noisy_line(run: Run) -> str:
    """'name (min a, median b, p90 c µs)' for a run whose µs/call is too noisy to rank."""
    figures = ", ".join(f"{k} {v:.1f}" for k, v in (("min", run.steady_state_min_us),
                                                      ("median", run.steady_state_us),
                                                      ("p90", run.steady_state_p90_us))
                        if v is not None)
    return f"{run.strategy} ({figures} µs)" if figures else run.strategy


def transitions(run: Run) -> list[Transition]:
    from .sizes import Point, format_change

    def point(i: int) -> Point | None:
        if 0 <= i < len(run.calls) and run.calls[i].sizes:
            return Point.of(run.calls[i].sizes)
        if 0 <= i < len(run.calls):
            return Point.batch(run.calls[i].batch_size)
        return Point.batch(run.sequence[i]) if 0 <= i < len(run.sequence) else None

    out = []
    for event in run.compile_events:
        if not event.recompile or event.call_index is None:
            continue
        i = event.call_index
        before, after = point(i - 1) if i > 0 else None, point(i)
        kind = event.reason_kind
        if kind is None and event.reason:  # a report written before kinds existed
            from .reasons import classify

            kind = classify(event.reason).kind
        batch = (lambda p: None if p is None else
                 p.get("B") if p.get("B") is not None else p.items[0][1])
        out.append(Transition(run.strategy, i, batch(before), batch(after) or 0, event.reason,
                              event.compile_id, kind,
                              format_change(before, after) if after is not None else ""))
    return out


# --- how a run's points read (every view spells them through these and sizes.py) -------------

def run_points(run: Run) -> list[Point]:
    """The sequence's points; a report written before size symbols has batch sizes only."""
    if run.points:
        return [Point.of(p) for p in run.points]
    return [Point.batch(b) for b in run.sequence]


def points_of(runs: list[Run]) -> list[Point]:
    """The points of a sequence shared by these runs: from a run that recorded them (a run lost
    in a crashed worker may carry only the batch sizes)."""
    with_points = next((r for r in runs if r.points), runs[0] if runs else None)
    return run_points(with_points) if with_points is not None else []


def batch_only(points: list[Point]) -> bool:
    """Only B moves: every view then reads exactly as it did before size symbols."""
    return all(p.symbols == (BATCH,) for p in points)


def call_point(run: Run, index: int) -> Point | None:
    if not 0 <= index < len(run.calls):
        return None
    call = run.calls[index]
    return Point.of(call.sizes) if call.sizes else Point.batch(call.batch_size)


def stepped(run: Run) -> bool:
    """A driver called the target more than once in some point."""
    return any(c.step for c in run.calls)


def named(point: Point) -> str:
    """A point with its symbols always named: "B 2", "B 2, S 7"."""
    return f"{BATCH} {point.get(BATCH)}" if point.symbols == (BATCH,) else format_point(point)


def at_call(run: Run, index: int) -> str:
    """The point of one call: "B 2", "B 2, S 7"; a driver's later calls in a point add their
    step: "B 2, S 7, step 1"."""
    point = call_point(run, index)
    if point is None:
        return "?"
    step = run.calls[index].step
    return named(point) + (f", step {step}" if step else "")


def moved(run: Run, t: Transition) -> str:
    """What moved at a recompile: "B 1 → 2", "S 7 → 33", "B 1 → 2, S 7 → 33"; when the call
    before it is in the same point (a driver), the point did not move: "step 1 at B 2, S 7"."""
    i, point = t.call_index, call_point(run, t.call_index)
    if point is not None and run.calls[i].step and i > 0 and \
            run.calls[i - 1].point_index == run.calls[i].point_index:
        return f"step {run.calls[i].step} at {named(point)}"
    if point is None or point.symbols == (BATCH,):
        return f"{BATCH} {'?' if t.batch_before is None else t.batch_before} → {t.batch_after}"
    return t.change


def sequence_label(points: list[Point], width: int = 72) -> str:
    """The sequence in one line: "B = 1 → 2 → 8" (never abbreviated, as always), or its points
    "(B 1, S 7) → (B 1, S 33) → …" abbreviated in the middle to ``width``."""
    if batch_only(points):
        return "B = " + " → ".join(str(p.get(BATCH)) for p in points)
    return format_sequence(points, max(width, 24))


def plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def verdict(sequence_name: str, runs: list[Run]) -> str:
    """One line: the winner and why, who recompiled, who failed."""
    points = points_of(runs)
    if batch_only(points):
        head = f"{sequence_name} {list(runs[0].sequence if runs else ())}: "
    else:
        head = f"{sequence_name} {sequence_label(points, 60)}: "
    winner = best(runs)
    if winner is None:
        return head + "no strategy finished with outputs matching eager."
    ties = [r for r in runs if eligible(r) and r.compiles == winner.compiles]
    parts = [f"{winner.strategy} wins with {plural(winner.compiles, 'compile')}"]
    detail = []
    if winner.guard_count is not None:
        detail.append(f"{plural(winner.guard_count, 'guard')}")
    if winner.shape_env_guard_count is not None:
        detail.append(f"{plural(winner.shape_env_guard_count, 'shape guard')}")
    if winner.steady_state_us is not None:
        detail.append(f"{winner.steady_state_us:.1f} µs/call"
                      + (", too noisy to rank" if noisy(winner) else ""))
    if detail:
        parts[0] += f" ({', '.join(detail)})"
    others = [r.strategy for r in ties if r is not winner]
    if others:
        parts.append(f"also {plural(winner.compiles, 'compile')}: {', '.join(others)}")
    unranked = [r for r in tied(runs) if noisy(r)]
    if len(tied(runs)) > 1 and unranked:
        parts.append(f"µs/call too noisy to rank ({', '.join(r.strategy for r in unranked)}: "
                     f"median > {NOISE_RATIO}x min), so {winner.strategy} wins the tie by "
                     "scenario order")
    recompiling = [r for r in runs if r.recompiles]
    if recompiling:
        first = transitions(recompiling[0])
        where = ""
        if first and first[0].batch_before is not None:
            where = f" (first at call {first[0].call_index}, {moved(recompiling[0], first[0])})"
        parts.append(f"recompile: {', '.join(r.strategy for r in recompiling)}{where}")
    mismatched = [r.strategy for r in runs if r.status == "ok" and r.outputs_match is False]
    if mismatched:
        parts.append(f"outputs differ from eager: {', '.join(mismatched)}")
    failed = [r.strategy for r in runs if r.status == "error"]
    if failed:
        parts.append(f"error: {', '.join(failed)}")
    return head + "; ".join(parts) + "."


def by_function(events: list[CompileEvent], *, cache_entries: dict[tuple, int] | None = None,
                qualnames: dict[tuple, str] | None = None,
                extras: dict[str, dict] | None = None,
                code_qualnames: dict[tuple, str] | None = None) -> list[FunctionSummary]:
    """Per compiled code object (name, file, line), in first-compiled order.

    ``extras``: per compile id, what the recorder saw beside the event (``compiled_as``,
    ``call_site``): a code object that is a library's closure (a decorator's wrapper) is then
    named after what the user compiled, its own name kept in ``code_name``. ``code_qualnames``:
    co_qualname per code object, to tell such a closure where ``qualnames`` is not given."""
    from .reasons import classify, failure_lines, strip_comment

    groups: dict[tuple, list[CompileEvent]] = {}
    for e in events:
        groups.setdefault((e.function, e.filename, e.line), []).append(e)
    out = []
    for key, group in groups.items():
        reasons: dict[tuple, int] = {}
        reason_origin: dict[tuple, dict] = {}
        for e in group:
            if not e.recompile:
                continue
            lines = failure_lines(e.reason)
            text = strip_comment(lines[0].split(": ", 1)[-1]) if lines else (e.reason or "")
            kind = e.reason_kind or (classify(e.reason).kind if e.reason else None)
            reasons[(kind, text)] = reasons.get((kind, text), 0) + 1
            if e.reason_origins and e.reason_origins[0] and (kind, text) not in reason_origin:
                reason_origin[(kind, text)] = e.reason_origins[0]
        ok = [e for e in group if not e.failed]
        latest = ok[-1] if ok else None

        def total(field: str) -> int | None:
            values = [getattr(e, field) for e in group]
            return None if any(v is None for v in values) else sum(values)

        name = (qualnames or {}).get(key) or key[0] or "?"
        code_name = (code_qualnames or {}).get(key) or name
        seen = [(extras or {}).get(e.compile_id or "") or {} for e in group]
        # one wrapper's code object may serve several things the user compiled: name them all
        names = list(dict.fromkeys(x["compiled_as"] for x in seen if x.get("compiled_as")))
        user_name = ", ".join(names) or None
        call_site = next((x["call_site"] for x in seen if x.get("call_site")), None)
        # only a closure named otherwise than what the user compiled is renamed (a decorator's
        # wrapper): a module's own forward, a local class's or a plain function keeps its name
        renamed = user_name is not None and ".<locals>." in code_name and \
            all(n.rsplit(".", 1)[-1] != (key[0] or "") for n in names)
        out.append(FunctionSummary(
            function=user_name if renamed else name,
            filename=key[1], line=key[2],
            compiles=len(group), recompiles=sum(e.recompile for e in group),
            failed=sum(e.failed for e in group),
            graphs=total("graphs"), graph_breaks=total("graph_breaks"),
            cache_entries=(cache_entries or {}).get(key),
            guard_count=latest.guard_count if latest else None,
            shape_env_guard_count=latest.shape_env_guard_count if latest else None,
            recompile_limit_hit=any(e.reason_kind == "recompile_limit_hit" for e in group),
            reasons=tuple(ReasonCount(k, t, n, reason_origin.get((k, t)))
                          for (k, t), n in reasons.items()),
            causes=cause_counts(group, extras),
            code_name=code_name if renamed else None, call_site=call_site,
            graph_break_origins=_merged(seen, "graph_breaks", ("reason",), count=True),
            specializations=_merged(seen, "specializations", ("source", "value")),
        ))
    return out


def _merged(extras: list[dict], name: str, fields: tuple[str, ...], count: bool = False
            ) -> tuple[dict, ...]:
    """One record per (fields, user line) over a function's compiles; counts added up."""
    out: dict[tuple, dict] = {}
    for extra in extras:
        for item in extra.get(name) or ():
            origin = item.get("origin") or {}
            key = (*(item.get(f) for f in fields), origin.get("file"), origin.get("line"))
            if key in out:
                if count:
                    out[key]["count"] = (out[key].get("count") or 0) + (item.get("count") or 0)
            else:
                kept = {k: v for k, v in item.items() if k != "stack"}
                out[key] = kept
    return tuple(out.values())


def cause_counts(events: list[CompileEvent], extras: dict[str, dict] | None = None
                 ) -> tuple[CauseCount, ...]:
    """The root causes of these recompiles (every failing guard, grouped; causes.py), each with
    the recompiles it is the first-ranked cause of: those first (dearer first, incidental ones
    last), then the ones that only also failed."""
    from dataclasses import replace

    from . import causes as causes_mod
    from .reasons import failure_lines, strip_comment

    found: dict[tuple, dict] = {}
    for e in events:
        if not e.recompile:
            continue
        lines = list(e.failures) or failure_lines(e.reason)
        group = causes_mod.group(lines)
        # the origin of each entry's first failing guard (reason_origins follows reason's lines)
        firsts = {}
        every = ((extras or {}).get(e.compile_id or "") or {}).get("failure_origins") or ()
        for line, origin in [*zip(failure_lines(e.reason), e.reason_origins or ()),
                             *zip(lines, every)]:
            entry, _, guard = line.partition(": ")
            if firsts.get((entry, strip_comment(guard))) is None:
                firsts[(entry, strip_comment(guard))] = origin
        for i, cause in enumerate(group):
            item = found.setdefault(cause.key(), {"cause": cause, "ids": [], "seen": 0,
                                                  "order": len(found), "origin": None})
            item["seen"] += 1
            if item["origin"] is None:
                item["origin"] = next((firsts[(en, g)] for en in cause.entries
                                       for g in cause.guards if firsts.get((en, g))), None)
            if cause.what in ("length", "value"):
                item["cause"] = replace(item["cause"], before=causes_mod.merged_before(
                    item["cause"].before, cause.before))
            if i == 0:
                item["ids"].append(e.compile_id or "?")
    ordered = sorted(found.values(), key=lambda c: (not c["ids"], c["cause"].incidental,
                                                    -len(c["ids"]), c["cause"].rank, c["order"]))
    return tuple(CauseCount(c["cause"].label(), c["cause"].what, c["cause"].source,
                            c["cause"].dim, c["cause"].before, c["cause"].after,
                            c["cause"].kind, c["cause"].incidental, len(c["ids"]), c["seen"],
                            tuple(c["ids"]), c["origin"]) for c in ordered)
