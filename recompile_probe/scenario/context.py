"""The error context every scenario parser shares: file, line table, the key tables. No torch.

Each part of a scenario is parsed next to what it builds (inputs.py, sequences.py, backend.py,
distributed.py, strategies.py, budgets.py; sizes and paths in sizes/); they all report through
one ``Context``, so every error names the file, the line and the key the same way.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TypeVar

from ..errors import ScenarioError, did_you_mean, type_name
from ..sizes.points import SizeError
from .keys import Key, in_bounds, python_types

T = TypeVar("T")


def join(prefix: str, key: Any) -> str:
    return f"{prefix}.{key}" if prefix else str(key)


class Context:
    """Where a scenario came from: its path and the line of every dotted key."""

    def __init__(self, path: str | None, lines: dict[str, int]) -> None:
        self.path, self.lines = path, lines

    @property
    def base(self) -> Path:
        """The folder the scenario's relative paths start from."""
        return Path(self.path).parent if self.path else Path.cwd()

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
        """``value`` checked against the JSON type and bounds of its key table entry, in its
        words."""
        kinds = python_types(entry)
        if kinds is not None:
            self.expect(key, value, kinds, entry.what)
        if not in_bounds(entry.schema, value):
            raise self.fail(key, f"expected {entry.what}, got {value!r}", entry.remedy or None)
        return value

    def sizes(self, call: Callable[[], T]) -> T:
        """Run a sizes/ parser, its SizeError turned into this file's ScenarioError."""
        try:
            return call()
        except SizeError as exc:
            raise self.fail(exc.key, exc.message, exc.remedy) from None

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
