"""User-facing errors and the process exit codes they map to.

Every error a user can cause (a bad scenario, a target that cannot be imported, a target that fails
without compiling) is a ``ProbeError``: the CLI prints its message and remedy, never a traceback.
"""

from __future__ import annotations

import difflib
import enum
from typing import Any


class ExitCode(enum.IntEnum):
    OK = 0
    #: Reserved for budget violations (``check``); ``run`` never uses it.
    BUDGET = 1
    USAGE = 2
    TARGET_OR_INTERNAL = 3
    INTERRUPTED = 130


class ProbeError(Exception):
    """An error with a message meant for the user and an exit code."""

    exit_code = ExitCode.USAGE

    def __init__(self, message: str, remedy: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.remedy = remedy

    def __str__(self) -> str:
        return self.message if not self.remedy else f"{self.message}\n{self.remedy}"


class ScenarioError(ProbeError):
    """The scenario file (or a CLI override of it) is malformed."""

    def __init__(
        self,
        message: str,
        *,
        path: str | None = None,
        line: int | None = None,
        key: str | None = None,
        remedy: str | None = None,
    ) -> None:
        where = path or "<scenario>"
        if line is not None:
            where += f":{line}"
        if key:
            where += f": {key}"
        super().__init__(f"{where}: {message}", remedy)
        self.path, self.line, self.key = path, line, key


class UsageError(ProbeError):
    """A command-line flag is malformed."""


class TargetError(ProbeError):
    """The target or its input factory cannot be loaded (a usage error: exit 2)."""


class EagerFailure(ProbeError):
    """The target raises without torch.compile, so no strategy can be judged (exit 3)."""

    exit_code = ExitCode.TARGET_OR_INTERNAL


class ReportError(ProbeError):
    """A saved report cannot be read back."""


# --- the words errors use -------------------------------------------------------------------------


def did_you_mean(name: Any, choices: Any) -> str | None:
    """ "Did you mean 'mark_unbacked'?" for a misspelt name, or None when nothing is close."""
    match = difflib.get_close_matches(str(name), [str(c) for c in choices], n=1, cutoff=0.6)
    return f"Did you mean {match[0]!r}?" if match else None


def type_name(value: Any) -> str:
    """What a YAML value is, in words: "a mapping", "an integer", "nothing (null)"."""
    return {
        dict: "a mapping",
        list: "a list",
        str: "a string",
        bool: "a boolean",
        int: "an integer",
        float: "a number",
        type(None): "nothing (null)",
    }.get(type(value), type(value).__name__)
