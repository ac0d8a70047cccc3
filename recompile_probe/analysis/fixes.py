"""Measured fixes: for each recompile, the strategies of the same run that did not recompile on
that call and matched eager, with the change to make; and why none did. No torch.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..reasons import frameworks
from ..reasons.kinds import no_fix_why, tries
from ..records.origin import Origin
from ..records.reason_detail import ReasonDetail
from ..records.run import Run
from ..scenario.builtin_targets import BUILTIN_TARGETS
from ..sizes.points import Point, varying
from ..strategies.advice import Arguments, check_lines, code
from ..strategies.model import BATCH_SOURCES, Strategy
from .sequence import moved, transitions
from .verdicts import eligible, no_effect, plural


def acting_symbols(run: Run) -> tuple[str, ...]:
    """The symbols a one-kind mark acted on in this run: those that vary over its points."""
    points = [Point.of(p) for p in run.points] or [Point.batch(b) for b in run.sequence]
    return varying(points)


def _has_checks(target: str) -> bool:
    builtin = BUILTIN_TARGETS.get(target)
    return builtin is not None and builtin.has_checks


@dataclass(frozen=True)
class Fix:
    strategy: str
    change: tuple[str, ...]  #: what the measured run did, as a change to the user's code
    compiles: int | None
    steady_state_us: float | None
    #: lines no run of this report executed (e.g. mark_unbacked's torch._check template)
    advice: tuple[str, ...] = ()
    #: False: the run's outputs could not be compared with eager, so this fix is measured by
    #: its counts only (its outputs_detail says what could not be compared)
    outputs_compared: bool = True


@dataclass(frozen=True)
class Recompile:
    call_index: int
    batch_before: int | None
    batch_after: int
    compile_id: str | None
    reason: str | None
    reason_kind: str | None
    reason_detail: ReasonDetail | None
    fixes: tuple[Fix, ...]
    no_fix_why: str | None
    #: what moved at this call: "B 1 → 2", "S 7 → 33", "step 1 at B 2, S 7" (analysis.moved)
    change: str = ""
    #: the point of the call, every size symbol -> size; None in a report written before points
    sizes: dict | None = None
    #: per failing guard line of ``reason``: the user line behind it, or None
    reason_origins: tuple[Origin | None, ...] | None = None
    #: user_specialization: the line to change, why marking alone cannot help, and what a run
    #: of this report that marked the dim did (measured), or that none measured it
    specialization: str | None = None


#: the code line of a measured fix whose strategy's definition is not known to the reader
UNDEFINED = (
    "how this strategy is written is in the scenario file that defines it, not read here "
    "(missing, or changed since the report)"
)


def recompiles(
    run: Run, runs: list[Run], strategies: Mapping[str, Strategy], args: Arguments
) -> list[Recompile]:
    """Each recompile of ``run``, with the strategies of the same sequence that measurably did
    not recompile on that call and matched eager (or whose outputs could not be compared:
    fixes by counts only, after the others)."""
    out = []
    events = {e.compile_id: e for e in run.compile_events}
    runs = [r for r in runs if r.sequence_name == run.sequence_name]
    for t in transitions(run):
        event = events.get(t.compile_id)
        fixes = []
        worse = []
        marking: set[str] = set()  # fixes that mark tensors: a driver's come after its options
        for other in runs:
            # outputs not compared (None) stay a fix measured by counts, labelled as such
            if other is run or not eligible(other, runs) or other.outputs_match is False:
                continue
            call = other.calls[t.call_index] if t.call_index < len(other.calls) else None
            if call is None or call.event in ("recompile", "error", "eager"):
                continue
            if _more_compiles(other, run):  # no recompile here, more over the sequence
                worse.append(other)
                continue
            strategy = strategies.get(other.strategy)
            if strategy is None:  # measured, and defined where this reader cannot see
                fixes.append(
                    Fix(
                        other.strategy,
                        (f"# {UNDEFINED}",),
                        other.compiles,
                        other.steady_state_us,
                        (),
                        other.outputs_match is True,
                    )
                )
                continue
            measured = _has_checks(other.target)
            acting = acting_symbols(other)
            if _marks_tensors(strategy):
                marking.add(other.strategy)
            fixes.append(
                Fix(
                    other.strategy,
                    tuple(code(strategy, args, acting, checks_measured=measured)),
                    other.compiles,
                    other.steady_state_us,
                    () if measured else tuple(check_lines(strategy, args, acting)),
                    other.outputs_match is True,
                )
            )
        # through a driver (generate()) the program builds the tensors: its own options, the
        # compile call and config lines come before marks that need a wrapper around the target
        fixes.sort(
            key=lambda f: (
                not f.outputs_compared,
                args.driver is not None and f.strategy in marking,
                f.compiles if f.compiles is not None else 1 << 30,
                f.steady_state_us or 0.0,
            )
        )
        kind = event.reason_kind if event else None
        call = run.calls[t.call_index] if t.call_index < len(run.calls) else None
        found = event.reason_origins if event else None
        special = None
        if kind == "user_specialization" and event is not None:
            special = specialization_fix(
                event.reason_detail,
                (found or (None,))[0],
                t.call_index,
                run,
                runs,
                strategies,
            )
        out.append(
            Recompile(
                t.call_index,
                t.batch_before,
                t.batch_after,
                t.compile_id,
                t.reason,
                kind,
                event.reason_detail if event else None,
                tuple(fixes),
                None
                if fixes
                else _with_hint(
                    " ".join(
                        filter(
                            None,
                            (
                                no_fix_why(kind, event.reason_detail if event else None),
                                _worse_overall(worse, run),
                                _tried(kind, t.call_index, run, runs, worse),
                            ),
                        )
                    ),
                    kind,
                    event,
                    _static_cache_measured(t.call_index, run, runs, strategies),
                ),
                moved(run, t),
                call.sizes if call else None,
                None if found is None else tuple(found),
                special,
            )
        )
    return out


def _more_compiles(other: Run, run: Run) -> bool:
    return other.compiles is not None and run.compiles is not None and other.compiles > run.compiles


def _figures(run: Run) -> str:
    if run.compiles is None:
        return "n/a compiles"
    failed = f" ({run.failed_compiles} failed)" if run.failed_compiles else ""
    return f"{plural(run.compiles, 'compile')}{failed}"


def _worse_overall(worse: list[Run], run: Run) -> str | None:
    """The strategies that did not recompile on this call but compiled more over the sequence:
    measured, and no fix."""
    if not worse:
        return None
    said = "; ".join(f"{o.strategy} {_figures(o)}" for o in worse)
    return (
        f"Measured in this report, no fix: {said} against {_figures(run)} for {run.strategy} "
        "(no recompile on this call, more compiles over the sequence)."
    )


def _tried(
    kind: str | None, call_index: int, run: Run, runs: list[Run], said: list[Run]
) -> str | None:
    """The kind's strategies (``Kind.tries``) as this report measured them at this call, and
    those it did not run, named as not measured; ``said``: runs already named."""
    names = [n for n in tries(kind) if n != run.strategy and n not in {r.strategy for r in said}]
    if not names:
        return None
    by_name = {r.strategy: r for r in runs}
    measured, unmeasured = [], []
    counted = False  # a strategy described by its compiles: say the explained run's beside it
    for name in names:
        other = by_name.get(name)
        if other is None:
            unmeasured.append(name)
            continue
        call = other.calls[call_index] if call_index < len(other.calls) else None
        if other.status != "ok" or call is None:
            what = f"did not finish this call ({other.status})"
        elif call.event == "recompile":
            what = "recompiled at this call too"
        elif no_effect(other, runs):
            what = other.no_effect or ""
        elif other.outputs_match is False:
            what = "did not recompile here, but its outputs differ from eager"
        else:
            what, counted = f"made {_figures(other)} over the sequence", True
        measured.append(f"{name} {what}")
    out = []
    if measured:
        against = f" (against {_figures(run)} for {run.strategy})" if counted else ""
        out.append(f"Measured in this report: {'; '.join(measured)}{against}.")
    if unmeasured:
        out.append(f"Not measured in this report: try {' or '.join(unmeasured)}.")
    return " ".join(out)


def _with_hint(why: str, kind: str | None, event: Any, measured: str | None) -> str:
    """The kind's reason, and the framework's advice where the recompile's files show one."""
    if event is None:
        return why
    files = [event.filename, *(o.file for o in event.reason_origins or () if o)]
    hint = frameworks.hints(kind, event.reason_detail, files, measured)
    return f"{why} {hint}" if hint else why


