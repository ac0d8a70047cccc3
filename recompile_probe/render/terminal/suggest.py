"""`suggest` in a terminal: the recommendation, the ranked candidates, then the blocks."""

from __future__ import annotations

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from ...records.suggestion import Suggestion
from ..formats import Layout
from ..lines.suggest import HEADERS, RANKED_BY, SHOWN, blocks, headline, recommendation, row
from .console import draw


def suggest(s: Suggestion, layout: Layout) -> str:
    return draw(layout, lambda console: _suggest(console, s))


def _suggest(console: Console, s: Suggestion) -> None:
    console.print(Text(headline(s), style="bold"))
    console.print(
        Text(
            recommendation(s),
            style="bold green"
            if s.recommendation and s.recommendation.status == "ok"
            else "bold red",
        )
    )
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False, collapse_padding=True)
    for i, header in enumerate(HEADERS):
        table.add_column(header, justify="left" if i < 3 or i == 7 else "right", overflow="fold")
    for i, e in enumerate(s.candidates[:SHOWN], 1):
        table.add_row(*row(e, i))
    console.print(table)
    if len(s.candidates) > SHOWN:
        console.print(
            Text(f"... {len(s.candidates) - SHOWN} more candidates in --format json", style="dim")
        )
    console.print(Text(RANKED_BY, style="dim"))
    for title, lines in blocks(s):
        console.print(Text("\n" + title, style="bold"))
        console.print(Text("\n".join(f"  {line}" for line in lines)), soft_wrap=True)
