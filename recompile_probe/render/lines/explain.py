"""The lines `explain` prints, shared by every format (terminal, Markdown, HTML). No torch."""

from __future__ import annotations

import textwrap
from collections import Counter

from ...analysis.diffs import GuardDiff, aliasing_guards, kinds, leaf_kinds, shape_env_guards
from ...analysis.explain import Explanation
from ...analysis.fixes import Recompile
from ...analysis.sequence import at_call, batch_only, call_point, named, run_points, sequence_label
from ...analysis.shared import label as shared_label
from ...analysis.verdicts import NOISE_RATIO, plural
from ...provenance.origin import called_from
from ...reasons.text import failure_lines
from ...records.origin import Origin
from ...records.run import SHAPE_ENV, CacheEntry, Run
from ...sizes.points import Point
from .. import cells
from . import coverage

COST_HEADERS = ("strategy", "compiles", "µs/call", "eager µs", "guard check µs", "cold guard µs")
COST_LEGEND = (
    "µs/call: median of the last point re-run (marks included; ~: too noisy to "
    f"rank, median > {NOISE_RATIO}x the fastest sample); guard check µs: warm "
    "guard_manager.check of the entry that served it, on the real inputs; cold guard "
    "µs: CompilationMetrics.guard_latency_us, measured at compile with caches "
    "flushed, not a steady-state cost."
)


def cost_row(run: Run) -> list[str]:
    return [
        run.strategy,
        cells.num(run.compiles),
        cells.steady(run),
        cells.num(run.eager_us, "{:.1f}"),
        cells.num(run.guard_check_us, "{:.2f}"),
        cells.num(run.guard_latency_us),
    ]


def headline(run: Run, width: int = 100) -> str:
    counts = (
        "n/a compiles"
        if run.compiles is None
        else f"{plural(run.compiles, 'compile')}, {plural(run.recompiles or 0, 'recompile')}"
    )
    head, tail = f"{run.strategy} · sequence {run.sequence_name}: ", f" · {counts}"
    points = run_points(run)
    line = head + sequence_label(points, width - len(head) - len(tail)) + tail
    if len(line) <= width or batch_only(points):
        return line
    # a few long points do not abbreviate: the sequence gets a line of its own
    return f"{run.strategy} · sequence {run.sequence_name} · {counts}\n  " + sequence_label(
        points, width - 2
    )


def made(run: Run, e: CacheEntry) -> str:
    """Which call made an entry, and at which point: "call 1, B=2" as always for a batch-only
    run, "call 1 (B 2, S 7)" with several symbols."""
    if e.call_index is None:
        return "made before the sequence"
    if cells.plain([run]):
        return f"call {e.call_index}, B={e.batch_size}"
    if call_point(run, e.call_index) is not None:
        return f"call {e.call_index} ({at_call(run, e.call_index)})"
    return f"call {e.call_index}" + (f" ({named(Point.of(e.sizes))})" if e.sizes else "")


def entry_lines(run: Run) -> list[str]:
    lines: list[str] = []
    frame = None
    for e in run.entries:
        if (e.function, e.filename) != frame:
            frame = (e.function, e.filename)
            lines.append(f"Cache entries of {e.function} ({e.filename}:{e.line})")
            for sc in run.shared_code or ():
                if (sc.function, sc.filename, sc.line) == (e.function, e.filename, e.line):
                    lines.append(f"  {shared_label(sc.functions)}: they share its limit")
        lines.append(
            f"  {e.compile_id}  {made(run, e)} · guard_count {cells.num(e.guard_count)} "
            f"(metrics) · {cells.num(e.leaf_guard_count)} leaf guards (tree)"
        )
        leaves = leaf_kinds(e)
        if leaves is not None:  # the tally beside the leaf-guard count adds up to it
            lines += wrapped("      leaf guards by kind: ", [f"{k} {n}" for k, n in leaves.items()])
        else:  # a report written before leaves were tallied: its lines, labelled as lines
            lines += wrapped(
                "      guard lines by kind: ", [f"{k} {n}" for k, n in kinds(e).items()]
            )
        shape = shape_env_guards(e)
        lines += fold(
            "      shape-env guards: " + ("; ".join(shape) if shape else "none"),
            len("      shape-env guards: "),
        )
        aliasing = aliasing_guards(e)
        if aliasing:
            lines += fold(
                "      object-aliasing guards: " + "; ".join(aliasing),
                len("      object-aliasing guards: "),
            )
    return lines


