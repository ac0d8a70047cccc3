"""Provenance evidence read from a TORCH_TRACE log's own records, for the one rule (attribution.py).

No torch: a trace can be read anywhere. ``guard_added_fast`` and ``symbolic_shape_specialization``
carry user stacks whose files are indices into the trace's string table (full paths); recompile
reasons and guard comments carry torch's shortened paths, turned back into full ones by torch's
own rule (cut the prefix shared with torch's directory, which the string table names too),
exactly or not at all. A trace keeps no ShapeEnv, so shape-env guards get only the line Dynamo's
comment names.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from typing import Any

from ..records import encode
from ..records.origin import Origin
from .locations import locs_in_comment, split_guard_text, user_function_name

_GRAPH_BREAK_AT = re.compile(r"^Graph break in user code at (?P<path>.+):(?P<line>\d+)\s*$")
_TORCH_PART = re.compile(r"^(?P<dir>.*[\\/]torch)[\\/]_dynamo[\\/]")


class TraceEvidence:
    """What one trace file says about its compiles, per compile id."""

    def __init__(self) -> None:
        self.files: dict[int, str] = {}
        self.torch_dir: str | None = None
        #: compile id -> tensor source -> where Dynamo first used it (TENSOR_MATCH comments)
        self._first_uses: dict[str, dict[str, Origin]] = {}
        #: compile id -> (sources, user line) of each specialization
        self._specializations: dict[str, list[tuple[tuple[str, ...], Origin]]] = {}

    def reset(self) -> None:
        """Dynamo was reset: compile ids name other compiles from here on (files stay)."""
        self._first_uses.clear()
        self._specializations.clear()

    # --- the records --------------------------------------------------------------------------

    def add_file(self, path: str, index: int) -> None:
        self.files[index] = path
        match = _TORCH_PART.match(path)
        if match and self.torch_dir is None:
            self.torch_dir = match.group("dir")

    def read_guards(self, compile_id: str, payload: str) -> None:
        """TENSOR_MATCH lines of dynamo_cpp_guards_str: each tensor's first use."""
        uses: dict[str, Origin] = {}
        for line in payload.splitlines():
            _, _, rest = line.partition("TENSOR_MATCH: check_tensor(")
            if not rest:
                continue
            source = rest.split(",", 1)[0].strip()
            _, comment = split_guard_text(rest)
            locs = locs_in_comment(comment) if comment else []
            if locs:
                path, exact = self.resolve(locs[0].path)
                uses.setdefault(
                    source,
                    self._origin(
                        path, locs[0].line, locs[0].function, locs[0].code, "first_use", exact
                    ),
                )
        self._first_uses[compile_id] = uses

    def specialization(self, compile_id: str, record: Mapping[str, Any]) -> dict:
        """A symbolic_shape_specialization record -> its report dict {source, value, reason,
        origin, sources}; kept as evidence for the compile's size guards."""
        sources = [str(s) for s in record.get("sources") or []]
        try:
            value: Any = int(record.get("value"))  # type: ignore[arg-type]
        except (TypeError, ValueError):
            value = record.get("value")
        origin = self.from_stack(record.get("user_stack"), "specialized")
        if origin is not None:
            self._specializations.setdefault(compile_id, []).append((tuple(sources), origin))
        return {
            "source": sources[0] if sources else None,
            "value": value,
            "reason": record.get("reason"),
            "origin": encode.data(origin),
            "sources": sources,
        }

    def graph_break(self, payload: str) -> dict:
        """A dynamo_graph_break_reason artifact -> {reason, origin, count}."""
        lines = payload.splitlines()
        match = _GRAPH_BREAK_AT.match(lines[0].strip()) if lines else None
        reason = None
        start = next(
            (i for i, ln in enumerate(lines) if ln.startswith("Graph Break Reason:")), None
        )
        if start is not None:
            # the in-process reason's text: what follows the "Encountered graph break when
            # attempting to trace ..." heading, up to the traceback
            body = [lines[start].split(":", 1)[1].strip()]
            for text in lines[start + 1 :]:
                if text.startswith(("User code traceback:", "Traceback (most recent")):
                    break
                body.append(text)
            if body[0].startswith("Encountered graph break") and any(b.strip() for b in body[1:]):
                body = body[1:]
            reason = "\n".join(body).strip() or None
        if match is None:
            return {"reason": reason, "origin": None, "count": 1}
        path, line = match.group("path"), int(match.group("line"))
        function, code = "?", None
        for i, text in enumerate(lines):  # the traceback's last frame at that line
            if text.strip().startswith(f'File "{path}", line {line}, in '):
                function = text.rsplit(" in ", 1)[1].strip()
                code = lines[i + 1].strip() if i + 1 < len(lines) else None
        origin = self._origin(path, line, function, code or None, "graph_break")
        return {"reason": reason, "origin": encode.data(origin), "count": 1}

    def from_stack(self, stack: Any, role: str) -> Origin | None:
        """The innermost user frame of a structured-trace stack."""
        for frame in reversed(stack if isinstance(stack, list) else []):
            path = self.files.get(frame.get("filename", -1)) if isinstance(frame, dict) else None
            if path is None or self._is_torch(path):
                continue
            line = frame.get("line")
            if not isinstance(line, int):  # a frame without its line names no line: n/a
                return None
            return self._origin(path, line, str(frame.get("name")), frame.get("loc") or None, role)
        return None

    # --- attribution.Evidence -----------------------------------------------------------------

    def compile_origins(self, compile_id: str | None) -> None:
        return None  # a trace keeps no ShapeEnv

    def first_uses(self, compile_id: str | None) -> Mapping[str, Origin] | None:
        return self._first_uses.get(compile_id or "")

    def specializations(self, compile_id: str | None) -> Iterable[tuple[Iterable[str], Origin]]:
        return self._specializations.get(compile_id or "", [])

    def resolve(self, path: str, line: int = 0, code: str | None = None) -> tuple[str, bool]:
        found = {
            p
            for p in self.files.values()
            if not self._is_torch(p) and (p == path or self._short(p) == path)
        }
        return (next(iter(found)), True) if len(found) == 1 else (path, False)

    # --- paths --------------------------------------------------------------------------------

    @staticmethod
    def _origin(
        path: str, line: int, function: str, code: str | None, role: str, exact: bool = True
    ) -> Origin:
        return Origin(path, line, user_function_name(function), code, role, exact)

    def _is_torch(self, path: str) -> bool:
        return self.torch_dir is not None and path.startswith(self.torch_dir)

    def _short(self, path: str) -> str:
        if self.torch_dir is None:
            return path
        try:
            prefix = os.path.commonpath([path, self.torch_dir])
        except ValueError:
            return path
        return path[len(prefix) + 1 :]
