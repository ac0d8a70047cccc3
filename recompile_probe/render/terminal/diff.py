"""`diff` in a terminal: two report sets side by side (and the baseline part of `check`)."""

from __future__ import annotations

import io

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from ...analysis import baseline
from .. import cells
from ..lines.diff import sequences


def _cell(old: object, new: object, kind: str | None) -> Text:
    if old == new:
        return Text(cells.num(new))
    text = Text(f"{cells.num(old)} → {cells.num(new)}")
    if kind:
        text.stylize("bold red" if kind == "regression" else "green")
    return text


def table(pairs: list[baseline.Pair], tolerance: int = 0, *, only_changed: bool = False) -> Table:
    t = Table(box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False, collapse_padding=True)
    for header in (
        "scenario",
        "sequence",
        "strategy",
        *(label for _, label in baseline.METRICS),
        "status",
        "outputs",
    ):
        t.add_column(header, no_wrap=header not in ("scenario",), overflow="fold")
    for p in pairs:
        kinds = {c.metric: c.kind for c in baseline.changes(p, tolerance)}
        if only_changed and not kinds and p.old is not None and p.new is not None:
            continue
        scenario, sequence, strategy = p.key
        if p.old is None or p.new is None:
            side = "only in new" if p.old is None else "only in old"
            t.add_row(
                scenario,
                sequence,
                strategy,
                Text(side, style="yellow"),
                *[""] * (len(baseline.METRICS) + 1),
            )
            continue
        row = [
            _cell(getattr(p.old, f), getattr(p.new, f), kinds.get(label))
            for f, label in baseline.METRICS
        ]
        row.append(_cell(p.old.status, p.new.status, kinds.get("status")))
        row.append(_cell(cells.outputs(p.old), cells.outputs(p.new), kinds.get("outputs_match")))
        t.add_row(scenario, sequence, strategy, *row)
    return t


def render(
    pairs: list[baseline.Pair],
    tolerance: int = 0,
    *,
    color: bool = False,
    width: int = 120,
    only_changed: bool = False,
) -> str:
    buffer = io.StringIO()
    console = Console(
        file=buffer,
        width=width,
        force_terminal=color,
        no_color=not color,
        highlight=False,
        color_system="auto" if color else None,
    )
    console.print(table(pairs, tolerance, only_changed=only_changed))
    for line in sequences(pairs, width):
        console.print(Text(line), soft_wrap=False, overflow="fold")
    found = [c for p in pairs for c in baseline.changes(p, tolerance)]
    worse = sum(c.kind == "regression" for c in found)
    better = len(found) - worse
    console.print(
        f"{worse} regression{'s' * (worse != 1)}, {better} improvement"
        f"{'s' * (better != 1)} (tolerance {tolerance})."
    )
    return buffer.getvalue()
