"""GitHub-flavoured Markdown (PR comments, job summaries)."""

from __future__ import annotations

from .. import analysis
from ..explain import noise_note, slow_winner
from ..model import Report
from . import cells


def _escape(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", "<br>")


def _table(headers: list[str], rows: list[list[str]]) -> list[str]:
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(_escape(c) for c in row) + " |" for row in rows]
    return lines


def render(report: Report, **_: object) -> str:
    env = report.environment
    first = report.runs[0] if report.runs else None
    out = [f"## recompile-probe: {report.scenario.name}", "",
           f"target `{first.target if first else cells.NA}` · backend "
           f"`{first.backend if first else cells.NA}` · torch {env.torch or cells.NA} · "
           f"recompile-probe {report.tool.version}", ""]
    if not report.complete:
        out += ["**Interrupted: only the runs that finished are shown.**", ""]
    for name, _ in report.sequences():
        runs = report.runs_for(name)
        winner = analysis.best(runs)
        plain = cells.plain(runs)
        out += [f"### Sequence `{name}`: "
                f"{analysis.sequence_label(analysis.points_of(runs), 80)}", ""]
        rows = []
        columns = cells.columns(runs)
        for run in runs:
            row = cells.row(run, cells.FAILED_COLUMN in columns)
            if run is winner:
                row = [f"**{c}**" for c in row]
            rows.append(row + [f"`{cells.timeline(run)}`" if run.calls else ""])
        out += _table([cells.header(h) for h, _ in columns] + ["timeline"], rows)
        out += ["", f"Timeline: {cells.LEGEND}"
                + (f". {cells.GROUPED}" if any(map(analysis.stepped, runs)) else ""), ""]
        transitions = [(run, t) for run in runs for t in analysis.transitions(run)]
        if transitions:
            out += _table(["strategy", "call", "B" if plain else "change", "compile id", "kind",
                           "reason"], [
                [t.strategy, str(t.call_index),
                 f"{'?' if t.batch_before is None else t.batch_before} → {t.batch_after}"
                 if plain else analysis.moved(run, t),
                 t.compile_id or cells.NA, t.kind or "other", cells.reason(t.reason)]
                for run, t in transitions])
            out.append("")
        notes = [line for line in (cells.error_line(r) for r in runs) if line]
        notes += cells.run_notes(runs)
        out += [f"- {_escape(n)}" for n in notes] + ([""] if notes else [])
        out += [f"**Verdict:** {analysis.verdict(name, runs)}", ""]
        for note in (slow_winner(runs), noise_note(runs)):
            if note:
                out += [f"> {note}", ""]
    return "\n".join(out)