def _static_cache_measured(
    call_index: int, run: Run, runs: list[Run], strategies: Mapping[str, Strategy]
) -> str | None:
    """What this report's static-cache runs did at this call (they did not remove it, or it
    would have a fix); None when the report has none."""
    said = []
    for other in runs:
        strategy = strategies.get(other.strategy)
        if (
            other is run
            or strategy is None
            or not frameworks.is_static_cache(strategy.driver_options)
        ):
            continue
        call = other.calls[call_index] if call_index < len(other.calls) else None
        if other.status != "ok" or call is None:
            said.append(f"{other.strategy} did not finish this call")
        elif call.event == "recompile":
            said.append(f"{other.strategy} recompiled at this call too")
        else:
            said.append(
                f"{other.strategy} did not recompile here, but is no fix: {_why_not(other, runs)}"
            )
    return f"Measured in this report: {'; '.join(said)}." if said else None


def _why_not(run: Run, runs: list[Run]) -> str:
    if run.outputs_match is False:
        return "its outputs differ from eager"
    said = no_effect(run, runs)
    if said:
        return said
    return "it did not finish with outputs matching eager"


def _marks_tensors(strategy: Strategy) -> bool:
    """The strategy calls a mark on tensors (mark_dynamic, mark_unbacked, ...): through a
    driver, code that needs a wrapper around the target."""
    return strategy.mark is not None or bool(strategy.marks)


