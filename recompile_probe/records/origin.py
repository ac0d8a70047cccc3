"""A user line and what it did to a compile, and the records that carry one. No torch.

An ``Origin`` is a line of the user's code with its role (``ROLES``): it ``created`` a guard,
``specialized`` a size or int to a constant, is where a tensor was first used (``first_use``: a
static size has no creating line), or is where a ``graph_break`` happened. provenance/ finds
them; every record that names a user line holds one.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from .encode import OMIT_EMPTY

ROLES = ("created", "specialized", "first_use", "graph_break")


@dataclass(frozen=True)
class StackFrame:
    """One user frame of the stack Dynamo wrote under a failing guard ("User stack trace")."""

    file: str  #: the full path, as Dynamo printed it
    line: int
    function: str
    code: str | None  #: the source line, stripped; None when torch did not print it


@dataclass(frozen=True)
class Origin:
    """A line of the user's code and what it did to the compile."""

    file: str  #: full path; torch's shortened path when ``file_exact`` is False
    line: int
    function: str  #: the user's function (a graph-break resume function named after its own)
    code: str | None  #: the source line, stripped; None when torch did not print it
    role: str  #: created | specialized | first_use | graph_break
    #: False: ``file`` is the short path torch printed (no or several candidate files matched)
    file_exact: bool = True
    #: the user frames that led to the guard, outermost first, where Dynamo wrote them ("User
    #: stack trace": an inlined helper's guard then names its caller's line too); () where it
    #: did not, and then left out of the JSON
    stack: tuple[StackFrame, ...] = field(default=(), metadata=OMIT_EMPTY)

    def where(self) -> str:
        """``file.py:23`` (the base name; renderers add the code)."""
        return f"{os.path.basename(self.file)}:{self.line}"


@dataclass(frozen=True)
class Specialization:
    """A dynamic size or int forced to a constant by the user's code (a replacement to a number)."""

    #: the first source of the symbol, e.g. L['x'].size()[0]; None where a trace names none
    source: str | None
    value: int | float
    reason: str | None  #: None in-process: Dynamo keeps the reason only in its logs and traces
    origin: Origin | None
    sources: tuple[str, ...] = ()  #: every source of the symbol (duck-sized ones included)


@dataclass(frozen=True)
class RunSpecialization:
    """A size or int the user's code forced to a constant in one compile of a run."""

    source: str | None
    value: int | float
    reason: str | None
    origin: Origin | None
    compile_id: str | None  #: the compile whose ShapeEnv specialized it


@dataclass(frozen=True)
class GraphBreakSite:
    """Graph breaks with the same reason at the same user line, counted."""

    #: Dynamo's reason text, whole (its first line is the summary); None where a trace's
    #: record holds only a traceback
    reason: str | None
    origin: Origin | None  #: innermost user frame, role graph_break
    count: int  #: how many GraphCompileReasons (one per frame that compiled up to the break)
