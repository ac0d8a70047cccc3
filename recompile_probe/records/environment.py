"""The environment a report was made in: torch, Python and platform. No torch import."""

from __future__ import annotations

import platform
import sys
from importlib import metadata

from .report import Environment


def current(*, torch: str | None = None, python: str | None = None) -> Environment:
    """This process's environment; ``torch`` and ``python`` as another process reported them
    (a watched program may run another interpreter than the tool's)."""
    if torch is None and "torch" in sys.modules:  # the imported build is the truth (a source build)
        torch = getattr(sys.modules["torch"], "__version__", None)
    if torch is None:
        try:
            torch = metadata.version("torch")
        except metadata.PackageNotFoundError:
            torch = None
    return Environment(torch, python or platform.python_version(), platform.platform())
