"""recompile-probe: find, explain and prevent torch.compile (Dynamo) recompilations.

Importing the package does not import torch; ``record()`` does when it is entered.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import TYPE_CHECKING

from .version import __version__

if TYPE_CHECKING:
    from .recording.record import Recording


@contextlib.contextmanager
def record() -> Iterator[Recording]:
    """Record every Dynamo compile in the block: ``with recompile_probe.record() as rec: ...``."""
    from .recording.record import record as _record

    with _record() as recording:
        yield recording


__all__ = ["__version__", "record"]
