"""The error context every scenario parser shares: file, line table, did-you-mean. No torch.

Each part of a scenario is parsed next to what it builds (budgets in budgets.py, strategy fields
in strategies.py, tensor specs in inputs.py, sizes and paths in sizes.py); they all report through
one ``Context``, so every error names the file, the line and the key the same way.
"""

from __future__ import annotations

import difflib
import re
from typing import Any, Mapping

from .errors import ScenarioError


def suggest(name: Any, choices: Any) -> str | None:
    match = difflib.get_close_matches(str(name), [str(c) for c in choices], n=1, cutoff=0.6)
    return f"Did you mean {match[0]!r}?" if match else None


def type_name(value: Any) -> str:
    return {dict: "a mapping", list: "a list", str: "a string", bool: "a boolean", int: "an integer",
            float: "a number", type(None): "nothing (null)"}.get(type(value), type(value).__name__)


def join(prefix: str, key: Any) -> str:
    return f"{prefix}.{key}" if prefix else str(key)


class Context:
    """Where a scenario came from: its path and the line of every dotted key."""

    def __init__(self, path: str | None, lines: dict[str, int]) -> None:
        self.path, self.lines = path, lines

    def line(self, key: str) -> int | None:
        line, probe = self.lines.get(key), key
        while line is None and probe:  # fall back to the closest enclosing key with a line
            probe = re.sub(r"(\.[^.\[]*|\[\d+\])$", "", probe)
            line = self.lines.get(probe)
        return line

    def fail(self, key: str, message: str, remedy: str | None = None) -> ScenarioError:
        return ScenarioError(message, path=self.path, line=self.line(key), key=key or None,
                             remedy=remedy)

    def where(self, key: str) -> str | None:
        """"file.yaml:12" for a key, for records that point back at the scenario."""
        line = self.lines.get(key)
        return f"{self.path or '<scenario>'}:{line}" if line else self.path

    def expect(self, key: str, value: Any, kind: type | tuple[type, ...], what: str) -> Any:
        # bool is an int in Python; a YAML `true` where a number belongs is a mistake.
        if isinstance(value, bool) and bool not in (kind if isinstance(kind, tuple) else (kind,)):
            raise self.fail(key, f"expected {what}, got a boolean ({value!r})")
        if not isinstance(value, kind):
            raise self.fail(key, f"expected {what}, got {type_name(value)} ({value!r})")
        return value

    def keys(self, key: str, mapping: Mapping, allowed: tuple[str, ...]) -> None:
        for k in mapping:
            if str(k) not in allowed:
                raise self.fail(join(key, k), f"unknown key {str(k)!r}",
                                suggest(k, allowed) or f"Valid keys: {', '.join(allowed)}.")
