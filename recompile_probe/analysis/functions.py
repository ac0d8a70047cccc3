"""Per compiled function: a process's compile events summarised per code object, with their
causes (watch, summarize, record()). No torch."""

from __future__ import annotations

from dataclasses import replace
from fnmatch import fnmatchcase
from pathlib import Path

from ..reasons import causes as causes_mod
from ..reasons.kinds import INTERNAL, remedy
from ..reasons.parse import classify, is_internal_error
from ..reasons.text import failure_lines, mask_ids, resumed_at, strip_comment
from ..records.compile_ids import compile_key
from ..records.decode import build
from ..records.origin import GraphBreakSite, Origin, Specialization
from ..records.run import CompileEvent
from ..records.watch import CauseCount, FunctionSummary, ReasonCount
from . import shared


def by_function(
    events: list[CompileEvent],
    *,
    cache_entries: dict[tuple, int] | None = None,
    qualnames: dict[tuple, str] | None = None,
    extras: dict[str, dict] | None = None,
    code_qualnames: dict[tuple, str] | None = None,
) -> list[FunctionSummary]:
    """Per compiled code object (name, file, line), in first-compiled order.

    ``extras``: per compile (keyed by records.compile_ids.compile_key), what the recorder saw
    beside the event (``compiled_as``, ``call_site``): a code object that is a library's closure
    (a decorator's wrapper) is then named after what the user compiled, its own name kept in
    ``code_name``. ``code_qualnames``:
    co_qualname per code object, to tell such a closure where ``qualnames`` is not given."""
    groups: dict[tuple, list[CompileEvent]] = {}
    for e in events:
        groups.setdefault((e.function, e.filename, e.line), []).append(e)
    sharing = shared.shared_functions(events)
    # each resume function compiled is a graph break of the code it resumes, listed or not: of
    # the file's functions of that name, the last one to start above the break line
    resumes: dict[tuple, set[tuple]] = {}
    for name, filename, line in groups:
        found = resumed_at(name or "")
        if found is None:
            continue
        parent, at = found
        starts = [k[2] for k in groups if k[0] == parent and k[1] == filename and k[2] is not None]
        above = [s for s in starts if s <= at]
        start = max(above) if above else (min(starts) if starts else None)
        resumes.setdefault((parent, filename, start), set()).add((name, line))
    out = []
    for key, group in groups.items():
        reasons: dict[tuple, int] = {}
        reason_origin: dict[tuple, Origin] = {}
        masked: set[str] = set()
        for e in group:
            if not e.recompile:
                continue
            lines = failure_lines(e.reason)
            raw = strip_comment(lines[0].split(": ", 1)[-1]) if lines else (e.reason or "")
            # object ids differ per backend callable, module or type: grouped without them
            text = mask_ids(raw)
            if text != raw:
                masked.add(text)
            detail = classify(e.reason) if e.reason and not e.reason_kind else None
            kind = e.reason_kind or (detail.kind if detail is not None else None)
            reasons[(kind, text)] = reasons.get((kind, text), 0) + 1
            if e.reason_origins and e.reason_origins[0] and (kind, text) not in reason_origin:
                reason_origin[(kind, text)] = e.reason_origins[0]
        ok = [e for e in group if not e.failed]
        latest = ok[-1] if ok else None

        def total(field: str, group: list[CompileEvent] = group) -> int | None:
            values = [getattr(e, field) for e in group]
            return None if any(v is None for v in values) else sum(values)

        listed = total("graph_breaks")
        resumed = len(resumes.get(key, ()))
        seen_breaks = max(listed, resumed) if listed is not None else (resumed or None)
        name = (qualnames or {}).get(key) or key[0] or "?"
        code_name = (code_qualnames or {}).get(key) or name
        seen = [(extras or {}).get(compile_key(e.compile_id, e.resets)) or {} for e in group]
        # one wrapper's code object may serve several things the user compiled: name them all
        names = list(dict.fromkeys(x["compiled_as"] for x in seen if x.get("compiled_as")))
        user_name = ", ".join(names) or None
        call_site = next((x["call_site"] for x in seen if x.get("call_site")), None)
        # only a closure named otherwise than what the user compiled is renamed (a decorator's
        # wrapper): a module's own forward, a local class's or a plain function keeps its name.
        # A closure that served several functions keeps its own name, listed with them in
        # shared_by: a name made of what it served would change with what the run compiled
        renamed = (
            user_name is not None
            and len(names) == 1
            and key not in sharing
            and ".<locals>." in code_name
            and all(n.rsplit(".", 1)[-1] != (key[0] or "") for n in names)
        )
        shared_closure = ".<locals>." in code_name and (len(names) > 1 or key in sharing)
        out.append(
            FunctionSummary(
                function=user_name
                if renamed and user_name
                else (code_name if shared_closure else name),
                filename=key[1],
                line=key[2],
                compiles=len(group),
                recompiles=sum(e.recompile for e in group),
                failed=sum(e.failed for e in group),
                graphs=total("graphs"),
                graph_breaks=seen_breaks,
                cache_entries=(cache_entries or {}).get(key),
                guard_count=latest.guard_count if latest else None,
                shape_env_guard_count=latest.shape_env_guard_count if latest else None,
                recompile_limit_hit=any(e.reason_kind == "recompile_limit_hit" for e in group),
                reasons=tuple(
                    ReasonCount(k, t, n, reason_origin.get((k, t)), t in masked)
                    for (k, t), n in reasons.items()
                ),
                causes=cause_counts(group, extras, sharing.get(key)),
                code_name=code_name if renamed else None,
                call_site=call_site,
                graph_break_origins=tuple(
                    build(GraphBreakSite, b, "graph break")
                    for b in _merged(seen, "graph_breaks", ("reason",), count=True)
                ),
                specializations=tuple(
                    build(Specialization, s, "specialization")
                    for s in _merged(seen, "specializations", ("source", "value"))
                ),
                shared_by=tuple(sharing.get(key) or ()),
                shared_remedy=_shared_remedy(group) if key in sharing else None,
                dynamo_graph_breaks=total("dynamo_graph_breaks"),
                internal_errors=_internal_errors(group),
            )
        )
    return out


