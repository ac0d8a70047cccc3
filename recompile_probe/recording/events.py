"""One place that turns a compilation-metrics record, plus the reason logged for it, into a
``CompileEvent``: the live Recorder and the TORCH_TRACE reader both build their events here. No
torch.

Attribution is by **frame id** (the part of the compile id before the ``/``, as tlparse groups
compiles), never by function name: a compile that fails before tracing (recompile limit hit,
``error_on_recompile``) writes a metrics record with ``co_name=None`` and ``cache_size=None``,
and two different functions may share a name. The frame's identity comes from its earlier
records, or from the ``Recompiling function NAME in FILE:LINE`` header that Dynamo writes in the
recompiles log and in a RecompileError.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..provenance.origin import from_stack
from ..reasons.causes import primary_line
from ..reasons.parse import (
    classify,
    internal_error,
    is_recompile_limit,
    with_guard_collectives,
)
from ..reasons.text import entry_line, failure_lines, split_parts, strip_comment, user_stacks
from ..records.compile_ids import frame_of
from ..records.origin import Origin
from ..records.run import ClosureFunction, CompileEvent

#: Dynamo's header of a recompile message (recompiles log, RecompileError, fail_on_recompile).
_HEADER = re.compile(
    r"Recompiling function (?P<name>\S+) in (?P<file>.+?):(?P<line>\d+)\s*$", re.MULTILINE
)
_STANCE_HEADER = re.compile(
    r"filename: '(?P<file>[^']*)', function name: '(?P<name>[^']*)', "
    r"line number: (?P<line>\d+)"
)

#: the heading of each entry's failures in a recompiles_verbose message
_VERBOSE = re.compile(r"^\s*guard \d+ failures:\s*$", re.MULTILINE)

Identity = tuple  # (function, filename, first line): the code object, as Dynamo names it


def parse_header(text: str | None) -> Identity | None:
    """(function, file, line) named by a recompile message or error, if it names one."""
    if not text:
        return None
    match = _HEADER.search(text) or _STANCE_HEADER.search(text)
    if match is None:
        return None
    return match.group("name"), match.group("file"), int(match.group("line"))


def reason_lines(message: str | None) -> list[str]:
    """The guard failures of a recompile message, one "N/M: guard" line per rejecting entry.

    Dynamo prefixes each failure with "- " (and its "User stack trace" lines too: dropped here,
    read by ``reasons.text.user_stacks``). With
    ``recompiles_verbose`` it lists every failing guard of each entry; the first per entry is the
    one the plain log shows, so that is what is kept: the two settings give the same reason.
    """
    out, entries = [], set()
    for line in all_failures(message):
        entry = line.split(":", 1)[0]
        if entry not in entries:
            entries.add(entry)
            out.append(line)
    return out


def all_failures(message: str | None) -> list[str]:
    """Every failing guard of a recompile message, one "N/M: guard" line each, in Dynamo's order.

    ``recompiles_verbose`` (torch 2.13) writes an entry's failing parts on one line joined by
    "; " under a "guard N failures:" heading: split back into one line per guard, so that the
    first line per entry is what the plain log shows."""
    if not message:
        return []
    items = [ln.strip()[2:] for ln in message.splitlines() if ln.strip().startswith("- ")]
    lines = failure_lines("\n".join(items)) or failure_lines(message)
    if _VERBOSE.search(message) is None:
        return lines
    out = []
    for line in lines:
        entry, _, body = line.partition(": ")
        parts = split_parts(body)  # none where Dynamo names no guard ("0/0:", 2.9's backend change)
        out.extend([f"{entry}: {part}" for part in parts] if parts else [line])
    return out


@dataclass
class EventBuilder:
    """Builds the events of one process (one stream of records), remembering its frames."""

    #: frame id -> (function, file, line), from the first record that named it
    identities: dict[str, Identity] = field(default_factory=dict)
    #: frames with at least one successful compile: a later compile of them is a recompile
    compiled: set[str] = field(default_factory=set)
    #: recompile messages logged and not yet matched to their compile, by frame id
    _pending: dict[str, tuple[Identity | None, str]] = field(default_factory=dict)
    #: the same for messages that name no entry (no frame id): by identity
    _pending_by_identity: dict[Identity, str] = field(default_factory=dict)
    #: every failing guard of a logged message, keyed by its reason text (see ``failures``)
    _failures: dict[str, tuple[str, ...]] = field(default_factory=dict)
    #: the user stacks under a logged message's guards, keyed by its reason text
    _stacks: dict[str, dict] = field(default_factory=dict)

    #: torch._dynamo.reset() calls seen so far in this stream (see ``reset``)
    resets: int = 0

    # --- inputs -----------------------------------------------------------------------------------

    def reset(self) -> None:
        """Dynamo was reset: frame ids start again at 0 and name other code from here on."""
        self.resets += 1
        self.identities.clear()
        self.compiled.clear()
        self._pending.clear()
        self._pending_by_identity.clear()
        self._failures.clear()
        self._stacks.clear()

    def reason_logged(self, message: str) -> None:
        """A recompiles (or recompiles_verbose) log message: held until its compile's record."""
        lines = reason_lines(message)
        identity = parse_header(message)
        text = "\n".join(lines) if lines else message.strip()
        every = tuple(all_failures(message))
        if every:
            self._failures[text] = every
        stacks = user_stacks(message)
        if stacks:
            self._stacks[text] = stacks
        frames = {f for line in lines if (f := frame_of(line.split(":", 1)[0])) is not None}
        if len(frames) == 1:
            fid = frames.pop()
            # A newer message for the same frame replaces an older one that never got a record.
            self._pending[fid] = (identity, text)
            if identity is not None:
                self.identities.setdefault(fid, identity)
        elif identity is not None:
            self._pending_by_identity[identity] = text

    def build(
        self,
        m: Mapping[str, Any],
        *,
        reason: str | None = None,
        graphs: int | None = None,
        graph_breaks: int | None = None,
        compiling: Identity | None = None,
        closure_functions: tuple[ClosureFunction, ...] | None = None,
        dynamo_graph_breaks: int | None = None,
        guard_collectives: bool | None = None,
    ) -> CompileEvent:
        """The event of one compilation-metrics record (a mapping of its fields).

        ``reason`` is the recompile reason when the source keys it by compile id already (the
        trace's ``recompile_reasons`` artifact); otherwise the message logged for the frame is
        used, then the error text, then the record's own ``recompile_reason``. ``compiling``: the
        code object Dynamo was compiling when it wrote the record, where the source saw it: a
        record without a name (a compile that failed before tracing) is that code's.
        ``closure_functions``: the functions that frame's closure held, where seen.
        ``guard_collectives``: whether they were on when the record was written (None: not
        known); it decides how a recompile that names no failing guard reads
        (``with_guard_collectives``).
        """
        cid = None if m.get("compile_id") is None else str(m.get("compile_id"))
        fid = frame_of(cid)
        fail_type, fail_reason = m.get("fail_type"), m.get("fail_reason")
        failed = fail_type is not None
        identity: Identity = (m.get("co_name"), m.get("co_filename"), m.get("co_firstlineno"))
        pending_identity, pending = self._pending.pop(fid, (None, None)) if fid else (None, None)
        from_error = parse_header(fail_reason)
        if identity[0] is None:
            identity = (
                compiling
                or (self.identities.get(fid) if fid else None)
                or pending_identity
                or from_error
                or identity
            )
        if pending is None:
            pending = self._pending_by_identity.pop(identity, None)
        if fid and identity[0] is not None:
            self.identities[fid] = identity

        limit = is_recompile_limit(fail_type, fail_reason)
        cache_size = m.get("cache_size")
        if isinstance(cache_size, int):
            recompile = cache_size > 0
        else:  # a compile that failed early records no cache size
            recompile = (
                (fid in self.compiled if fid else False)
                or pending is not None
                or from_error is not None
                or limit
            )
        recompile = recompile or limit
        if not failed and fid:
            self.compiled.add(fid)

        text = None
        if recompile:
            text = reason or pending
            if not text and from_error is not None:  # error_on_recompile: only in the error
                text = "\n".join(reason_lines(fail_reason)) or None
            raw = m.get("recompile_reason")
            if not text and raw:
                text = "\n".join(failure_lines(raw)) or raw
        failures: tuple[str, ...] = ()
        if recompile and text:
            failures = (
                self._failures.pop(text, ())
                or (tuple(all_failures(fail_reason)) if from_error is not None else ())
                or tuple(failure_lines(text))
            )
        # the kind is the primary cause's (causes.py), not whichever guard Dynamo named first
        detail = (
            classify(primary_line(failures) or text, fail_type=fail_type, fail_reason=fail_reason)
            if recompile
            else None
        )
        if recompile:
            detail = with_guard_collectives(detail, guard_collectives)
        if text is None and detail is not None:  # the recompile limit: no guard failed
            text = detail.text
        stacks = (
            (self._stacks.pop(text, None) if text else None)
            or user_stacks(m.get("recompile_reason"))
            or (user_stacks(fail_reason) if from_error is not None else {})
        )
        if failed and detail is None:
            # torch's own assertion, e.g. on the first compile: a kind of its own
            detail = internal_error(fail_type, fail_reason)
        time_us = m.get("dynamo_cumulative_compile_time_us")
        return CompileEvent(
            compile_id=cid,
            function=identity[0],
            call_index=None,
            reason=text,
            guard_count=m.get("guard_count"),
            shape_env_guard_count=m.get("shape_env_guard_count"),
            graph_op_count=m.get("graph_op_count"),
            compile_time_ms=None if time_us is None else time_us / 1000.0,
            failed=failed,
            filename=identity[1],
            line=identity[2],
            recompile=recompile,
            fail_type=fail_type,
            fail_reason=_first_line(fail_reason),
            reason_kind=detail.kind if detail else None,
            reason_detail=detail,
            guard_latency_us=m.get("guard_latency_us"),
            graphs=graphs,
            graph_breaks=graph_breaks,
            failures=failures,
            resets=self.resets,
            reason_origins=stack_origins(text, stacks) if recompile else None,
            closure_functions=closure_functions,
            dynamo_graph_breaks=dynamo_graph_breaks,
        )

    def rejected(
        self,
        identity: Identity,
        entry_ids: list[str],
        failures: list[str],
        fail_type: str,
        fail_reason: str,
    ) -> CompileEvent:
        """A recompile refused before Dynamo wrote any record (``fail_on_recompile`` stance).

        It has no compile id of its own (tlparse shows none either); its frame is the one of
        the cache entries that rejected the call.
        """
        fids = {frame_of(e) for e in entry_ids} - {None}
        fid = next(iter(fids)) if len(fids) == 1 else None
        if fid is not None:
            identity = self.identities.setdefault(fid, identity)
        text = "\n".join(failures) or None
        detail = classify(primary_line(failures) or text)
        return CompileEvent(
            compile_id=None,
            function=identity[0],
            call_index=None,
            reason=text,
            guard_count=None,
            shape_env_guard_count=None,
            graph_op_count=None,
            compile_time_ms=None,
            failed=True,
            filename=identity[1],
            line=identity[2],
            recompile=True,
            fail_type=fail_type,
            fail_reason=fail_reason,
            reason_kind=detail.kind if detail else None,
            reason_detail=detail,
            graphs=0,
            graph_breaks=0,
            failures=tuple(failures),
            resets=self.resets,
            dynamo_graph_breaks=0,
        )


def stack_origins(reason: str | None, stacks: Mapping) -> tuple[Origin | None, ...] | None:
    """Per failing guard line of ``reason``, the origin its user stack gives (provenance's
    ``from_stack``) or None; None where no line has a stack (``stacks``: from
    ``reasons.text.user_stacks``). The attribution rule's origins are merged with these later."""
    if not stacks or not reason:
        return None
    out = []
    for line in failure_lines(reason):
        entry, body = entry_line(line)
        guard = strip_comment(body)
        frames = stacks.get((entry, guard)) or next(
            (f for (e, g), f in stacks.items() if e == entry and guard and g.startswith(guard)),
            None,
        )
        out.append(from_stack(frames) if frames else None)
    return tuple(out) if any(out) else None


def _first_line(text: Any) -> str | None:
    if not text:
        return None
    return next((ln.strip() for ln in str(text).splitlines() if ln.strip()), None)
