"""Findings for a CI system, from the records: which line of the user's code each recompile,
broken budget, unserved size and rank divergence points at. No torch.

Each finding sits on the user's line the report's provenance names (the line behind a recompile's
first failing guard, the line behind an unserved size's guard, the function ranks compiled
differently); one with no such line, or whose line lies outside the repository, sits on the line
of the scenario file that set it (a budget's own line, else line 1). A line that recompiled in
several runs is one finding that lists the runs, so a CI system's cap on annotations per step
goes to distinct lines. The text carries the fix the same report measured, named as measured,
or the kind's remedy, named as not measured; a fix is written with the definitions its caller
hands over (a scenario's custom strategies), else the presets. No file is read here but the
user's lines a fingerprint holds.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ..reasons.kinds import remedy
from ..reasons.text import strip_comment
from ..records.finding import Finding, Kind, Severity
from ..records.origin import Origin
from ..records.report import Report, ScenarioRef
from ..records.run import CompileEvent, Run, Violation
from ..records.watch import WatchReport
from ..strategies.advice import Definitions
from ..strategies.builtins import BUILTINS, RANK_BUILTINS
from .budgets import describe
from .check import Outcome
from .fixes import Recompile, recompiles
from .ranks import divergence
from .verdicts import plural


def root() -> Path:
    """The repository root a CI system resolves annotation paths against."""
    for name in ("GITHUB_WORKSPACE", "CI_PROJECT_DIR"):
        if os.environ.get(name):
            return Path(os.environ[name])
    return Path.cwd()


@dataclass
class _Draft:
    """A finding being gathered: every run it was seen in joins one finding."""

    kind: Kind
    severity: Severity
    file: str | None
    line: int | None
    title: str
    message: str
    key: tuple[str, ...]
    seen_in: list[str] = field(default_factory=list)
    count: int = 0


class _Findings:
    def __init__(self, base: Path) -> None:
        self.base = base
        self.drafts: dict[tuple[str, ...], _Draft] = {}
        self.sources: dict[str, list[str]] = {}

    def where(self, origin: Origin | None) -> tuple[str | None, int | None]:
        """An origin's file relative to the root and its line; (None, None) outside the root."""
        if origin is None or not origin.file or not origin.line:
            return None, None
        file = self.relative(origin.file)
        return (file, origin.line) if file else (None, None)

    def relative(self, path: str | None) -> str | None:
        if not path:
            return None
        p = Path(path)
        if not p.is_absolute():
            p = Path.cwd() / p
        try:
            return p.resolve().relative_to(self.base.resolve()).as_posix()
        except ValueError:
            return None

    def add(
        self,
        kind: Kind,
        severity: Severity,
        place: tuple[str | None, int | None],
        title: str,
        message: str,
        subject: Iterable[str],
        seen: str,
        count: int = 1,
    ) -> None:
        file, line = place
        key = (kind.value, file or "", str(line or ""), *subject)
        draft = self.drafts.get(key)
        if draft is None:
            draft = self.drafts[key] = _Draft(kind, severity, file, line, title, message, key)
        elif _RANK[severity] > _RANK[draft.severity]:
            draft.severity = severity
        if seen not in draft.seen_in:
            draft.seen_in.append(seen)
        draft.count += count

    def source_line(self, file: str | None, line: int | None) -> str:
        """The text of ``file``'s line ``line`` (what a fingerprint holds: an edit above it moves
        the number, not the text), else the number."""
        if not file or not line:
            return ""
        if file not in self.sources:
            try:
                self.sources[file] = (self.base / file).read_text(errors="replace").splitlines()
            except OSError:
                self.sources[file] = []
        lines = self.sources[file]
        return lines[line - 1].strip() if 0 < line <= len(lines) else str(line)

    def done(self) -> tuple[Finding, ...]:
        out = []
        for d in self.drafts.values():
            message = d.message
            if d.seen_in:
                message += "\nSeen in: " + "; ".join(d.seen_in) + "."
            what = (d.kind.value, d.file or "", self.source_line(d.file, d.line), *d.key[3:])
            fingerprint = hashlib.sha256("\0".join(what).encode()).hexdigest()[:32]
            out.append(
                Finding(
                    d.kind,
                    d.severity,
                    d.file,
                    d.line,
                    d.title,
                    message,
                    fingerprint,
                    tuple(d.seen_in),
                )
            )
        out.sort(key=lambda f: (-_RANK[f.severity], f.file or "~", f.line or 0, f.title))
        return tuple(out)


_RANK = {Severity.NOTICE: 0, Severity.WARNING: 1, Severity.ERROR: 2}
#: sizes in a guard's text: two recompiles of one guard at other sizes are one finding
_NUMBERS = re.compile(r"\d+")


# --- run reports -------------------------------------------------------------------------------


