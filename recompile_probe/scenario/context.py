"""The error context every scenario parser shares: file, line table, the key tables. No torch.

Each part of a scenario is parsed next to what it builds (budgets in budgets.py, custom
strategies in strategies.py, tensor specs in inputs.py, sizes and paths in sizes/); they all
report through one ``Context``, so every error names the file, the line and the key the same way.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from ..errors import ScenarioError, did_you_mean, type_name
from .keys import Key, python_types


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
        return ScenarioError(
            message, path=self.path, line=self.line(key), key=key or None, remedy=remedy
        )

    def where(self, key: str) -> str | None:
        """ "file.yaml:12" for a key, for records that point back at the scenario."""
        line = self.lines.get(key)
        return f"{self.path or '<scenario>'}:{line}" if line else self.path

    def expect(self, key: str, value: Any, kind: type | tuple[type, ...], what: str) -> Any:
        # bool is an int in Python; a YAML `true` where a number belongs is a mistake.
        if isinstance(value, bool) and bool not in (kind if isinstance(kind, tuple) else (kind,)):
            raise self.fail(key, f"expected {what}, got a boolean ({value!r})")
        if not isinstance(value, kind):
            raise self.fail(key, f"expected {what}, got {type_name(value)} ({value!r})")
        return value

    def typed(self, key: str, value: Any, entry: Key) -> Any:
        """``value`` checked against the JSON type of its key table entry, in its words."""
        kinds = python_types(entry)
        if kinds is not None:
            self.expect(key, value, kinds, entry.what)
        return value

    def keys(
        self, key: str, mapping: Mapping, allowed: Mapping[str, Any] | tuple[str, ...]
    ) -> None:
        names = tuple(allowed)
        for k in mapping:
            if str(k) not in names:
                raise self.fail(
                    join(key, k),
                    f"unknown key {str(k)!r}",
                    did_you_mean(k, names) or f"Valid keys: {', '.join(names)}.",
                )
