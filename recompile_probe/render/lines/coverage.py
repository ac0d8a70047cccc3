"""Coverage of a declared range, as every format shows it under the table. No torch.

The table cell is render/cells.py's ``covers``. The section: per run,
how it was decided, each unserved part with its failing guard and user line (the first
``SHOWN`` on the terminal; JSON keeps them all), runtime failures of served sizes, and notes.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from ...records.coverage import Coverage
from ...records.run import Run
from ...sizes.ranges import format_box, format_ranges

#: unserved parts listed per run on the terminal and in Markdown
SHOWN = 5


def _at(names: list[str], box: tuple[tuple[int, int], ...]) -> str:
    text = format_box(names, box)
    return f"{names[0]} {text}" if len(names) == 1 else text


def section(runs: Sequence[Run], shown: int | None = SHOWN) -> list[str]:
    """The coverage lines of these runs; ``shown``: unserved parts listed per run (None: all)."""
    out: list[str] = []
    for run in runs:
        if run.coverage is not None:
            out += _lines(run.strategy, run.coverage, shown)
    return out


def _lines(strategy: str, c: Coverage, shown: int | None) -> list[str]:
    span = format_ranges(c.ranges)
    if not c.decided:
        return [f"{strategy}: {span}: n/a ({c.why_na})"]
    names = list(c.ranges)
    head = f"{strategy}: {span}: "
    if c.proved:
        head += f"every size served ({c.method}, {c.scope})"
    elif not c.unserved:
        head += f"no unserved size found ({c.method}, {c.scope}: not a proof)"
    else:
        cex = c.counterexample or {}
        at = ", ".join(f"{k} = {v}" for k, v in cex.items())
        head += f"not every size is served ({c.method}, {c.scope}); smallest unserved: {at}"
    timing = f"; {c.points_checked} checks in {c.seconds * 1000:.0f} ms" if c.seconds else ""
    out = [head + timing]
    listed = c.unserved if shown is None else c.unserved[:shown]
    for miss in listed:
        line = f"  {_at(names, tuple(miss.sizes.values()))}: {miss.outcome}"
        if miss.guard:
            line += f", guard `{miss.guard}`" + (
                f" [{miss.reason_kind}]" if miss.reason_kind else ""
            )
        if miss.decided_by == "stance":
            line += " (a real call refused under the fail-on-recompile stance)"
        if miss.origin:
            line += f" at {Path(miss.origin.file).name}:{miss.origin.line}"
            if miss.origin.code:
                line += f"  `{miss.origin.code}`"
        out.append(line)
    if len(listed) < len(c.unserved):
        out.append(f"  … {len(c.unserved) - len(listed)} more unserved part(s) in the JSON report")
    if c.boxes_left_out:
        out.append(f"  … {c.boxes_left_out} more served or unserved part(s), not listed anywhere")
    failures = list(c.raises_at_runtime or ())
    for failure in failures if shown is None else failures[:shown]:
        out.append(
            f"  served but raises at {_at(names, tuple(failure.sizes.values()))}: "
            f"{failure.assertion}"
        )
    if shown is not None and len(failures) > shown:
        out.append(
            f"  … {len(failures) - shown} more served part(s) that raise, in the JSON report"
        )
    if c.raises_left_out:
        out.append(f"  … {c.raises_left_out} more served part(s) that raise, not listed anywhere")
    out += [f"  note: {n}" for n in c.notes]
    return out