def of_reports(
    reports: Sequence[Report],
    base: Path | None = None,
    definitions: Mapping[ScenarioRef, Definitions] | None = None,
) -> tuple[Finding, ...]:
    """Every run's recompiles and unserved sizes; broken budgets where the runs were judged.
    ``definitions``: a report's scenario -> what its fixes are written with (else the
    presets)."""
    found = _Findings(base or root())
    for report in reports:
        written = (definitions or {}).get(report.scenario, PRESETS)
        _report(found, report, written, judged=any(r.violations for r in report.runs))
    return found.done()


def of_check(outcome: Outcome, base: Path | None = None) -> tuple[Finding, ...]:
    """A `check`: broken budgets (error), recompiles and unserved sizes of runs that broke one
    (error) or held every budget (notice), baseline regressions, scenarios that could not run."""
    found = _Findings(base or root())
    for each in outcome.reports:
        _report(found, each, outcome.definitions.get(each.scenario, PRESETS), judged=True)
    by_name = {r.scenario.name: r for r in outcome.reports}
    for change in outcome.changes:
        if change.kind != "regression":
            continue
        report = by_name.get(change.scenario)
        path = report.scenario.path if report is not None else None
        found.add(
            Kind.REGRESSION,
            Severity.ERROR,
            (found.relative(path), 1 if found.relative(path) else None),
            f"recompile-probe: {change.metric} regressed ({change.strategy}, {change.sequence})",
            f"{change.metric}: {change.old} in the baseline, {change.new} now "
            f"(scenario {change.scenario}, sequence {change.sequence}, strategy "
            f"{change.strategy}).",
            (change.scenario, change.sequence, change.strategy, change.metric),
            f"{change.scenario} / {change.sequence} / {change.strategy}",
        )
    for scenario, error in outcome.failures:
        path = found.relative(scenario.path)
        found.add(
            Kind.SCENARIO,
            Severity.ERROR,
            (path, 1 if path else None),
            f"recompile-probe: scenario {scenario.name} could not run",
            error.message,
            (scenario.name,),
            scenario.name,
        )
    return found.done()


def _report(found: _Findings, report: Report, written: Definitions, judged: bool) -> None:
    strategies, args = written.strategies, written.arguments(report.runs)
    scenario_file = found.relative(report.scenario.path)
    fallback = (scenario_file, 1 if scenario_file else None)
    for name, _ in report.sequences():
        for run in report.runs_for(name):
            # a fix is measured on the same rank's runs of this sequence
            runs = [r for r in report.runs_for(name) if r.rank == run.rank]
            seen = f"{report.scenario.name} / {run.sequence_name} / {run.strategy}"
            broke = bool(run.violations)
            level = Severity.ERROR if broke else Severity.NOTICE if judged else Severity.WARNING
            events = {e.compile_id: e for e in run.compile_events}
            for r in recompiles(run, runs, strategies, args):
                event = events.get(r.compile_id)
                place = found.where((r.reason_origins or (None,))[0])
                if place[0] is None:
                    place = fallback
                found.add(
                    Kind.RECOMPILE,
                    level,
                    place,
                    _recompile_title(r),
                    _recompile_text(r, event, run),
                    (report.scenario.name, r.reason_kind or "other", _subject(r, event)),
                    seen,
                )
            for v in run.violations:
                found.add(
                    Kind.BUDGET,
                    Severity.ERROR,
                    _budget_place(found, v, fallback),
                    f"recompile-probe: {v.budget} broken ({run.strategy}, {run.sequence_name})",
                    _budget_text(v, run),
                    (report.scenario.name, run.sequence_name, run.strategy, v.budget),
                    seen,
                )
            _unserved(found, run, seen, fallback, judged)
    if report.rank_runs is not None:
        for c in report.rank_runs.comparisons:
            if c.agree is False:
                found.add(
                    Kind.RANK_DIVERGENCE,
                    Severity.ERROR if judged else Severity.WARNING,
                    fallback,
                    f"recompile-probe: ranks compiled differently ({c.strategy}, {c.sequence})",
                    f"Under {c.strategy} on sequence {c.sequence} the ranks compiled "
                    f"differently ({', '.join(c.differs)}): {divergence(c)}. A collective "
                    f"after a compile one rank makes and another does not can hang.",
                    (report.scenario.name, c.sequence, c.strategy),
                    f"{report.scenario.name} / {c.sequence} / {c.strategy}",
                )


def _recompile_title(r: Recompile) -> str:
    kind = r.reason_kind or "other"
    return f"recompile-probe: recompile ({kind}){f' at {r.change}' if r.change else ''}"


def _subject(r: Recompile, event: CompileEvent | None) -> str:
    """What makes two recompiles on one line the same finding: the guarded source and dim, not
    the sizes or ids (they move between runs)."""
    detail = r.reason_detail
    parts = [
        str(getattr(detail, k))
        for k in ("what", "source", "dim")
        if detail is not None and getattr(detail, k) is not None
    ]
    return "/".join(parts) or (event.function or "" if event is not None else "")


