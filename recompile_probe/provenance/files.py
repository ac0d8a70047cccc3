"""torch's shortened user paths -> full paths, exactly or not at all; user frames of a stack.

Dynamo prints user paths shortened (``shorten_filename`` cuts the prefix shared with torch's own
directory, and one more character); the full path is recovered only when exactly one candidate
file (the traced code objects' files, loaded modules, linecache) shortens to the same text,
otherwise the short path is kept with ``file_exact`` False. No torch import.
"""

from __future__ import annotations

import linecache
import sys
import threading
from collections.abc import Callable, Iterable
from typing import Any

from ..records.origin import Origin
from ..torch_compat.files import is_torch_file, shorten
from .locations import UserLoc, user_function_name


class FileResolver:
    """Recovers full paths from torch's shortened ones; exact or not at all.

    Candidates: ``hints`` (the compile's traced code files), every loaded module's file and every
    file linecache knows (notebook cells, exec'd code). A short path resolves only when exactly one
    candidate shortens to it (torch's own rule, so no suffix guessing) and, when torch printed the
    line's code, that file's line says the same.
    """

    _lock = threading.Lock()
    _global: dict[str, frozenset[str]] = {}
    _global_key: tuple[int, int] = (-1, -1)
    #: every candidate file by its base name, kept up to date incrementally: sys.modules and
    #: linecache only grow in the common case (dicts keep insertion order, so the new ones are
    #: at the end); a shrink rebuilds it. A test suite imports and execs as it goes: a full scan
    #: per change cost more than the compile it served
    _by_name: dict[str, set[str]] = {}
    _seen: tuple[int, int] = (0, 0)

    def __init__(self, hints: Iterable[str] = ()) -> None:
        self.hints = tuple(dict.fromkeys(h for h in hints if h))
        self._memo: dict[tuple[str, int, str | None], tuple[str, bool]] = {}

    @classmethod
    def _index(cls, modules: list[Any], lines: list[Any]) -> None:
        seen_modules, seen_lines = cls._seen
        if len(modules) < seen_modules or len(lines) < seen_lines:
            cls._by_name, seen_modules, seen_lines = {}, 0, 0
        paths = [getattr(m, "__file__", None) for m in modules[seen_modules:]]
        paths += lines[seen_lines:]
        for path in paths:
            if isinstance(path, str):
                cls._by_name.setdefault(path.replace("\\", "/").rsplit("/", 1)[-1], set()).add(path)
        cls._seen = (len(modules), len(lines))

    @classmethod
    def _from_process(cls, short: str) -> frozenset[str]:
        with cls._lock:
            key = (len(sys.modules), len(linecache.cache))
            if key != cls._global_key:
                cls._index(list(sys.modules.values()), list(linecache.cache))
                cls._global, cls._global_key = {}, key
            found = cls._global.get(short)
            if found is None:
                name = short.replace("\\", "/").rsplit("/", 1)[-1]
                found = frozenset(
                    p
                    for p in cls._by_name.get(name, ())
                    if p.endswith(short) and shorten(p) == short
                )
                cls._global[short] = found
            return found

    def resolve(self, short: str, line: int = 0, code: str | None = None) -> tuple[str, bool]:
        """(full path, True) when exactly one candidate matches, else (short, False)."""
        key = (short, line, code)
        if key in self._memo:
            return self._memo[key]
        matches = {h for h in self.hints if h.endswith(short) and shorten(h) == short}
        matches |= self._from_process(short)
        result = (short, False)
        if len(matches) == 1:
            full = next(iter(matches))
            text = linecache.getline(full, line).strip() if line else ""
            if code is None or not text or text == code:
                result = (full, True)
        self._memo[key] = result
        return result

    def origin(self, loc: UserLoc | None, role: str) -> Origin | None:
        """An Origin for a user location; None when it is torch's own code (not the user's)."""
        return self.origin_with(loc, role, self.resolve)

    @staticmethod
    def origin_with(
        loc: UserLoc | None, role: str, resolve: Callable[[str, int, str | None], tuple[str, bool]]
    ) -> Origin | None:
        """``origin`` with another resolver (a trace's string table, say)."""
        if loc is None:
            return None
        full, exact = resolve(loc.path, loc.line, loc.code)
        if exact and is_torch_file(full):
            return None
        code = loc.code
        if code is None and exact:
            code = linecache.getline(full, loc.line).strip() or None
        return Origin(full, loc.line, user_function_name(loc.function), code, role, exact)


def frame_origin(frame: Any, role: str) -> Origin | None:
    """An Origin from a traceback.FrameSummary (full path already): None for torch frames."""
    filename = getattr(frame, "filename", None)
    lineno = getattr(frame, "lineno", None)
    if not isinstance(filename, str) or not isinstance(lineno, int) or is_torch_file(filename):
        return None
    line = getattr(frame, "line", None)
    return Origin(
        filename,
        lineno,
        user_function_name(str(getattr(frame, "name", "?"))),
        line.strip() if line else None,
        role,
        True,
    )


def innermost_user_frame(stack: Iterable[Any]) -> Any | None:
    frames = [f for f in stack if isinstance(getattr(f, "filename", None), str)]
    for frame in reversed(frames):
        if not is_torch_file(frame.filename):
            return frame
    return None
