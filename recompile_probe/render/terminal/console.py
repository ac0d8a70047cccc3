"""The one console set-up the terminal renderers draw on: text into a buffer at the layout's
width, colour only where the layout asks for it (a terminal that takes it)."""

from __future__ import annotations

import io
from collections.abc import Callable
from typing import IO

from rich.console import Console

from ..formats import Layout


def console(file: IO[str], layout: Layout, width: int | None = None) -> Console:
    return Console(
        file=file,
        width=width or layout.width,
        force_terminal=layout.color,
        no_color=not layout.color,
        highlight=False,
        color_system="auto" if layout.color else None,
    )


def draw(layout: Layout, paint: Callable[[Console], None]) -> str:
    buffer = io.StringIO()
    paint(console(buffer, layout))
    return buffer.getvalue()
