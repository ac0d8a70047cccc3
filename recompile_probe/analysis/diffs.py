"""Guard diffs between consecutive cache entries of a frame, and guard listings by kind.

No torch.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field

from ..records.origin import Origin
from ..records.run import OBJECT_ALIASING, SHAPE_ENV, CacheEntry, GuardLine, Run

#: guards compared field by field when their source is the same in both entries
_TENSOR_FIELDS = re.compile(
    r"(?P<key>size|stride|device|requires_grad)=(?P<value>\[[^\]]*\]|[^,)]+)"
)
_DTYPE = re.compile(r"\btorch\.(?P<value>[a-z]+\d*)\b")


@dataclass(frozen=True)
class FieldChange:
    kind: str
    source: str | None
    before: str
    after: str
    fields: dict[str, tuple[str, str]] = field(default_factory=dict)
    #: the user line behind the guard (the new entry's; a tensor's first use), or None
    origin: Origin | None = None

    def describe(self) -> str:
        if self.fields:
            changes = "; ".join(f"{k}={a} → {k}={b}" for k, (a, b) in self.fields.items())
            return f"{self.kind} {self.source or ''} {changes}".replace("  ", " ")
        return f"{self.kind} {self.before} → {self.after}"


@dataclass(frozen=True)
class GuardDiff:
    function: str
    old: str | None  #: compile id
    new: str | None
    added: tuple[GuardLine, ...]
    removed: tuple[GuardLine, ...]
    changed: tuple[FieldChange, ...]


def _tensor_fields(text: str) -> dict[str, str]:
    fields = {m.group("key"): m.group("value").strip() for m in _TENSOR_FIELDS.finditer(text)}
    dtype = _DTYPE.search(text)
    if dtype:
        fields["dtype"] = dtype.group("value")
    return fields


def _keyed(entry: CacheEntry) -> dict[tuple, GuardLine]:
    """TENSOR_MATCH guards are keyed by source (so a change is one change); others by text."""
    out: dict[tuple, GuardLine] = {}
    for g in entry.guards:
        key = (g.kind, g.source) if g.kind == "TENSOR_MATCH" else (g.kind, g.source, g.text)
        out.setdefault(key, g)
    return out


def guard_diff(old: CacheEntry, new: CacheEntry) -> GuardDiff:
    before, after = _keyed(old), _keyed(new)
    added = tuple(g for k, g in after.items() if k not in before)
    removed = tuple(g for k, g in before.items() if k not in after)
    changed = []
    for key in before.keys() & after.keys():
        a, b = before[key], after[key]
        if a.text != b.text:
            fa, fb = _tensor_fields(a.text), _tensor_fields(b.text)
            diff = {
                k: (fa.get(k, "-"), fb.get(k, "-")) for k in {**fa, **fb} if fa.get(k) != fb.get(k)
            }
            changed.append(
                FieldChange(a.kind, a.source, a.text, b.text, diff, b.origin or a.origin)
            )
    changed.sort(key=lambda c: (c.kind, c.source or ""))
    return GuardDiff(new.function, old.compile_id, new.compile_id, added, removed, tuple(changed))


def diffs(run: Run) -> list[GuardDiff]:
    """Between consecutive entries of each frame, oldest first."""
    by_frame: dict[tuple, list[CacheEntry]] = {}
    for entry in run.entries:
        by_frame.setdefault((entry.function, entry.filename, entry.line), []).append(entry)
    return [guard_diff(a, b) for entries in by_frame.values() for a, b in zip(entries, entries[1:])]


def kinds(entry: CacheEntry) -> dict[str, int]:
    """Guard lines per kind (one per code part: a leaf guard may have several)."""
    return dict(Counter(g.kind for g in entry.guards).most_common())


def leaf_kinds(entry: CacheEntry) -> dict[str, int] | None:
    """Leaf guards per kind, adding up to leaf_guard_count; None for a report without them."""
    return entry.leaf_guard_kinds


def shape_env_guards(entry: CacheEntry) -> list[str]:
    """Only the shape env's symbolic guards (not the other epilogue lambda, the aliasing one)."""
    return [g.text for g in entry.guards if g.kind == SHAPE_ENV]


def aliasing_guards(entry: CacheEntry) -> list[str]:
    return [g.text for g in entry.guards if g.kind == OBJECT_ALIASING]