def wrapped(head: str, items: list[str], width: int = 96) -> list[str]:
    """Comma-separated items over as many lines as they need, continuation lines indented."""
    lines, current = [], head
    for i, item in enumerate(items):
        piece = item + ("," if i < len(items) - 1 else "")
        if len(current) + len(piece) + 1 > width and current.strip() != head.strip():
            lines.append(current.rstrip())
            current = " " * len(head)
        current += piece + " "
    lines.append(current.rstrip() if items else head + cells.NA)
    return lines


def fold(line: str, indent: int, width: int = 100) -> list[str]:
    """A line longer than ``width`` broken after its "; " separators, continuation lines
    indented (several symbols make more shape guards and size changes than one line holds);
    a line that fits is left alone."""
    if len(line) <= width or "; " not in line:
        return [line]
    lines, current = [], ""
    for piece in line.split("; "):
        if current and len(current) + len(piece) + 2 > width:
            lines.append(current + ";")
            current = " " * indent + piece
        else:
            current = f"{current}; {piece}" if current else piece
    return lines + [current]


def under(origin: Origin | None, indent: str = "      ", static: bool = False) -> list[str]:
    """The user line under a guard or reason line; nothing where it is unknown."""
    text = cells.origin(origin, 100 - len(indent), static)
    if text is None:
        return []
    # the callers Dynamo's user stack names (an inlined helper's guard: the caller's line too)
    return [indent + text, *(f"{indent}  {line}" for line in called_from(origin))]


#: added or removed guards a folded diff shows per sign; symbolic and tensor guards first
SHOWN_DIFF_GUARDS = 4
_DIFF_FIRST = (SHAPE_ENV, "TENSOR_MATCH")


def diff_lines(d: GuardDiff, verbose: bool = True) -> list[str]:
    """``verbose``: every added and removed guard; otherwise the first few of each, the rest
    counted by kind (a new cache-held tensor adds a dozen guards that say one thing)."""
    lines = [f"Guard diff {d.function} {d.old} → {d.new}"]
    for c in d.changed:
        lines += fold(f"  ~ {c.describe()}", 6)
        lines += under(c.origin)
    for sign, word, guards in (("+", "added", d.added), ("-", "removed", d.removed)):
        shown = list(guards)
        if not verbose and len(shown) > SHOWN_DIFF_GUARDS:
            shown.sort(key=lambda g: _DIFF_FIRST.index(g.kind) if g.kind in _DIFF_FIRST else 2)
            rest = Counter(g.kind for g in shown[SHOWN_DIFF_GUARDS:]).most_common()
            shown = shown[:SHOWN_DIFF_GUARDS]
        else:
            rest = []
        for g in shown:
            lines.append(f"  {sign} {g.kind} {g.text}")
            lines += under(g.origin)
        if rest:
            n = sum(count for _, count in rest)
            lines += wrapped(
                f"  {sign}{n} more {word} guards, --verbose lists every one: ",
                [f"{k} {count}" for k, count in rest],
            )
    if len(lines) == 1:
        lines.append("  (no guard differs)")
    return lines


