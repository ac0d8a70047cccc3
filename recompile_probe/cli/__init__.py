"""The command line: flags -> library calls; errors -> messages and exit codes.

One module per command; each registers itself on the shared `app` (registry.py) when it is
imported, which happens only when its command runs or prints its help (registry.py: the table of
commands, in the order `--help` lists them). Nothing here imports torch at import time, so
`--help`, `--version`, `targets`, `strategies`, `render`, `diff` and `summarize` stay fast and
work without torch.
"""

from __future__ import annotations

from .registry import app

__all__ = ["app", "main"]


def main() -> None:
    app()
