"""Every failing guard of a recompile, grouped by root cause. No torch.

A recompile happens when every cache entry of the frame rejects the call; Dynamo names, per
entry, the guard that failed first (with ``recompiles_verbose``: every failing part of that
guard, joined by ``; ``). The first line alone misleads on real programs: a model called with an
optional keyword argument in one phase has ``len(kwargs) == 6`` fail on every entry of the other
phase, while the change that really cost the recompile (the batch going 1 -> 2, a cache
preallocated to a new length) shows only on the entries of the same phase.

So each failing guard is reduced to the input it is about and what changed there; the same input
changing the same way across entries is one cause. Causes are ranked: the length of a container
(``len(kwargs) == 6``) last, since it fails whenever an optional argument appears or goes and says
nothing about what the call changed; before it, the cause more entries rejected the call for,
then a changed tensor property or shape-env expression before a changed Python value, before
types, ids and global state.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from . import parse
from .text import (
    entry_line,
    local_source,
    mask_ids,
    split_parts,
    strip_comment,
    strip_local_scope,
)

_LEN = re.compile(r"^len\((?P<src>.+)\)\s*==\s*(?P<value>\d+)$")

#: rank of a cause: lower is more informative
TENSOR, SHAPE, VALUE, IDENTITY, CONTAINER_LENGTH, UNKNOWN = range(6)
_TENSOR_WHATS = ("size", "stride", "dtype", "requires_grad", "device", "rank", "dispatch_key")


def split(lines: Iterable[str]) -> list[tuple[str | None, str]]:
    """Recompile reason lines (``0/0: a; b``, one per entry) -> (entry, guard text) per failing
    guard, in Dynamo's order, comments kept (they name the user line)."""
    out: list[tuple[str | None, str]] = []
    for line in lines:
        entry, body = entry_line(line)
        out.extend((entry, part) for part in split_parts(body))
    return out


@dataclass(frozen=True)
class Cause:
    """One changed input behind the guard failures of one or more cache entries."""

    what: str  #: size, stride, dtype, ..., value, length, type, id, shape-env expression, ...
    source: str | None  #: the input, as Dynamo's source (L['kwargs']['input_ids'])
    dim: int | None
    before: str | None  #: what the entry expected (its compile's value)
    after: str | None  #: what the call brought, where Dynamo says so
    kind: str  #: kinds.KINDS
    rank: int  #: TENSOR .. UNKNOWN: lower is more informative
    entries: tuple[str, ...]  #: the cache entries whose guard failed for it
    guards: tuple[str, ...]  #: the failing guard texts, comments stripped, one per distinct text
    #: a container's length beside other causes: it fails whenever an optional argument comes
    #: or goes, so it says nothing about what the call changed. Alone, it is the cause.
    incidental: bool = False

    def key(self) -> tuple:
        """Identity across recompiles of a function: the input and the change (for a length or
        a Python value, the input alone: each entry expected its own value)."""
        if self.what in ("length", "value"):
            return (self.what, self.source)
        if self.rank in (SHAPE, UNKNOWN):
            # object ids differ per backend callable or object: the same change without them
            return (self.what, tuple(dict.fromkeys(mask_ids(g) for g in self.guards)))
        return (self.what, self.source, self.dim, self.before, self.after)

    def label(self) -> str:
        """``size of dim 0 of kwargs['input_ids']: 1 → 2``, as the tables print it."""
        src = strip_local_scope(self.source) if self.source else "?"
        if self.what in _TENSOR_WHATS:
            head = (
                f"{self.what} of dim {self.dim} of {src}"
                if self.dim is not None
                else f"{self.what} of {src}"
            )
            change = (
                f"{self.before} → {self.after}"
                if self.after is not None
                else f"expected {self.before}"
            )
            return f"{head}: {change}"
        if self.what == "length":
            if self.kind == "arguments_changed":
                return f"the arguments changed: len({src}) was {self.before}"
            return f"len({src}) changed (was {self.before}): an optional argument came or went"
        if self.what == "value":
            return f"{src} changed (was {self.before})"
        return mask_ids(self.guards[0]) if self.guards else f"{self.what} of {src}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "label": self.label(),
            "what": self.what,
            "source": self.source,
            "dim": self.dim,
            "before": self.before,
            "after": self.after,
            "kind": self.kind,
            "incidental": self.incidental,
            "entries": list(self.entries),
            "guards": list(self.guards),
        }


