"""Guard evaluation: whether some cache entry of the target's frame accepts a point's inputs.

Each entry is asked with ``check_verbose`` (torch_compat/cache.accepts), which leaves the guard
tree as it was: a failing plain ``check`` would reorder it and change the reason the program's
next real recompile logs. Frame locals are built as Dynamo's frame sees them
(targets/frames.py).
"""

from __future__ import annotations

import ast
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..reasons.text import strip_comment
from ..targets.frames import frame_locals
from ..targets.loader import LoadedTarget
from ..torch_compat import cache
from .inputs import Template


@dataclass
class Evaluator:
    """Asks the entries of one frame about points built from a template."""

    target: LoadedTarget
    code: Any
    entries: Sequence[Any]  #: most recently used first, as Dynamo tries them
    template: Template
    base: Mapping[str, int]  #: every symbol's size at the template's call
    checked: int = 0
    too_large: int = 0  #: sizes whose inputs could not be allocated here (not evaluated)

    def locals_at(self, sizes: Mapping[str, int]) -> dict[str, Any] | None:
        try:
            inputs = self.template.at({**self.base, **sizes})
        except (RuntimeError, MemoryError):  # inputs too large to allocate, even untouched
            self.too_large += 1
            return None
        if inputs is None:
            return None
        return frame_locals(self.target.fn, *inputs)

    def served(self, sizes: Mapping[str, int]) -> bool | None:
        """Whether an entry accepts; None where the locals cannot be built or asked."""
        index = self.serving(sizes)
        return None if index is None else index >= 0

    def serving(self, sizes: Mapping[str, int]) -> int | None:
        """The index of the entry Dynamo would run (the first that accepts, in its order); -1:
        none; None where the locals cannot be built or asked."""
        f_locals = self.locals_at(sizes)
        if f_locals is None:
            return None
        self.checked += 1
        for index, entry in enumerate(self.entries):
            said = cache.accepts(entry, f_locals)
            if said is None:
                return None
            if said:
                return index
        return -1

    def failing_guard(self, sizes: Mapping[str, int]) -> str | None:
        """The newest entry's first failing guard at these sizes, in Dynamo's words."""
        f_locals = self.locals_at(sizes)
        if f_locals is None or not self.entries:
            return None
        parts = cache.failing_parts(self.entries[0], f_locals)
        if not parts:
            return None
        if len(parts) == 1:
            return strip_comment(parts[0])
        # a lambda guard names all its parts: the first that evaluates false fails; one that
        # cannot be evaluated here (it reads a global) is named only where none is known false
        unknown = None
        for part in parts:
            code = strip_comment(part)
            held = _holds(code, f_locals)
            if held is False:
                return code
            if held is None and unknown is None:
                unknown = code
        return unknown or strip_comment(parts[0])


def _holds(code: str, f_locals: dict[str, Any]) -> bool | None:
    """A shape guard's Python (``2 <= L['x'].size()[0]``) evaluated on the frame's locals;
    None where it is not such plain arithmetic (it is never run then)."""
    try:
        tree = ast.parse(code, mode="eval")
    except SyntaxError:
        return None
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id != "L":
            return None
        if isinstance(node, ast.Attribute) and node.attr not in _READS:
            return None
    try:
        return bool(eval(compile(tree, "<guard>", "eval"), {"__builtins__": {}}, {"L": f_locals}))
    except Exception:  # noqa: BLE001 - a division by zero, as in Dynamo, fails the guard
        return False


_READS = frozenset({"size", "stride", "storage_offset"})
