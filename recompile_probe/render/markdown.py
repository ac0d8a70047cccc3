"""Every document as GitHub-flavoured Markdown (PR comments, job summaries), from the same lines
the terminal prints (lines/, cells.py). No torch."""

from __future__ import annotations

from collections.abc import Sequence

from ..analysis import baseline
from ..analysis.check import Outcome
from ..analysis.explain import Explained
from ..records.report import Report
from ..records.suggestion import Suggestion
from ..records.watch import WatchReport
from . import cells
from .formats import Layout
from .lines import check as check_lines
from .lines import coverage
from .lines import diff as diff_lines
from .lines import explain as explain_lines
from .lines import functions as function_lines
from .lines import ranks as rank_lines
from .lines import suggest as suggest_lines
from .lines.ranks import RanksView
from .lines.reports import RanksLines, SequenceLines, of_report


def _escape(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", "<br>")


def _table(headers: list[str], rows: list[list[str]]) -> list[str]:
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(_escape(c) for c in row) + " |" for row in rows]
    return lines


# --- a run report ---------------------------------------------------------------------------------


def reports(value: Sequence[Report], layout: Layout) -> str:
    return "\n".join(_report(r) for r in value)


def _report(report: Report) -> str:
    env = report.environment
    first = report.runs[0] if report.runs else None
    out = [
        f"## recompile-probe: {report.scenario.name}",
        "",
        f"target `{first.target if first else cells.NA}` · backend "
        f"`{first.backend if first else cells.NA}` · torch {env.torch or cells.NA} · "
        f"recompile-probe {report.tool.version}",
        "",
    ]
    for line in cells.settings_lines(env):
        out += [_escape(line), ""]
    if not report.complete:
        out += ["**Interrupted: only the runs that finished are shown.**", ""]
    for part in of_report(report):
        out += _sequence(part) if isinstance(part, SequenceLines) else _ranks(part)
    return "\n".join(out)


def _ranks(ranks: RanksLines) -> list[str]:
    world = [str(r) for r in range(ranks.world_size)]
    rows = [[row.strategy, *row.cells, _agree(row.agree, row.differs)] for row in ranks.rows]
    out = [f"### Ranks: `{ranks.sequence}`", ""]
    out += _table(["strategy", *[f"rank {r}" for r in world], "ranks agree"], rows)
    return out + ["", f"**Ranks verdict:** {_escape(ranks.verdict)}", ""]


def _agree(agree: bool | None, differs: tuple[str, ...]) -> str:
    text = {True: "yes", False: "**no**", None: "n/a"}[agree]
    return text + (f" ({', '.join(differs)})" if agree is False and differs else "")


def _sequence(seq: SequenceLines) -> list[str]:
    """One sequence (on one rank): its table, timeline, reasons and verdict."""
    runs = list(seq.runs)
    label = f"`{seq.name}`" + ("" if seq.rank is None else f" · rank {seq.rank}")
    out = [f"### Sequence {label}: {seq.label(80)}", ""]
    rows = []
    columns = cells.columns(runs)
    for run in runs:
        row = cells.row(run, cells.FAILED_COLUMN in columns, cells.COVERS_COLUMN in columns)
        if run is seq.winner:
            row = [f"**{c}**" for c in row]
        rows.append(row + [f"`{cells.timeline(run)}`" if run.calls else ""])
    out += _table([cells.header(h) for h, _ in columns] + ["timeline"], rows)
    out += [
        "",
        f"Timeline: {cells.LEGEND}" + (f". {cells.GROUPED}" if seq.stepped else ""),
        "",
    ]
    if seq.recompiles:
        out += _table(
            ["strategy", "call", "B" if seq.plain else "change", "compile id", "kind", "reason"],
            [
                [
                    t.strategy,
                    str(t.call_index),
                    t.change,
                    t.compile_id or cells.NA,
                    t.kind,
                    cells.reason(t.reason),
                ]
                for t in seq.recompiles
            ],
        )
        out.append("")
    covered = coverage.section(runs)
    if covered:
        out += ["**Coverage**", "", "```text", *covered, "```", ""]
    notes = [line for line in (cells.error_line(r) for r in runs) if line]
    notes += cells.run_notes(runs)
    out += [f"- {_escape(n)}" for n in notes] + ([""] if notes else [])
    out += [f"**Verdict:** {seq.verdict}", ""]
    for note in seq.notes:
        out += [f"> {note}", ""]
    return out


# --- check and diff -------------------------------------------------------------------------------


def check(outcome: Outcome, layout: Layout) -> str:
    ok = int(outcome.exit_code) == 0
    lines = [
        f"## recompile-probe check: {'✅ passed' if ok else '❌ failed'}",
        "",
        check_lines.summary(outcome),
        "",
    ]
    if outcome.violations():
        lines += [
            "| scenario | sequence | strategy | budget | limit | actual | why |",
            "|---|---|---|---|---|---|---|",
        ]
        for report, run, v in outcome.violations():
            # a reason can span lines (one per failing cache entry): a table cell cannot
            why = "<br>".join(r.replace("|", "\\|").replace("\n", "<br>") for r in v.reasons)
            actual = cells.NA if v.actual is None else str(v.actual)
            lines.append(
                f"| {report.scenario.name} | {run.sequence_name} | {run.strategy} | "
                f"`{v.budget}` | {cells.limit(v)} | {actual} | {why} |"
            )
        lines.append("")
    if outcome.changes:
        lines += [
            "### Changes against the baseline",
            "",
            _changes(list(outcome.pairs), outcome.tolerance),
        ]
    for scenario, error in outcome.failures:
        lines.append(f"- **{scenario.name}** could not run: {error.message}")
    lines += [f"- {_escape(line)}" for line in check_lines.sampled(outcome)]
    return "\n".join(lines) + "\n"


