"""Which format renders which document: the one table every command's ``--format`` reads.

A format is a module with one function per document it renders, or a folder with one module per
document holding that function; the function is named after the document (``reports``, ``check``,
``explain``, ``suggest``, ``functions``, ``diff``) and is ``(value, layout) -> str``. A new format
is that module and one row of ``FORMATS``; a command's choices, help text and errors follow from
the table. Nothing here imports a renderer until one is chosen (rich costs only the terminal's
users), and nothing imports torch.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import TYPE_CHECKING, Any

from ..errors import UsageError, did_you_mean

if TYPE_CHECKING:
    from ..records.report import ScenarioRef
    from ..strategies.advice import Definitions


class Document(Enum):
    """What a command prints. ``cap``: the most columns a terminal gets (prose reads badly
    wider); ``file_width``: the width off a terminal (a file, a pipe, a CI log)."""

    #: run reports: one (`run`, `render`) or a bundle's (`render` of a `check --json`)
    REPORTS = ("reports", None, 120)
    #: a `check` outcome: budgets, baseline changes and every report
    CHECK = ("check", None, 240)
    EXPLAIN = ("explain", 100, 100)
    SUGGEST = ("suggest", 110, 110)
    #: a program's compiled functions (`watch`, `summarize`)
    FUNCTIONS = ("functions", None, 160)
    #: two reports' runs matched (`diff`)
    DIFF = ("diff", None, 120)

    def __init__(self, function: str, cap: int | None, file_width: int) -> None:
        self.function = function
        self.cap = cap
        self.file_width = file_width

    def width(self, columns: int | None) -> int:
        """The width to lay out at: a terminal's ``columns`` (capped), else ``file_width``."""
        if columns is None:
            return self.file_width
        return columns if self.cap is None else min(columns, self.cap)


@dataclass(frozen=True)
class Layout:
    """How a document is laid out, and what its caller knows beside it."""

    color: bool = False
    width: int = 120
    #: every failing guard of every recompile, where the format folds them
    verbose: bool = False
    #: a report's scenario -> what its measured fixes are written with (a scenario's custom
    #: strategies, which a report does not hold); the formats of findings read it
    definitions: Mapping[ScenarioRef, Definitions] = field(default_factory=dict)


@dataclass(frozen=True)
class Format:
    name: str
    module: str
    documents: frozenset[Document]
    #: laid out for a person at a terminal (the others are files: data, markup, a page)
    terminal: bool = False
    #: writes analysis/findings.py's findings, with the fixes Layout.definitions write
    findings: bool = False


_ALL = frozenset(Document)
_NO_DIFF = _ALL - {Document.DIFF}
_FINDINGS = frozenset({Document.REPORTS, Document.CHECK, Document.FUNCTIONS})

FORMATS: tuple[Format, ...] = (
    Format("table", "terminal", _ALL, terminal=True),
    Format("json", "json", _NO_DIFF),
    Format("markdown", "markdown", _ALL),
    Format("junit", "junit", frozenset({Document.REPORTS, Document.CHECK})),
    Format(
        "html",
        "html",
        frozenset({Document.REPORTS, Document.CHECK, Document.EXPLAIN, Document.FUNCTIONS}),
    ),
    # findings on the user's lines, for CI systems (analysis/findings.py)
    Format("github", "github", _FINDINGS, findings=True),
    Format("codequality", "codequality", _FINDINGS, findings=True),
)
_BY_NAME = {f.name: f for f in FORMATS}


def names(document: Document) -> tuple[str, ...]:
    return tuple(f.name for f in FORMATS if document in f.documents)


def help_text(document: Document) -> str:
    return " | ".join(names(document))


def choose(document: Document, name: str, option: str = "--format") -> Format:
    """The format called ``name`` for ``document``; a usage error naming the choices if not."""
    choices = names(document)
    found = _BY_NAME.get(name)
    if found is None:
        raise UsageError(
            f"{option}: unknown format {name!r}",
            did_you_mean(name, choices) or f"Formats: {', '.join(choices)}.",
        )
    if document not in found.documents:
        raise UsageError(
            f"{option}: {name} does not render {_WHAT[document]}",
            f"Formats: {', '.join(choices)}.",
        )
    return found


_WHAT = {
    Document.REPORTS: "run reports",
    Document.CHECK: "a check",
    Document.EXPLAIN: "an explanation",
    Document.SUGGEST: "a suggestion",
    Document.FUNCTIONS: "a program's functions (watch, summarize)",
    Document.DIFF: "a diff",
}


def renderer(document: Document, name: str) -> Callable[[Any, Layout], str]:
    fmt = choose(document, name)
    module = importlib.import_module(f"{__package__}.{fmt.module}")
    if hasattr(module, "__path__"):  # a folder: the document's own module
        module = importlib.import_module(f"{module.__name__}.{document.function}")
    function: Callable[[Any, Layout], str] = getattr(module, document.function)
    return function


def render(document: Document, name: str, value: Any, layout: Layout | None = None) -> str:
    """``value``: the document's record (a list of reports, an ``Outcome``, an ``Explained``, a
    ``Suggestion``, a ``WatchReport`` or a ``Comparison``)."""
    return renderer(document, name)(value, layout or Layout(width=document.file_width))
