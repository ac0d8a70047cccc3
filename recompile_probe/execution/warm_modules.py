"""What a first compile imports, remembered per installation, so that a warm server imports it
without sending a scout child to find out each time (a scout's compiles cost seconds of a
core the command could use).

The list lives under ``$XDG_CACHE_HOME/recompile-probe/`` (``~/.cache`` by default), one file per
key: Python, torch (its version and where it is installed, with that file's time), this
package's version, the backends scouted and the import-time environment. A list is only a hint:
a name that no longer imports is skipped, and one missing is imported by the worker that needs
it, as a fresh interpreter would. Where the directory cannot be written, nothing is kept.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import sys
import tempfile
from collections.abc import Iterable
from pathlib import Path


def _directory() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "recompile-probe"


def path(backends: Iterable[str], env: dict[str, str]) -> Path:
    """The file of this installation's list (torch must be imported)."""
    import torch

    from ..version import __version__

    where = torch.__file__ or ""
    with contextlib.suppress(OSError):
        where += f"@{os.stat(where).st_mtime_ns}"
    key = json.dumps(
        [sys.version, sys.executable, torch.__version__, where, __version__, sorted(backends),
         sorted(env.items())]
    )  # fmt: skip
    return (
        _directory() / f"first-compile-modules-{hashlib.sha256(key.encode()).hexdigest()[:16]}.json"
    )


def read(file: Path) -> list[str] | None:
    try:
        names = json.loads(file.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if isinstance(names, list) and names and all(isinstance(n, str) for n in names):
        return names
    return None


def write(file: Path, names: list[str]) -> None:
    """Atomically, so that a server starting beside this one reads a whole list or none."""
    if not names:
        return
    tmp = None
    try:
        file.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=file.parent, prefix=".modules-", suffix=".tmp")
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            json.dump(names, out)
        os.replace(tmp, file)
    except OSError:
        if tmp is not None:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