def diff(comparison: baseline.Comparison, layout: Layout) -> str:
    return _changes(list(comparison.pairs), comparison.tolerance)


def _changes(pairs: list[baseline.Pair], tolerance: int) -> str:
    shown = diff_lines.view(pairs, tolerance)
    headers = diff_lines.HEADERS[:-1]  # outputs: the terminal's column, not the summary's
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    for r in shown.rows:
        if r.side is None and r.changed:
            figures = [_figure(f) for f in r.figures[: len(headers) - 3]]
            lines.append("| " + " | ".join([*r.key, *figures]) + " |")
    if shown.sequences:
        lines += [""] + [
            f"- {line}" if not line.startswith("  ") else f"  - {line.strip()}"
            for line in shown.sequences
        ]
    return "\n".join(lines) + "\n"


def _figure(f: diff_lines.Figure) -> str:
    if f.same:
        return f.new
    mark = " ❌" if f.kind == "regression" else " ✅" if f.kind else ""
    return f"{f.old} → {f.new}{mark}"


# --- explain, watch, suggest ----------------------------------------------------------------------


def explain(explained: Explained, layout: Layout) -> str:
    report, explanations, notes = explained.report, explained.explanations, explained.notes
    out = [f"## recompile-probe explain: {report.scenario.name}", ""]
    for x in explanations:
        title, _, points = explain_lines.headline(x.run).partition("\n")
        out += [f"### {title}", ""] + ([points.strip(), ""] if points else []) + ["```text"]
        for block in explain_lines.blocks(x):
            out += block + [""]
        out[-1] = "```"
        out.append("")
    headers = explain_lines.COST_HEADERS
    for name, _sizes in report.sequences():
        runs = [r for r in report.runs_for(name) if r.status != "unsupported"]
        out += [
            f"Runtime cost, sequence `{name}`:",
            "",
            "| " + " | ".join(headers) + " |",
            "|" + "---|" * len(headers),
        ]
        out += ["| " + " | ".join(explain_lines.cost_row(r)) + " |" for r in runs]
        out += ["", explain_lines.COST_LEGEND, ""]
    out += [f"> {n}" for n in notes]
    return "\n".join(out) + "\n"


def functions(report: WatchReport, layout: Layout) -> str:
    shown = function_lines.view(report)
    out = [f"## {shown.title}", ""]
    out += _functions_table(shown.headers, shown.functions)
    out.append("")
    if shown.breaks_differ:
        out += [function_lines.BREAKS_LEGEND, ""]
    out += [_finding(f.name, x) for f in shown.functions for x in f.findings]
    out += ["", shown.totals, ""]
    for p in shown.children:
        if not p.functions:
            out += [f"- {p.line}", ""]
            continue
        out += [f"### {p.label}", ""]
        out += _functions_table(function_lines.CHILD_HEADERS, p.functions)
        out.append("")
        out += [_finding(f.name, x) for f in p.functions for x in f.findings]
        out.append("")
    if shown.children:
        out += [shown.all_totals, ""]
    if shown.ranks is not None:
        out += _rank_section(shown.ranks)
    return "\n".join(out)


def _functions_table(
    headers: tuple[str, ...], functions: tuple[function_lines.FunctionView, ...]
) -> list[str]:
    heads = [h.replace("\n", " ") for h in headers]
    return [
        "| " + " | ".join(heads) + " |",
        "|" + "---|" * len(heads),
        *("| " + " | ".join(c.replace("|", "\\|") for c in f.cells) + " |" for f in functions),
    ]


def _finding(function: str, x: function_lines.Finding) -> str:
    return f"- `{function}`: {x.head}: `{x.text}`" + (f" ({x.where})" if x.where else "")


def _rank_section(ranks: RanksView) -> list[str]:
    out = [f"### {ranks.heading}", ""]
    if not ranks.divergent:
        return out
    headers = [h.replace("\n", " ") for h in rank_lines.HEADERS]
    out += _table(headers, [list(row) for row in ranks.rows])
    out.append("")
    for lines in ranks.partings:
        out.append(f"- `{lines[0]}`")
        out += [f"  - {_escape(line.strip())}" for line in lines[1:]]
    out.append("")
    out += [f"> {_escape(line.strip())}" for line in ranks.advice]
    out.append("")
    return out


def suggest(s: Suggestion, layout: Layout) -> str:
    sl = suggest_lines
    lines = [
        f"## {sl.headline(s)}",
        "",
        f"**{sl.recommendation(s)}**",
        "",
        "| " + " | ".join(sl.HEADERS) + " |",
        "|" + "---|" * len(sl.HEADERS),
    ]
    for i, e in enumerate(s.candidates, 1):
        lines.append("| " + " | ".join(c.replace("|", "\\|") for c in sl.row(e, i)) + " |")
    for title, block in sl.blocks(s):
        lines += ["", f"### {title}", ""]
        fenced = title.startswith("The change")
        if fenced:
            lines.append("```")
        lines += block if fenced else [f"- {b}" for b in block]
        if fenced:
            lines.append("```")
    return "\n".join(lines) + "\n"
