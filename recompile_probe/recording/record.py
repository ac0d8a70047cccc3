"""`record()`: the recorder around any block of user code, summarised per compiled function.

    with recompile_probe.record() as rec:
        for b in (1, 2, 8):
            sampler(*make_inputs(b))
    assert rec.recompiles == 0, rec.explain()

It listens only (no reset, no counting backend), so it sees exactly what Dynamo does to the
user's own compiled code, including compiles of frames the block calls into.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from ..analysis.functions import by_function
from ..provenance.origin import at_with_callers
from ..reasons.causes import worth_showing
from ..records import encode
from ..records.run import CompileEvent
from ..records.watch import FunctionSummary


class Recording:
    """What compiled while the block ran. Counts are live inside the block, final after it."""

    def __init__(self) -> None:
        self._recorder: Any = None

    @property
    def events(self) -> list[CompileEvent]:
        if self._recorder is None:
            return []
        self._recorder.poll()
        return list(self._recorder.events)

    @property
    def complete(self) -> bool:
        """False when Dynamo dropped records before they were read (its deque overflowed on a
        torch without a metrics log stream): the counts are then lower bounds."""
        return self._recorder is None or self._recorder.complete

    @property
    def compiles(self) -> int:
        return len(self.events)

    @property
    def recompiles(self) -> int:
        return sum(e.recompile for e in self.events)

    @property
    def graphs(self) -> int | None:
        """Graphs handed to a backend, summed over the compiles (each counted as Dynamo hands
        them over: a reset or counters.clear() in the block changes nothing); None if any
        compile's count is unavailable."""
        counts = [e.graphs for e in self.events]
        return None if any(c is None for c in counts) else sum(c for c in counts if c is not None)

    @property
    def reasons(self) -> list[str]:
        return [e.reason for e in self.events if e.recompile and e.reason]

    def by_function(self) -> list[FunctionSummary]:
        extras = self._recorder.extras if self._recorder is not None else None
        return by_function(self.events, extras=extras, code_qualnames=_qualnames())

    def explain(self) -> str:
        """A few lines for an assertion message: per function, counts and reasons."""
        lines = [
            f"{self.compiles} compiles, {self.recompiles} recompiles, "
            f"{'n/a' if self.graphs is None else self.graphs} graphs"
            + (
                ""
                if self.complete
                else " (incomplete: Dynamo dropped records; counts are lower bounds)"
            )
        ]
        for f in self.by_function():
            lines.append(
                f"  {f.function} ({f.filename}:{f.line}): {f.compiles} compiles, "
                f"{f.recompiles} recompiles"
                + (f"; compiled code {f.code_name}" if f.code_name else "")
                + (f"; called at {f.call_site}" if f.call_site else "")
            )
            costly = [c for c in f.causes if c.recompiles]
            if worth_showing(f.causes, len(f.reasons)):
                lines.append("    causes (every failing guard, grouped by what changed):")
                for c in costly:
                    where = at_with_callers(c.origin)
                    lines.append(
                        f"    * {c.label} (x{c.recompiles})" + (f"  {where}" if where else "")
                    )
                lines.append("    first failing guard, as Dynamo logs it:")
            for r in f.reasons:
                where = at_with_callers(r.origin)
                lines.append(
                    f"    - {r.text}"
                    + (f" (x{r.count})" if r.count > 1 else "")
                    + (f"  {where}" if where else "")
                )
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        return {
            "compiles": self.compiles,
            "recompiles": self.recompiles,
            "graphs": self.graphs,
            "complete": self.complete,
            "functions": [encode.data(f) for f in self.by_function()],
        }


def _qualnames() -> dict[tuple, str]:
    """(co_name, file, line) -> co_qualname of each code object Dynamo compiled (as watch reads
    them at exit), so a decorator's closure is recognised as one."""
    import sys

    cache = sys.modules.get("recompile_probe.torch_compat.cache")
    codes = cache.dynamo_codes() if cache is not None else None
    return {
        (c.co_name, c.co_filename, c.co_firstlineno): getattr(c, "co_qualname", c.co_name)
        for c in codes or ()
    }


@contextlib.contextmanager
def record() -> Iterator[Recording]:
    from .recorder import Recorder

    recording = Recording()
    with Recorder() as recorder:
        recording._recorder = recorder
        yield recording
