"""Files a command leaves behind for CI, written one way: whole or not at all.

`check` and `suggest` both leave JSON, JUnit, Markdown, the GitHub step summary and a baseline;
each is asked for by a flag, checked writable before any work, and rendered only when asked.
No torch here.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from .errors import UsageError


def write_atomic(path: Path, text: str) -> None:
    """Write whole or not at all: a reader never sees half a report."""
    path = Path(path).expanduser()
    if path.parent and not path.parent.exists():
        raise UsageError(f"--output: folder {str(path.parent)!r} does not exist")
    fd, tmp = tempfile.mkstemp(dir=path.parent or Path("."), prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        # mkstemp makes the file 0600; a report is shared (CI uploads, teammates): what a plain
        # open() would give, the umask applied
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def writable(flag: str, path: Path | None) -> None:
    """Fail before any work when a file could not be written where asked."""
    if path is not None and not path.expanduser().parent.is_dir():
        raise UsageError(f"{flag}: folder {str(path.expanduser().parent)!r} does not exist")


@dataclass(frozen=True)
class Artefacts:
    """The files asked for, by kind (``json``, ``junit``, ``markdown``, ``html``, ...).

    ``flags`` names the flag behind each kind, for error messages.
    """

    paths: dict[str, Path | None] = field(default_factory=dict)
    flags: dict[str, str] = field(default_factory=dict)

    def check(self) -> None:
        for kind, path in self.paths.items():
            writable(self.flags.get(kind, f"--{kind}"), path)

    def wanted(self, kind: str) -> bool:
        return self.paths.get(kind) is not None

    def write(self, kind: str, text: Callable[[], str]) -> Path | None:
        """Render (only when asked) and write one artefact; the path written, or None."""
        path = self.paths.get(kind)
        if path is None:
            return None
        write_atomic(path, text())
        return path


def append_step_summary(markdown: str) -> bool:
    """GitHub Actions shows $GITHUB_STEP_SUMMARY on the run's page; appended, never replaced,
    because other steps write there too."""
    summary_file = os.environ.get("GITHUB_STEP_SUMMARY")
    if not summary_file:
        return False
    with open(summary_file, "a", encoding="utf-8") as handle:
        handle.write(markdown + "\n")
    return True
