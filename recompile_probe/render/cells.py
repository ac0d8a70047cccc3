"""How figures read in human formats (terminal, Markdown, HTML), one cell at a time. No torch."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path

from ..analysis.sequence import at_call, batch_only, call_point, points_of, run_points, stepped
from ..analysis.shared import label as shared_label
from ..analysis.verdicts import noisy, plural
from ..reasons import causes
from ..reasons.text import entry_line, failure_lines, split_parts, strip_comment, without_comments
from ..records.compile_ids import frame_of
from ..records.coverage import Method, Scope
from ..records.origin import Origin
from ..records.report import Environment
from ..records.run import Call, Run, Violation
from ..scenario.keys import MAX_KEYS, RANGE_KEYS
from ..sizes.ranges import format_box, format_ranges

NA = "n/a"
GLYPHS = {"compile": "●", "recompile": "▲", "hit": "·", "error": "✗", "eager": "○"}
#: a compile or recompile attempt that failed (e.g. the recompile limit hit) and handed no graph
#: to the backend: the call ran without compiled code for that frame
FAILED_GLYPH = "△"
LEGEND = "● compile  ▲ recompile  △ failed compile (no graph)  · cache hit  ○ ran eagerly  ✗ error"
#: said under the legend when a driver called the target several times in a point
GROUPED = "One column per point: the calls the driver made in it, left to right."
#: marks a µs/call figure too noisy to rank on (analysis.NOISE_RATIO)
NOISY = "~"

#: (header, help) of the summary columns, in order
COLUMNS = (
    ("strategy", ""),
    ("compiles", "Dynamo compilations (metrics records), failed ones included"),
    ("recompiles", "compiles of a frame that already had a cache entry"),
    ("graphs", "graphs handed to the backend (CompileCounter)"),
    ("guards", "guard_count of the target frame's newest cache entry (compilation metrics)"),
    ("shape\nguards", "shape_env_guard_count of the target frame's newest cache entry"),
    ("compile\nms", "sum of dynamo_cumulative_compile_time_us"),
    (
        "µs/call",
        "median wall time per call of the last point re-run (~: too noisy to rank)",
    ),
    ("guard\nµs", "warm guard_manager.check of the entry that served the last call"),
    ("outputs", "equal to eager, tensor by tensor (assert_close; integers exact)"),
    ("status", ""),
)
#: shown after "compiles" only when a run of the sequence had a failed compile
FAILED_COLUMN = (
    "failed",
    "compile attempts that failed (recompile limit, data-dependent guard, "
    "backend error): counted in compiles, no cache entry",
)


#: shown before "outputs" only where some run of the sequence was asked about a range
COVERS_COLUMN = (
    "covers",
    "sizes of the declared range the cache entries serve, and how it was decided "
    "(proved, enumerated, sampled; docs/coverage.md)",
)


def columns(runs: list[Run]) -> tuple[tuple[str, str], ...]:
    """The summary columns for these runs: "failed" only where some run had a failed compile,
    "covers" only where some run was asked about a range."""
    out: tuple[tuple[str, str], ...] = COLUMNS
    if coverage_asked(runs):
        out = out[:-2] + (COVERS_COLUMN,) + out[-2:]
    if any(r.failed_compiles for r in runs):
        out = out[:2] + (FAILED_COLUMN,) + out[2:]
    return out


def num(value: object, fmt: str = "{}") -> str:
    return NA if value is None else fmt.format(value)


def outputs(run: Run) -> str:
    if run.status == "unsupported":
        return "-"
    return {True: "match", False: "DIFFER", None: NA}[run.outputs_match]


def steady(run: Run) -> str:
    text = num(run.steady_state_us, "{:.1f}")
    return NOISY + text if run.steady_state_us is not None and noisy(run) else text


def row(run: Run, with_failed: bool = False, with_covers: bool = False) -> list[str]:
    values = [
        run.strategy,
        num(run.compiles),
        num(run.recompiles),
        num(run.graphs),
        num(run.guard_count),
        num(run.shape_env_guard_count),
        num(run.compile_time_ms, "{:.1f}"),
        steady(run),
        num(run.guard_check_us, "{:.1f}"),
        outputs(run),
        run.status,
    ]
    if with_covers:
        values.insert(-2, covers(run))
    if with_failed:
        values.insert(2, num(run.failed_compiles))
    return values


def glyph(call: Call) -> str:
    if call.event in ("compile", "recompile") and call.failed_compiles and call.graphs == 0:
        return FAILED_GLYPH
    return GLYPHS.get(call.event, "?")


def by_point(run: Run, count: int) -> list[list[Call]]:
    """The run's calls under each of the sequence's ``count`` points (a report written before
    points has one call per point, in order)."""
    groups: list[list[Call]] = [[] for _ in range(count)]
    for call in run.calls:
        k = call.point_index if call.point_index is not None else call.index
        if 0 <= k < count:
            groups[k].append(call)
    return groups


def plain(runs: list[Run]) -> bool:
    """One call per point and only B moves: the views read as they did before size symbols."""
    return batch_only(points_of(runs)) and not any(map(stepped, runs))


def timeline(run: Run) -> str:
    if not stepped(run):
        return " ".join(glyph(c) for c in run.calls)
    count = len(run_points(run))
    return " ".join("".join(glyph(c) for c in group) for group in by_point(run, count) if group)


def reason(text: str | None) -> str:
    """Reason lines without Dynamo's trailing source comments (the JSON keeps the raw text)."""
    return without_comments(text) if text else NA


