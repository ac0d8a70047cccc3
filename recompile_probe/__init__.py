"""recompile-probe: find, explain and prevent torch.compile (Dynamo) recompilations.

Importing the package does not import torch; ``record()`` does when it is entered.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from .version import __version__

if TYPE_CHECKING:
    from .recording.record import Recording
    from .records.coverage import Coverage


@contextlib.contextmanager
def record() -> Iterator[Recording]:
    """Record every Dynamo compile in the block: ``with recompile_probe.record() as rec: ...``."""
    from .recording.record import record as _record

    with _record() as recording:
        yield recording


def coverage(compiled: Any, make_inputs: Any, **options: Any) -> Coverage:
    """Whether every size in a range is served by the cache entries a warmed torch.compile'd
    function holds: ``recompile_probe.coverage(fn, make_inputs, B=(1, 4096))`` (docs/coverage.md).
    """
    from .cover.api import coverage as _coverage

    return _coverage(compiled, make_inputs, **options)


def assert_no_recompile(found: Coverage, **ranges: Any) -> None:
    """Fail unless every size is served; the message names the smallest that is not."""
    from .cover.api import assert_no_recompile as _assert

    _assert(found, **ranges)


__all__ = ["__version__", "assert_no_recompile", "coverage", "record"]