def _marks(strategy: Strategy | None) -> bool:
    """The strategy marks dims (mark_dynamic, mark_unbacked, ...) or names them as sources."""
    return strategy is not None and (
        _marks_tensors(strategy) or any(v == BATCH_SOURCES for v in strategy.config.values())
    )


def specialization_fix(
    detail: ReasonDetail | None,
    origin: Origin | None,
    call_index: int,
    run: Run,
    runs: list[Run],
    strategies: Mapping[str, Strategy],
) -> str:
    """The fix for a size the user's code forced to a constant: the line to change, why marking
    cannot help, and what each marking run of the same sequence measurably did at that call."""
    source = (detail.source if detail else None) or "the value"
    if detail is not None and detail.what == "size" and detail.dim is not None:
        source = f"{source}.size()[{detail.dim}]"
    value = detail.expected if detail else None
    if origin is not None:
        text = f" `{origin.code}`" if origin.code else ""
        line = f"{os.path.basename(origin.file)}:{origin.line}{text}"
        head = (
            f"change {line}: it needs {source} as a concrete int"
            f"{f' (== {value})' if value else ''}, so every new value compiles again "
            "(e.g. keep the loop or branch on tensors, or pass the count as a tensor)."
        )
    else:
        head = (
            f"the user's code needs {source} as a concrete int (the line is n/a in this "
            "torch): change that code."
        )
    why = (
        "Marking alone cannot help: a marked dim that user code specializes raises a "
        "constraint violation (mark_dynamic) or is specialized and recompiles anyway."
    )
    measured = []
    for other in runs:
        if other is run or not _marks(strategies.get(other.strategy)):
            continue
        if (
            other.status == "error"
            and other.error is not None
            and (other.error.call_index is None or other.error.call_index <= call_index)
        ):
            measured.append(f"{other.strategy} raised {other.error.type}: {other.error.message}")
            continue
        call = other.calls[call_index] if call_index < len(other.calls) else None
        if call is None or other.status != "ok":
            continue
        if call.event == "recompile":
            measured.append(f"{other.strategy} recompiled anyway at call {call_index}")
        elif call.event == "hit":
            measured.append(f"{other.strategy} did not recompile at call {call_index}")
    tail = (
        "Measured in this report: " + "; ".join(m.rstrip(".") for m in measured) + "."
        if measured
        else "No run of this report marked that dim: not measured."
    )
    return f"{head} {why} {tail}"