def reason_with_origins(
    run: Run, compile_id: str | None, text: str | None, fold: bool = False, width: int = 80
) -> str:
    """A reason's lines, each failing guard followed by the user line behind it, if known
    (within ``width``). ``fold``: its causes instead, the other failing guards counted."""
    event = next((e for e in run.compile_events if e.compile_id == compile_id), None)
    found = list(event.reason_origins or ()) if event is not None else []
    room = max(width - 2, 40)
    if fold:
        folded = folded_reason(
            text,
            found,
            lambda o, static: [f"  {w}"] if (w := origin(o, room, static, True)) else [],
        )
        if folded is not None:
            return "\n".join(folded)
    out = []
    for line in reason(text).splitlines():
        out.append(line)
        if found and failure_lines(line):
            where = origin(found.pop(0), room, " size mismatch " in line, short=True)
            if where:
                out.append("  " + where)
    return "\n".join(out)


#: causes shown per recompile when folded, most informative first (causes.group's order)
SHOWN_CAUSES = 2


def folded_reason(
    text: str | None,
    origins: Sequence[Origin | None],
    where: Callable[[Origin | None, bool], list[str]],
    shown: int = SHOWN_CAUSES,
) -> list[str] | None:
    """A recompile's failing guards as their causes (reasons/causes.py): the first ``shown``,
    each once with the user line behind its first guard (``where``: origin, static -> lines),
    every other failing guard folded into a count. None when nothing would fold: the lines
    themselves are then as short."""
    lines = failure_lines(text) if text else []
    total = len(causes.split(lines))
    found = causes.group(lines)
    if total <= min(len(found), shown):
        return None
    pairs = [(line, o) for line, o in zip(lines, origins) if o]
    out = []
    for c in found[:shown]:
        out.append(c.label() + (f"  ({len(c.entries)} entries)" if len(c.entries) > 1 else ""))
        first = next((o for line, o in pairs if _for_cause(line, c)), None)
        out += where(first, c.what == "size")
    more = f"+{plural(total - len(found[:shown]), 'more failing guard')}"
    if len(found) > shown:
        more += f" ({plural(len(found) - shown, 'more cause')})"
    out.append(f"{more}, --verbose lists every one")
    return out


def _for_cause(line: str, cause: causes.Cause) -> bool:
    entry, body = entry_line(line)
    return entry in cause.entries and any(
        strip_comment(part) in cause.guards for part in split_parts(body)
    )


#: an origin's role in words (origins.ROLES)
ROLE_WORDS = {
    "created": "created this guard",
    "specialized": "forced the size to a constant",
    "first_use": "first use; no line created it",
    "graph_break": "graph break",
}
#: a TENSOR_MATCH size mismatch: the first compile was static by design, no line created it
STATIC_WORDS = "first use; static by design"
#: the same, for narrow columns (the run's reasons table)
SHORT_WORDS = {
    "created": "created",
    "specialized": "specialized",
    "first_use": "first use",
    "graph_break": "graph break",
    "static": "first use; static by design",
}


def origin(
    data: Origin | None, width: int = 96, static: bool = False, short: bool = False
) -> str | None:
    """``at file.py:23  `if x.shape[0] > 4:`  (created this guard)``, within ``width``;
    None where the origin is unknown (the caller prints nothing rather than a guess)."""
    if data is None or not data.file:
        return None
    where = f"at {os.path.basename(data.file)}:{data.line}"
    words = SHORT_WORDS if short else {**ROLE_WORDS, "static": STATIC_WORDS}
    key = "static" if static and data.role == "first_use" else str(data.role)
    role = words.get(key, key)
    tail = f"  ({role})"
    code = data.code
    if not code:
        return where + tail
    room = width - len(where) - len(tail) - 4
    if room < 12:  # a few characters of code say nothing: the line and role still fit
        return where + tail
    if len(code) > room:
        code = code[: max(room - 1, 8)] + "…"
    return f"{where}  `{code}`{tail}"


