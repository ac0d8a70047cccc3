"""Progress on stderr, one way for every command: a bar on an interactive stderr, one line per
finished step otherwise (a CI log keeps them), nothing under --quiet. Never on stdout: that is
the report's."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

from rich.console import Console


class Meter:
    """What a command reports as it goes: lines for a log, or the bar's fields on a terminal."""

    def __init__(self, console: Console, bar: Any = None, task: Any = None) -> None:
        self.console = console
        self._bar = bar
        self._task = task

    @property
    def on_terminal(self) -> bool:
        return self._bar is not None

    def say(self, line: str) -> None:
        """A line for the log; none under a bar (its redraw would tear it)."""
        if self._bar is None:
            self.console.print(line, soft_wrap=True, markup=False, highlight=False)

    def update(
        self, description: str | None = None, *, completed: int | None = None, advance: int = 0
    ) -> None:
        if self._bar is not None:
            fields: dict[str, Any] = {"advance": advance}
            if description is not None:
                fields["description"] = description
            if completed is not None:
                fields["completed"] = completed
            self._bar.update(self._task, **fields)

    def retotal(self, total: int | None) -> None:
        """The steps planned, once known or when they grow (None: not known)."""
        if self._bar is not None:
            self._bar.update(self._task, total=total)


@contextlib.contextmanager
def meter(
    console: Console,
    quiet: bool,
    start: str,
    total: int | None,
    count: Callable[[], str] | None = None,
    eta: Callable[[], str] | None = None,
) -> Iterator[Meter | None]:
    """None under --quiet; on a terminal a bar that starts as ``start`` with ``total`` steps
    (None: not known yet), then ``count`` (default: done/total), the time spent and ``eta``;
    plain lines otherwise."""
    if quiet:
        yield None
        return
    if not console.is_terminal:
        yield Meter(console)
        return
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        ProgressColumn,
        TextColumn,
        TimeElapsedColumn,
    )
    from rich.text import Text

    class Said(ProgressColumn):
        def __init__(self, text: Callable[[], str], style: str) -> None:
            super().__init__()
            self.text, self.style = text, style

        def render(self, task: Any) -> Text:
            return Text(self.text(), style=self.style)

    shown: list[ProgressColumn] = [
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn() if count is None else Said(count, "progress.download"),
        TimeElapsedColumn(),
    ]
    if eta is not None:
        shown.append(Said(eta, "progress.remaining"))
    with Progress(*shown, console=console, transient=True) as bar:
        yield Meter(console, bar, bar.add_task(start, total=total))
