"""The command line: flags -> library calls; errors -> messages and exit codes.

One module per command; each registers itself on the shared `app` (common.py). The import order
below is the order `--help` lists the commands in. Nothing here imports torch at import time, so
`--help`, `--version`, `targets`, `strategies`, `render`, `diff` and `summarize` stay fast and
work without torch.
"""

from __future__ import annotations

from . import run, explain, check, diff, watch, summarize, listing, render  # noqa: F401,E401
from . import merge  # noqa: F401,E402
from . import schema  # noqa: F401,E402
from . import suggest  # noqa: F401,E402
from .common import app

__all__ = ["app", "main"]


def main() -> None:
    app()
