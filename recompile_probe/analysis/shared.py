"""Shared code objects: one code object that Dynamo compiled for several functions, told apart
by the functions its closure held at each compile. No torch.

A decorator's ``wrapped(*args, **kwargs)`` is one code object for every function it decorates.
Once a graph break makes Dynamo enter it as a frame of its own, the entries compiled for one
function reject the call of another (``___check_type_id(args[0], ...)``, ``len(args) == 1``, the
id of the wrapped function's code), and all of them count against that one code object's
recompile limit. The guard text cannot tell this apart from a swapped module; the closure can.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable

from ..reasons.text import entry_line, failure_lines
from ..records.reason_detail import ReasonDetail
from ..records.run import ClosureFunction, CompileEvent, SharedCode

SHARED = "shared_code_object"


def _fn_key(fn: ClosureFunction) -> tuple:
    return (fn.module, fn.name, fn.file, fn.line)


def closure_key(fns: Iterable[ClosureFunction]) -> tuple:
    """The identity of what one compile's closure held: equal keys, the same function."""
    return tuple(_fn_key(f) for f in fns)


def _code(e: CompileEvent) -> tuple:
    return (e.function, e.filename, e.line)


def names(closures: Iterable[tuple[ClosureFunction, ...]]) -> list[str]:
    """One name per distinct closure, in first-seen order: its functions that not every closure
    holds (the wrapped function, not the helpers every wrapper closes over)."""
    distinct: dict[tuple, tuple[ClosureFunction, ...]] = {}
    for fns in closures:
        distinct.setdefault(closure_key(fns), fns)
    if len(distinct) < 2:
        return [", ".join(f.name or "?" for f in fns) for fns in distinct.values()]
    common = set.intersection(*({_fn_key(f) for f in fns} for fns in distinct.values()))
    out = []
    for fns in distinct.values():
        own = [f for f in fns if _fn_key(f) not in common] or list(fns)
        out.append(", ".join(f.name or "?" for f in own) or "?")
    return out


def label(functions: list[str] | tuple[str, ...]) -> str:
    return f"one code object shared by {len(functions)} functions: {', '.join(functions)}"


def shared_functions(events: Iterable[CompileEvent]) -> dict[tuple, list[str]]:
    """Per code object (function, file, line) compiled for two functions or more, their names."""
    closures: dict[tuple, list[tuple[ClosureFunction, ...]]] = {}
    for e in events:
        if e.closure_functions:
            closures.setdefault(_code(e), []).append(e.closure_functions)
    out = {}
    for code, seen in closures.items():
        if len({closure_key(fns) for fns in seen}) > 1:
            out[code] = names(seen)
    return out


def shared_code(events: Iterable[CompileEvent]) -> tuple[SharedCode, ...]:
    """The shared code objects of these events."""
    events = list(events)
    out = []
    for code, functions in shared_functions(events).items():
        mine = [e for e in events if _code(e) == code]
        out.append(
            SharedCode(
                function=code[0],
                filename=code[1],
                line=code[2],
                functions=tuple(functions),
                compiles=len(mine),
                recompiles=sum(e.reason_kind == SHARED for e in mine),
            )
        )
    return tuple(out)


def refine(
    event: CompileEvent, earlier: Iterable[CompileEvent], isolate_recompiles: bool | None = None
) -> CompileEvent:
    """A recompile whose every rejecting entry was compiled for another function of the same
    code object is ``shared_code_object``, its detail naming both (``function``,
    ``compiled_for``); any other recompile keeps its kind. Exact: an entry whose closure was not
    seen leaves the kind as it is. ``isolate_recompiles``: whether this torch's torch.compile
    takes that argument (the remedy names it only then), kept in the detail."""
    if (
        not event.recompile
        or event.failed
        or not event.closure_functions
        or event.reason_kind == "recompile_limit_hit"
    ):
        return event
    entries = {entry_line(line)[0] for line in failure_lines(event.reason)} - {None}
    if not entries:
        return event
    made = {
        e.compile_id: e
        for e in earlier
        if e.compile_id in entries
        and e.resets == event.resets
        and _code(e) == _code(event)
        and not e.failed
    }
    if set(made) != entries or any(e.closure_functions is None for e in made.values()):
        return event
    mine = closure_key(event.closure_functions)
    theirs = [e.closure_functions or () for e in made.values()]
    if any(closure_key(fns) == mine for fns in theirs):
        return event
    every = names([event.closure_functions, *theirs])
    detail = dataclasses.replace(
        event.reason_detail or ReasonDetail(SHARED, "code object"),
        kind=SHARED,
        function=every[0],
        compiled_for=tuple(every[1:]),
        isolate_recompiles=isolate_recompiles,
    )
    return dataclasses.replace(event, reason_kind=SHARED, reason_detail=detail)
