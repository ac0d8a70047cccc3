"""A run report in any format: the one place a format name picks its renderer.

A new format is a module with ``render(report, *, color, width) -> str`` and one line in
``_MODULES``; ``--format`` accepts every name here.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable

from ..records.report import Report

# imported only when chosen: a renderer's own imports (rich for the table) cost only its users
_MODULES = {
    "table": "terminal.report",
    "json": "json",
    "markdown": "markdown",
    "junit": "junit",
    "html": "html.report",
}
FORMATS = tuple(_MODULES)


def renderer(fmt: str) -> Callable[..., str]:
    if fmt not in _MODULES:
        raise ValueError(f"unknown format {fmt!r}")
    module = importlib.import_module(f"{__package__}.{_MODULES[fmt]}")
    render: Callable[..., str] = module.render
    return render


def render(
    report: Report, fmt: str, *, color: bool = False, width: int = 120, verbose: bool = False
) -> str:
    """``verbose``: every failing guard of every recompile, where a format folds them."""
    return renderer(fmt)(report, color=color, width=width, verbose=verbose)