def recompile_lines(r: Recompile, plain: bool = True, verbose: bool = True) -> list[str]:
    before = "?" if r.batch_before is None else r.batch_before
    change = f"B {before} → {r.batch_after}" if plain or not r.change else r.change
    lines = [
        f"Recompile at call {r.call_index} ({change}), {r.compile_id}: {r.reason_kind or 'other'}"
    ]
    found = list(r.reason_origins or ())
    folded = (
        None
        if verbose
        else cells.folded_reason(r.reason, found, lambda o, static: under(o, "    ", static))
    )
    if folded is not None:
        lines += [line if line.startswith("    ") else f"  {line}" for line in folded]
    else:
        for line in cells.reason(r.reason).splitlines():
            lines.append(f"  {line}")
            if failure_lines(line) and found:
                lines += under(found.pop(0), "    ", " size mismatch " in line)
    d = r.reason_detail
    # the symbol whose dim failed, when several could have: a batch-only run has only B
    facts = [
        f"{k} {getattr(d, k)}"
        for k in (() if plain else ("symbol",)) + ("source", "what", "dim", "expected", "actual")
        if d is not None and getattr(d, k) is not None
    ]
    if facts:
        lines.append("  " + ", ".join(facts))
    if r.reason_kind == "shared_code_object" and d is not None and d.function:
        lines += wrap_text(
            f"  one code object, several functions: this call was for {d.function}, the "
            f"entries were compiled for {', '.join(d.compiled_for or ['?'])}",
            "    ",
        )
    if r.fixes:
        lines.append(
            "  Measured fixes (no recompile on this call, outputs match eager):"
            if all(f.outputs_compared for f in r.fixes)
            else "  Measured fixes (no recompile on this call; outputs match eager unless marked):"
        )
        for fix in r.fixes:
            cost = cells.num(fix.steady_state_us, "{:.1f}")
            compiles = "n/a compiles" if fix.compiles is None else plural(fix.compiles, "compile")
            unchecked = "" if fix.outputs_compared else "; measured by counts, outputs not compared"
            lines.append(f"    {fix.strategy} ({compiles}, {cost} µs/call{unchecked}):")
            lines += [f"        {line}" for line in fix.change]
            if fix.advice:
                lines.append(
                    "      not measured, advice (no run of this report executed "
                    "these), inside the compiled function:"
                )
                lines += [f"        {line}" for line in fix.advice]
    else:
        lines.append(f"  No strategy in this run removes it: {r.no_fix_why}")
    if r.specialization:
        lines += wrap_text("  Fix the line: " + r.specialization, "    ")
    return lines


def wrap_text(text: str, indent: str, width: int = 100) -> list[str]:
    return textwrap.wrap(
        text, width, subsequent_indent=indent, break_on_hyphens=False, break_long_words=False
    )


def error_lines(x: Explanation) -> list[str]:
    """The error of a strategy that raised, the line that specialized what it marked, and why
    the strategy cannot help; [] for a run that did not error."""
    e = x.error
    if e is None:
        return []
    where = f" at call {e.call_index}" if e.call_index is not None else ""
    lines = [
        f"{x.run.strategy} raised {e.type}{where}" + (f", {e.compile_id}" if e.compile_id else "")
    ]
    lines += wrap_text(f"  {e.message}", "    ")
    for spec in e.specialized:
        lines.append(f"  {spec.source} specialized to {spec.value}")
        lines += under(spec.origin, "    ")
    lines += wrap_text(f"  Why it cannot help: {e.why}", "    ")
    return lines


def blocks(x: Explanation, verbose: bool = True) -> list[list[str]]:
    """``verbose``: every failing guard of each recompile and every guard a diff adds or
    removes; otherwise its causes and a few guards, the rest counted (the terminal's default)."""
    blocks = [b for b in (error_lines(x),) if b] + [entry_lines(x.run)]
    blocks += [diff_lines(d, verbose) for d in x.diffs]
    plain = cells.plain([x.run])
    blocks += [recompile_lines(r, plain, verbose) for r in x.recompiles]
    covered = coverage.section([x.run], shown=None if verbose else coverage.SHOWN)
    if covered:
        blocks.append(["Coverage", *(f"  {line}" for line in covered)])
    return blocks