def _reduce(entry: str | None, text: str) -> tuple[tuple, dict]:
    """One failing guard -> (grouping key, cause fields)."""
    detail = parse.parse_line(f"{entry}: {text}" if entry else text)
    body = detail.text
    length = _LEN.match(body)
    if length:
        src = length.group("src").strip()
        source = local_source(src) if src.isidentifier() else src
        # every expected length is the same cause: the set of arguments changed
        return ("length", source), dict(
            what="length",
            source=source,
            dim=None,
            before=length.group("value"),
            after=None,
            kind=detail.kind if detail.kind == "arguments_changed" else "python_scalar_change",
            rank=CONTAINER_LENGTH,
        )
    if detail.what in _TENSOR_WHATS:
        rank = TENSOR
    elif detail.what == "shape-env expression":
        rank = SHAPE
    elif detail.what == "value":
        rank = VALUE
    elif detail.what in ("type", "id", "global state"):
        rank = IDENTITY
    else:
        rank = UNKNOWN
    fields = dict(
        what=detail.what,
        source=detail.source,
        dim=detail.dim,
        before=detail.expected,
        after=detail.actual,
        kind=detail.kind,
        rank=rank,
    )
    if rank == SHAPE or rank == UNKNOWN:  # the expression itself is what changed
        # ids differ per object (three new backend callables are one change)
        return (detail.what, mask_ids(body)), fields
    if rank == VALUE:  # n == 3 on one entry, n == 4 on another: n changed
        return ("value", detail.source), fields
    return (detail.what, detail.source, detail.dim, detail.expected, detail.actual), fields


def group(lines: Iterable[str]) -> list[Cause]:
    """The causes of one recompile from its failure lines: incidental ones (a container's
    length) last; before them, the one that failed more entries first (what every entry
    rejected is closer to the root), then the more informative kind, then Dynamo's order."""
    found: dict[tuple, dict] = {}
    for entry, text in split(lines):
        key, fields = _reduce(entry, text)
        item = found.get(key)
        if item is None:
            item = found[key] = dict(fields, entries=[], guards=[], order=len(found))
        if entry and entry not in item["entries"]:
            item["entries"].append(entry)
        guard = strip_comment(text)
        if guard not in item["guards"]:
            item["guards"].append(guard)
        if item["what"] in ("length", "value"):
            item["before"] = merged_before(item["before"], fields["before"])
    ordered = sorted(
        found.values(),
        key=lambda c: (c["rank"] == CONTAINER_LENGTH, -len(c["entries"]), c["rank"], c["order"]),
    )
    others = any(c["rank"] != CONTAINER_LENGTH for c in ordered)
    return [
        Cause(
            c["what"],
            c["source"],
            c["dim"],
            c["before"],
            c["after"],
            c["kind"],
            c["rank"],
            tuple(c["entries"]),
            tuple(c["guards"]),
            others and c["rank"] == CONTAINER_LENGTH,
        )
        for c in ordered
    ]


def merged_before(*values: str | None) -> str | None:
    """``"6"`` and ``"7, 6"`` -> ``"6, 7"``: every value the entries expected."""
    found = {v.strip() for value in values if value for v in value.split(", ")}
    return ", ".join(sorted(found, key=lambda v: (len(v), v))) if found else None


def primary_line(lines: Iterable[str]) -> str | None:
    """The line a recompile's kind and structured detail are read from when Dynamo's first
    failing guard is a container's length beside another cause (``len(kwargs) == 6`` on one
    entry, the batch 1 -> 2 on the others): the primary cause's, as ``entry: guard``. None
    otherwise: the first line stands (it names the newest entry, closest to the change)."""
    lines = list(lines)
    top = primary(lines)
    pairs = split(lines)
    if top is None or not pairs or _LEN.match(strip_comment(pairs[0][1])) is None:
        return None
    for entry, text in pairs:
        if strip_comment(text) in top.guards and (not top.entries or entry in top.entries):
            return f"{entry}: {text}" if entry else text
    return None


def primary(lines: Iterable[str]) -> Cause | None:
    """The cause to name for a recompile: the most informative one."""
    found = group(lines)
    return found[0] if found else None


def worth_showing(causes: Any, reason_count: int) -> bool:
    """Whether a function's causes say more than Dynamo's first line per recompile: an
    incidental cause, a cause that only also failed, or not one cause per distinct reason."""
    costly = [c for c in causes if c.recompiles]
    return bool(costly) and (
        any(c.incidental for c in causes)
        or any(not c.recompiles for c in causes)
        or len(costly) != reason_count
    )
