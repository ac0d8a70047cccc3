"""Renderers: one module per format, one function each, ``render(report, color=...) -> str``.

They read only result records, so a saved JSON report re-renders without torch or a re-run.
"""

from __future__ import annotations

from typing import Callable

from ..model import Report

FORMATS = ("table", "json", "markdown", "junit", "html")


def renderer(fmt: str) -> Callable[..., str]:
    if fmt == "json":
        from .json import render
    elif fmt == "markdown":
        from .markdown import render
    elif fmt == "junit":
        from .junit import render
    elif fmt == "table":
        from .table import render
    elif fmt == "html":
        from .html import render
    else:
        raise ValueError(f"unknown format {fmt!r}")
    return render


def render(report: Report, fmt: str, *, color: bool = False, width: int = 120) -> str:
    return renderer(fmt)(report, color=color, width=width)
