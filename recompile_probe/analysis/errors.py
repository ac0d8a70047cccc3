"""A strategy whose run raised: the error, the user line behind it, and why the strategy cannot
help while that line stays. Pure functions over records (no torch).

The commonest case: ``mark_dynamic`` on a dim the user's code forces to a constant (``if
x.shape[0] == 3:``, ``range(x.size(0))``). Dynamo raises ConstraintViolationError at the end of
the compile instead of specializing; the compile's ShapeEnv still names the line (origin role
``specialized``), kept in ``runs[].specializations`` for the failed compile.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

from ..reasons.kinds import no_fix_why
from ..records.origin import RunSpecialization
from ..records.run import Run
from ..strategies.model import Strategy

#: the inputs a ConstraintViolationError names: "Constraints violated (L['x'].size()[0])!"
_VIOLATED = re.compile(r"Constraints violated \((?P<sources>.+?)\)!")


@dataclass(frozen=True)
class ErrorExplanation:
    type: str  #: the exception class (the root cause where Dynamo wraps one)
    message: str  #: its first line
    call_index: int | None  #: the call that raised
    compile_id: str | None  #: the failed compile that raised it, where one did
    #: the inputs the error names (a constraint violation's sources); () where it names none
    sources: tuple[str, ...]
    #: the sizes and ints the user's code forced to a constant in that compile, the named
    #: sources' first; () where none was read
    specialized: tuple[RunSpecialization, ...]
    why: str  #: why this strategy cannot help, and what to do instead (advice, not measured)
    #: torch_internal_error where torch raised its own assertion (reasons.kinds); else None
    kind: str | None = None


def _sources(message: str) -> tuple[str, ...]:
    match = _VIOLATED.search(message)
    if match is None:
        return ()
    return tuple(s.strip() for s in match.group("sources").split(",") if s.strip())


def _line(spec: RunSpecialization) -> str | None:
    origin = spec.origin
    if origin is None:
        return None
    code = f" `{origin.code}`" if origin.code else ""
    return f"{os.path.basename(origin.file)}:{origin.line}{code}"


def explain_error(run: Run, strategy: Strategy | None = None) -> ErrorExplanation | None:
    """The explanation of a run that errored; None for one that did not."""
    if run.status != "error" or run.error is None:
        return None
    error = run.error
    failed = [
        e
        for e in run.compile_events
        if e.failed and (error.call_index is None or e.call_index == error.call_index)
    ]
    raised = next((e for e in failed if e.fail_type == error.type), failed[-1] if failed else None)
    cid = raised.compile_id if raised is not None else None
    sources = _sources(error.message) or _sources((raised.fail_reason or "") if raised else "")
    specs = [s for s in run.specializations or () if cid is not None and s.compile_id == cid]
    named = [s for s in specs if s.source in sources]
    specialized = tuple(named + [s for s in specs if s not in named])
    name = strategy.name if strategy is not None else run.strategy
    return ErrorExplanation(
        error.type,
        error.message,
        error.call_index,
        cid,
        sources,
        specialized,
        _why(error.type, name, sources, named or specs, run.specializations is None)
        if error.kind is None
        else no_fix_why(error.kind),
        error.kind,
    )


def _why(
    kind: str,
    strategy: str,
    sources: tuple[str, ...],
    specs: list[RunSpecialization],
    unknown: bool,
) -> str:
    if kind == "ConstraintViolationError":
        what = ", ".join(sources) or "a marked dim"
        first = specs[0] if specs else None
        line = _line(first) if first is not None else None
        if first is not None and line is not None:
            forced = f"{line} forces it to a constant ({first.value})"
        elif unknown:
            forced = "the user's code forces it to a constant (the line is n/a in this torch)"
        else:
            forced = "the user's code forces it to a constant (no line was recorded)"
        return (
            f"{strategy} insists that {what} stays dynamic, but {forced}: Dynamo raises instead "
            "of compiling, so no marking of that dim helps while the line stays. Change the line "
            "(branch or loop on tensors, or pass the value as a tensor); maybe_mark_dynamic "
            "instead specializes the dim silently there and recompiles per value; a strategy "
            "that leaves the dim static compiles once per value."
        )
    if kind in ("GuardOnDataDependentSymNode", "UserError") or "DataDependent" in kind:
        return (
            f"{strategy} made a size unbacked (no hint), and the user's code branches on it: "
            "Dynamo cannot pick a side. Guard the branch with torch._check(...) on the size, "
            "or keep that dim backed (mark_dynamic, dynamic_true)."
        )
    return (
        f"{strategy} raised {kind}, so its run stopped there and measured nothing after it; "
        "the error above is what to fix (or drop the strategy)."
    )