def header(name: str) -> str:
    return name.replace("\n", " ")


def error_line(run: Run) -> str | None:
    if run.error is None:
        return None
    index = run.error.call_index
    where = f" at call {index}" if index is not None else ""
    if index is not None and not plain([run]) and call_point(run, index) is not None:
        where += f" ({at_call(run, index)})"
    return f"{run.strategy}: {run.error.type}{where}: {run.error.message}"


def run_notes(runs: list[Run]) -> list[str]:
    """Per-run notes (e.g. nothing to mark), and which frame the guard figures come from when a
    run compiled more than one frame."""
    out = [f"{r.strategy}: {n}" for r in runs for n in r.notes]
    for r in runs:
        for sc in r.shared_code or ():
            out.append(
                f"{r.strategy}: {sc.function} ({Path(sc.filename or '?').name}:"
                f"{sc.line}) is {shared_label(sc.functions)}; they share its recompile "
                f"limit ({plural(sc.recompiles, 'recompile')} of this sharing)"
            )
    for run in runs:
        frames = {frame_of(e.compile_id) for e in run.compile_events if e.compile_id}
        own = next((e for e in run.compile_events if e.compile_id == run.guard_compile_id), None)
        if len(frames) > 1 and own is not None and own.compile_id:
            out.append(
                f"guards, shape guards: the newest entry of the target's own frame "
                f"({own.function}, frame {frame_of(own.compile_id)}), not of the "
                "inner frames it led to (graph breaks, calls); guard_compile_id in the "
                "JSON names the compile"
            )
            break
    return out


def settings_lines(env: Environment) -> list[str]:
    """The compile settings a report's runs inherited (or `--clean-env` kept out), one line
    each kind; [] when there were none."""

    def written(settings: dict[str, str]) -> str:
        return ", ".join(f"{k}={v}" for k, v in settings.items())

    out = []
    if env.compile_settings:
        out.append(f"Inherited compile settings in force: {written(env.compile_settings)}")
    if env.cleared_settings:
        out.append(f"Kept out by --clean-env: {written(env.cleared_settings)}")
    return out


def eager_label(runs: list) -> str | None:
    """``eager 774.5 µs/call`` for a sequence's runs (they share one eager reference), marked
    ``~`` with its spread where it is too noisy to compare against; None where not timed."""
    run = next((r for r in runs if r.eager_us is not None), None)
    if run is None:
        return None
    if not getattr(run, "eager_noisy", None):
        return f"eager {run.eager_us:.1f} µs/call"
    return (
        f"eager {NOISY}{run.eager_us:.1f} µs/call (too noisy to compare: fastest "
        f"{run.eager_min_us:.1f})"
    )


def limit(violation: Violation) -> str:
    """A budget's limit as tables show it: "≤ 1", "B ∈ [1, 4096]", "True"."""
    if violation.budget in MAX_KEYS:
        return f"≤ {violation.limit}"
    if violation.budget in RANGE_KEYS and isinstance(violation.limit, dict):
        return format_ranges(violation.limit)
    return str(violation.limit)


def coverage_asked(runs: Sequence[Run]) -> bool:
    return any(r.coverage is not None for r in runs)


def covers(run: Run) -> str:
    c = run.coverage
    if c is None:
        return ""
    if not c.decided:
        return "n/a"
    names = list(c.ranges)
    whole = format_box(names, tuple(c.ranges.values()))
    top = ", top frame" if c.scope == Scope.TOP_FRAME.value else ""
    if not c.unserved:
        return f"✓ {whole} {c.method}" if c.proved else f"{whole} {c.method}{top}"
    first = c.unserved[0]
    miss = f"{format_box(names, tuple(first.sizes.values()))} {first.outcome}"
    more = f" +{len(c.unserved) - 1}" if len(c.unserved) > 1 else ""
    if not c.complete:  # the count past the list is of served and unserved parts together
        left = f", {c.boxes_left_out} parts not listed" if c.boxes_left_out else ""
        return f"✗ {miss}{more} listed ({c.method}{top}: a partial list{left})"
    if c.method == Method.SAMPLED.value:
        return f"✗ {miss}{more} ({c.method}{top})"
    served = (
        format_box(names, tuple(c.served[0].values()))
        if len(c.served) == 1
        else "none"
        if not c.served
        else f"{len(c.served)} parts"
    )
    return f"{served} ({miss}{more}){top}"
