"""torch's own files and how it shortens user paths in guards and logs.

Read through ``sys.modules``: nothing here imports torch, so a path can be told torch's (or not)
wherever torch already is, and never makes a process import it.
"""

from __future__ import annotations

import os
import sys
from typing import Any

_TORCH_DIR: list[str | None] = []


def torch_dir() -> str | None:
    """The installed torch package's folder, once torch is imported; else None."""
    if not _TORCH_DIR:
        torch = sys.modules.get("torch")
        path: Any = getattr(torch, "__file__", None)
        if path is None:
            return None
        _TORCH_DIR.append(os.path.dirname(os.path.abspath(path)))
    return _TORCH_DIR[0]


def shorten(path: str) -> str:
    """torch.utils._traceback.shorten_filename, or the same rule where it is missing."""
    traceback_mod = sys.modules.get("torch.utils._traceback")
    shorten_filename: Any = getattr(traceback_mod, "shorten_filename", None)
    if shorten_filename is not None:
        return shorten_filename(path)
    base = torch_dir()
    if base is None:
        return path
    try:
        prefix = os.path.commonpath([path, base])
    except ValueError:
        return path
    return path[len(prefix) + 1 :]


def is_torch_file(path: str) -> bool:
    base = torch_dir()
    return base is not None and os.path.abspath(path).startswith(base + os.sep)