def _internal_errors(events: list[CompileEvent]) -> tuple[ReasonCount, ...]:
    """The failed compiles that were torch's own assertions, by message, counted."""
    found: dict[str, int] = {}
    for e in events:
        if e.failed and is_internal_error(e.fail_reason):
            text = f"{e.fail_type}: {e.fail_reason}"
            found[text] = found.get(text, 0) + 1
    return tuple(ReasonCount(INTERNAL, t, n) for t, n in found.items())


def _merged(
    extras: list[dict], name: str, fields: tuple[str, ...], count: bool = False
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
                out[key] = dict(item)
    return tuple(out.values())


def cause_counts(
    events: list[CompileEvent],
    extras: dict[str, dict] | None = None,
    shared_by: list[str] | None = None,
) -> tuple[CauseCount, ...]:
    """The root causes of these recompiles (every failing guard, grouped; causes.py), each with
    the recompiles it is the first-ranked cause of: those first (dearer first, incidental ones
    last), then the ones that only also failed. A recompile of kind shared_code_object has the
    sharing as its first cause (``shared_by``: the functions), its guards after it."""
    found: dict[tuple, dict] = {}
    for e in events:
        if not e.recompile:
            continue
        lines = list(e.failures) or failure_lines(e.reason)
        group = causes_mod.group(lines)
        if e.reason_kind == shared.SHARED:
            group = [_shared_cause(e, shared_by), *group]
        # the origin of each entry's first failing guard (reason_origins follows reason's lines)
        firsts: dict[tuple[str, str], Origin | None] = {}
        every = [
            None if o is None else build(Origin, o, "origin")
            for o in ((extras or {}).get(compile_key(e.compile_id, e.resets)) or {}).get(
                "failure_origins"
            )
            or ()
        ]
        for line, origin in [
            *zip(failure_lines(e.reason), e.reason_origins or ()),
            *zip(lines, every),
        ]:
            entry, _, guard = line.partition(": ")
            if firsts.get((entry, strip_comment(guard))) is None:
                firsts[(entry, strip_comment(guard))] = origin
        for i, cause in enumerate(group):
            item = found.setdefault(
                cause.key(),
                {"cause": cause, "ids": [], "seen": 0, "order": len(found), "origin": None},
            )
            item["seen"] += 1
            # incidental only if it never was a recompile's sole cause
            if item["cause"].incidental and not cause.incidental:
                item["cause"] = replace(item["cause"], incidental=False)
            if item["origin"] is None:
                item["origin"] = next(
                    (
                        firsts[(en, g)]
                        for en in cause.entries
                        for g in cause.guards
                        if firsts.get((en, g))
                    ),
                    None,
                )
            if cause.what in ("length", "value"):
                item["cause"] = replace(
                    item["cause"],
                    before=causes_mod.merged_before(item["cause"].before, cause.before),
                )
            if i == 0:
                item["ids"].append(e.compile_id or "?")
    ordered = sorted(
        found.values(),
        key=lambda c: (
            not c["ids"],
            c["cause"].incidental,
            -len(c["ids"]),
            c["cause"].rank,
            c["order"],
        ),
    )
    return tuple(
        CauseCount(
            c["cause"].label(),
            c["cause"].what,
            c["cause"].source,
            c["cause"].dim,
            c["cause"].before,
            c["cause"].after,
            c["cause"].kind,
            c["cause"].incidental,
            len(c["ids"]),
            c["seen"],
            tuple(c["ids"]),
            c["origin"],
        )
        for c in ordered
    )


def _shared_remedy(events: list[CompileEvent]) -> str:
    detail = next((e.reason_detail for e in events if e.reason_kind == shared.SHARED), None)
    return remedy(shared.SHARED, "", detail)


def _shared_cause(e: CompileEvent, shared_by: list[str] | None) -> causes_mod.Cause:
    detail = e.reason_detail
    functions = shared_by or [
        (detail.function if detail else None) or "?",
        *((detail.compiled_for if detail else None) or ()),
    ]
    return causes_mod.Cause(
        "shared code",
        None,
        None,
        None,
        None,
        shared.SHARED,
        causes_mod.TENSOR,
        (),
        (shared.label(functions),),
    )


def matches(f: FunctionSummary, pattern: str) -> bool:
    """A glob or a substring of the function's name, its file:line, or its file name."""
    names = [f.function, f"{f.filename}:{f.line}", Path(f.filename or "").name]
    return any(fnmatchcase(n, pattern) or pattern in n for n in names)