def _recompile_text(r: Recompile, event: CompileEvent | None, run: Run) -> str:
    first = strip_comment(r.reason.splitlines()[0]) if r.reason else "no reason logged"
    lines = [
        f"Dynamo recompiled{f' `{event.function}`' if event and event.function else ''} "
        f"at call {r.call_index}: {first}"
    ]
    if r.fixes:
        fix = r.fixes[0]
        compiles = "n/a" if fix.compiles is None else plural(fix.compiles, "compile")
        compared = "outputs match eager" if fix.outputs_compared else "outputs not compared"
        lines.append(
            f"Measured fix, in this report: {fix.strategy} ({compiles} against "
            f"{'n/a' if run.compiles is None else run.compiles} on this sequence, {compared}):"
        )
        lines += [f"    {line}" for line in fix.change or ("(no code change)",)]
        lines += [f"    {line}  # not measured" for line in fix.advice]
    elif r.no_fix_why:
        why = r.no_fix_why.replace(" (the line below)", "")
        lines.append(f"No strategy of this run removed it: {why}")
    if r.specialization:
        lines.append(r.specialization)
    return "\n".join(lines)


def _budget_place(
    found: _Findings, v: Violation, fallback: tuple[str | None, int | None]
) -> tuple[str | None, int | None]:
    """The scenario line that set the budget (``file.yaml:12``); a flag's budget: line 1."""
    if v.source and ":" in v.source and not v.source.startswith("-"):
        path, _, line = v.source.rpartition(":")
        rel = found.relative(path)
        if rel is not None and line.isdigit():
            return rel, int(line)
    return fallback


def _budget_text(v: Violation, run: Run) -> str:
    lines = [f"{describe(v)} (strategy {run.strategy}, sequence {run.sequence_name})."]
    if v.source:
        lines.append(f"Budget set at {v.source}.")
    lines += [f"- {reason}" for reason in v.reasons[:5]]
    if len(v.reasons) > 5:
        lines.append(f"- … {len(v.reasons) - 5} more in the report")
    return "\n".join(lines)


def _unserved(
    found: _Findings, run: Run, seen: str, fallback: tuple[str | None, int | None], judged: bool
) -> None:
    c = run.coverage
    if c is None or not c.unserved:
        return
    asked = any(v.budget == "no_recompile_in" for v in run.violations)
    miss = c.unserved[0]
    place = found.where(miss.origin)
    if place[0] is None:
        place = fallback
    at = ", ".join(f"{k} = {v}" for k, v in (c.counterexample or {}).items())
    span = ", ".join(f"{k} ∈ [{lo}, {hi}]" for k, (lo, hi) in c.ranges.items())
    text = f"Smallest size not served in {span}: {at} ({miss.outcome}"
    text += f", guard `{miss.guard}`)" if miss.guard else ")"
    parts = (
        f"{len(c.unserved)} unserved part(s) in all"
        if c.complete
        else f"{len(c.unserved)} unserved part(s) listed, the list partial"
    )
    text += f"; {parts}, decided {c.method} ({c.scope})."
    found.add(
        Kind.UNSERVED,
        Severity.ERROR if asked else Severity.NOTICE if judged else Severity.WARNING,
        place,
        f"recompile-probe: {at} {miss.outcome}s ({run.strategy})",
        text,
        (seen, miss.reason_kind or "", miss.outcome),
        seen,
    )


#: the presets: what writes the fixes of a report whose scenario's own strategies are not known
PRESETS = Definitions({**RANK_BUILTINS, **BUILTINS})


# --- a program's functions (watch, summarize) --------------------------------------------------


def of_functions(report: WatchReport, base: Path | None = None) -> tuple[Finding, ...]:
    """Each function's recompile reasons at their user line (what watch measured; the remedy
    is the reason kind's, not measured), and functions the ranks compiled differently."""
    found = _Findings(base or root())
    # every process's, as watch's own budget counts them (a DataLoader worker's, a rank's)
    everywhere = [(p.role, f) for p in report.processes for f in p.functions] or [
        (None, f) for f in report.functions
    ]
    for role, f in everywhere:
        own = found.relative(f.filename)
        fallback = (own, f.line if own else None)
        for reason in f.reasons:
            place = found.where(reason.origin)
            if place[0] is None:
                place = fallback
            kind = reason.kind or "other"
            found.add(
                Kind.RECOMPILE,
                Severity.WARNING,
                place,
                f"recompile-probe: {f.function} recompiled ({kind})",
                f"{reason.count} recompile(s) of `{f.function}`: {reason.text}\n"
                f"Remedy for {kind} (not measured here; `recompile-probe suggest` measures "
                f"one): {remedy(reason.kind, reason.text)}",
                (f.function, kind, _NUMBERS.sub("N", reason.text)),
                f"{f.function} ({role})" if role else f.function,
                reason.count,
            )
    for d in report.rank_divergence or ():
        # the user line behind the first compile where the ranks part, else the function's
        own = found.relative(d.filename)
        place = found.where(d.first.origin if d.first is not None else None)
        found.add(
            Kind.RANK_DIVERGENCE,
            Severity.ERROR,
            place if place[0] is not None else (own, d.line if own else None),
            f"recompile-probe: ranks compiled {d.function} differently",
            d.risk,
            (d.function,),
            d.function,
        )
    return found.done()
