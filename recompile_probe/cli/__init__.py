"""The command line: flags -> library calls; errors -> messages and exit codes.

One module per command; each registers itself on the shared `app` (common.py). The import order
below is the order `--help` lists the commands in. Nothing here imports torch at import time, so
`--help`, `--version`, `targets`, `strategies`, `render`, `diff` and `summarize` stay fast and
work without torch.
"""

from __future__ import annotations

from . import (  # noqa: F401,E401
    check,
    diff,
    explain,
    listing,
    merge,  # noqa: F401,E402
    render,
    run,
    schema,  # noqa: F401,E402
    suggest,  # noqa: F401,E402
    summarize,
    watch,
)
from .common import app

__all__ = ["app", "main"]


def main() -> None:
    app()
