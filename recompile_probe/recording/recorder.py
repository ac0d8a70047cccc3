"""The Recorder: every Dynamo compile in the process while it is active, as ``CompileEvent``s.

It listens, it does not drive: compilation metrics (one record per frame compile, failed ones
included), the ``recompiles`` logging artifact (the guard failures that caused a recompile) and
the recompiles that the ``fail_on_recompile`` stance refuses before any record exists. Events are
built in one place (events.py), attributed by compile id. Nothing runs per call of compiled code,
only per compile. On exit every piece of logging and config state is as it was. The probe,
``watch``, ``record()`` and the pytest plugin all use it.

Each metrics record is seen as Dynamo appends it to its deque, whatever the program set
``log_compilation_metrics`` to and however many records the deque keeps. Where this torch records
otherwise, the metrics log is streamed; where that fails too, the deque is read (``poll``), so a
record is never silently missed; if the deque dropped records before they were read,
``complete`` turns False and counts read n/a.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import sys
import threading
from collections.abc import Callable
from typing import Any

from ..analysis import shared
from ..provenance.attribution import LiveEvidence, reason_origins, refined
from ..provenance.capture import Capture, Collector, capture
from ..provenance.first_use import first_uses
from ..provenance.graph_breaks import breaks_since, graph_break_mark, graph_breaks
from ..provenance.origin import with_stacks
from ..provenance.shape_env import CompileOrigins
from ..reasons.text import failure_lines
from ..records import encode
from ..records.compile_ids import compile_key
from ..records.run import ClosureFunction, CompileEvent
from ..torch_compat import cache, logs, metrics, stance
from ..torch_compat.collectives import guard_collectives_on
from ..torch_compat.compile_keywords import compile_accepts
from ..torch_compat.dynamo import (
    backend_calls,
    compiling_closure_functions,
    compiling_code,
    current_compile_id,
)
from ..torch_compat.files import is_torch_file
from .events import EventBuilder

#: the package's own folder: frames of the tool are not the user's call site
_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class Recorder:
    """``with Recorder() as rec: ...`` then ``rec.events``."""

    def __init__(
        self, on_event: Callable[[CompileEvent], None] | None = None, *, provenance: bool = True
    ) -> None:
        """``provenance=False``: no user lines, no wrapper names and the plain recompiles log
        (first failing guard per entry); for measuring what they cost (benchmarks/)."""
        self._provenance = provenance
        self.events: list[CompileEvent] = []
        #: False when records were lost (the deque overflowed between two reads): counts are n/a
        self.complete = True
        #: whether recompiles refused by set_stance("fail_on_recompile") can be seen in this torch
        #: (2.13 passes them through a function we observe; older releases raise without trace)
        self.sees_stance_rejections = False
        self._on_event = on_event
        self._builder = EventBuilder()
        self._graphs_seen: int | None = None
        self._breaks_seen: int | None = None
        self._lock = threading.RLock()
        self._stack: contextlib.ExitStack | None = None
        self._streaming = False
        self._hooked: Callable[[], bool] = lambda: False
        #: keys of the records already turned into events, or present before we started
        self._known: set[tuple] = set()
        self._deque_mark: tuple[int, Any] | None = None
        #: per compile id, what the tables need beside the event: the user's name for what was
        #: compiled and their call site (``compiled_as``, ``call_site``), and the graph breaks
        #: this compile hit with their user lines (``graph_breaks``), the sizes and ints the
        #: user's code forced to a constant (``specializations``); see ``extra``. Kept in their
        #: JSON form (records.encode), as a watched child sends them and a trace gives them;
        #: analysis.functions reads them into records
        self.extras: dict[str, dict[str, Any]] = {}
        #: False where this torch has no hook to capture a compile's ShapeEnv (origins n/a)
        self.captures_origins = False
        self._collector = Collector()
        self._origins: dict[str, CompileOrigins | None] = {}
        self._first_uses: dict[str, dict | None] = {}
        self._break_mark: int | None = None
        #: torch._dynamo.reset() calls seen: a compile id recorded again means Dynamo was reset
        #: (it restarts frame ids), and every per-id table starts afresh
        self.resets = 0
        self._recorded: set[str] = set()
        #: graphs handed to a backend per compile id, counted as Dynamo hands them over (no
        #: counter of Dynamo's, which a program may clear); False where this torch has no hook
        self._counts_graphs = False
        self._graph_calls: dict[str, int] = {}
        #: whether this torch.compile takes isolate_recompiles (read once, at the first closure)
        self._isolates: bool | None = None

    def __enter__(self) -> Recorder:
        stack = contextlib.ExitStack()
        try:
            # every record as Dynamo appends it, logging on or off; else its log, else the deque
            self._hooked = stack.enter_context(metrics.metrics_hook(self._on_metrics))
            self._streaming = self._hooked() or stack.enter_context(
                metrics.metrics_stream(self._on_metrics)
            )
            stack.enter_context(
                logs.recompiles_stream(self._on_recompile_message)
                if self._provenance
                else logs.recompiles_stream(self._on_recompile_message, verbose=False)
            )
            self.sees_stance_rejections = stack.enter_context(
                stance.stance_rejections(self._on_rejected)
            )
            if not self._streaming:
                stack.enter_context(metrics.keep_all_metrics())
            try:
                self._counts_graphs = stack.enter_context(backend_calls(self._on_backend_call))
            except Exception:  # noqa: BLE001 - a private hook: without it, Dynamo's counter
                self._counts_graphs = False
            self.captures_origins = self._provenance and self._counts_graphs
        except BaseException:
            stack.close()
            raise
        self._known = {metrics.metrics_key(r) for r in metrics.get_metrics()}
        self._graphs_seen, self._breaks_seen = metrics.unique_graphs(), metrics.graph_break_count()
        self._break_mark = graph_break_mark()
        self._stack = stack
        self.poll()  # settles the deque mark: only records from here on are ours
        return self

    def __exit__(self, *exc: Any) -> None:
        self.poll()
        assert self._stack is not None
        self._stack.close()
        self._stack = None

    def poll(self) -> None:
        """Read the metrics deque for records the log stream did not deliver.

        Cheap when nothing changed (the deque's length and last record are compared first), so
        the probe can call it after every call.
        """
        if self._stack is None:  # not listening (yet, or any more): records are not ours
            return
        self._hooked()  # back on a deque the program swapped (set_compilation_metrics_limit)
        records = metrics.get_metrics()
        mark = (len(records), id(records[-1]) if records else None)
        if mark == self._deque_mark:
            return
        self._deque_mark = mark
        with self._lock:
            unseen = [r for r in records if metrics.metrics_key(r) not in self._known]
            capacity = metrics.metrics_capacity()
            if (
                unseen
                and capacity is not None
                and len(records) >= capacity
                and metrics.metrics_key(records[0]) not in self._known
                and self.events
            ):
                self.complete = False  # the oldest record is new to us: older ones were dropped
            for record in unseen:
                if metrics.is_frame_compile(record):
                    self._add(record, counted=False)
                else:
                    self._known.add(metrics.metrics_key(record))

    def __len__(self) -> int:
        return len(self.events)

    def since(self, start: int) -> list[CompileEvent]:
        return self.events[start:]

    # --- hooks ------------------------------------------------------------------------------------

    def _on_recompile_message(self, message: str) -> None:
        with self._lock:
            self._builder.reason_logged(message)

    def _on_rejected(self, code: Any, entry_ids: list[str], failures: list[str]) -> None:
        identity = (code.co_name, code.co_filename, code.co_firstlineno)
        with self._lock:
            event = self._builder.rejected(
                identity,
                entry_ids,
                failures,
                "RuntimeError",
                "Detected recompile when torch.compile stance is 'fail_on_recompile'",
            )
            self.events.append(event)
        if self._on_event is not None:
            self._on_event(event)

    def _on_metrics(self, record: Any) -> None:
        if metrics.is_frame_compile(record):
            code = compiling_code()  # still inside the compile: whose it is, first hand
            identity = (
                None if code is None else (code.co_name, code.co_filename, code.co_firstlineno)
            )
            held = compiling_closure_functions()
            closure = None if held is None else tuple(ClosureFunction(**f) for f in held)
            self._add(record, counted=True, compiling=identity, closure=closure)

    def _on_backend_call(self) -> None:
        """Dynamo hands a graph to a backend: count it for its compile, capture its ShapeEnv."""
        cap = capture() if self._provenance else None
        cid = cap.compile_id if cap is not None else current_compile_id()
        with self._lock:
            self._compile_seen(cid)
            if cid is not None:
                self._graph_calls[cid] = self._graph_calls.get(cid, 0) + 1
        if self._provenance:
            self._on_capture(cap)

    def _compile_seen(self, cid: str | None) -> None:
        """A compile id from a compile in progress: one recorded before means Dynamo was reset
        since (a reset restarts ids at 0/0); start every per-id table afresh."""
        if cid is None or cid not in self._recorded:
            return
        self.resets += 1
        self._recorded.clear()
        self._graph_calls.clear()
        self._builder.reset()
        self._origins.clear()
        self._first_uses.clear()
        self._collector = Collector()
        self._break_mark = 0  # the reset emptied Dynamo's graph-break list too

    def _add(
        self,
        record: Any,
        counted: bool,
        compiling: tuple | None = None,
        closure: tuple[ClosureFunction, ...] | None = None,
    ) -> None:
        """``counted``: the record arrived as Dynamo wrote it, inside its compile, so what was
        counted for that compile (graphs, graph breaks) is its own; a record read late has none.
        ``closure``: the functions the compiled frame's closure held (a shared code object)."""
        with self._lock:
            key = metrics.metrics_key(record)
            if key in self._known:
                return
            self._known.add(key)
            raw_id = metrics.metric(record, "compile_id")
            cid = None if raw_id is None else str(raw_id)
            if counted:
                self._compile_seen(cid)
            if cid is not None:
                self._recorded.add(cid)
            graphs_now, breaks_now = metrics.unique_graphs(), metrics.graph_break_count()
            graphs = delta(graphs_now, self._graphs_seen) if counted else None
            breaks = delta(breaks_now, self._breaks_seen) if counted else None
            # a program clearing counters makes the movement meaningless, not negative
            counter_breaks = breaks if breaks is not None and breaks >= 0 else None
            self._graphs_seen, self._breaks_seen = graphs_now, breaks_now
            if counted and self._counts_graphs:
                graphs = self._graph_calls.pop(cid, 0) if cid is not None else None
            if counted:
                since = breaks_since(self._break_mark)
                breaks = since if since is not None else breaks
            event = self._builder.build(
                metrics.metrics_fields(record),
                graphs=graphs,
                graph_breaks=breaks,
                compiling=compiling,
                closure_functions=closure,
                dynamo_graph_breaks=counter_breaks,
                guard_collectives=guard_collectives_on(),
            )
            event = self._with_origins(event, counted)
            if event.closure_functions:
                if self._isolates is None:
                    self._isolates = compile_accepts("isolate_recompiles")
                event = shared.refine(event, self.events, self._isolates)
            if counted:
                self._break_mark = graph_break_mark()
            self.events.append(event)
        if self._on_event is not None:
            self._on_event(event)

    # --- origins: read once per compile, never per call ----------------------------------------

    def _on_capture(self, cap: Capture | None) -> None:
        """Inside the backend call of a compile: keep its ShapeEnv until its record arrives, and
        note what the user compiled and from where (the Python stack is the caller's here)."""
        self._collector.add(cap)
        cid = None if cap is None else cap.compile_id
        key = compile_key(cid, self.resets)
        if cid is not None and key not in self.extras:
            self.extras[key] = compiled_as(sys._getframe(1))

    def extra(self, compile_id: str | None, resets: int = 0) -> dict[str, Any]:
        """What the tables need beside the event of that compile (see ``extras``)."""
        return self.extras.get(compile_key(compile_id, resets), {}) if compile_id else {}

    def _with_origins(self, event: CompileEvent, counted: bool) -> CompileEvent:
        cid = event.compile_id
        key = compile_key(cid, event.resets)
        if cid is not None and self.captures_origins:
            # extracted now: the ShapeEnv (and the graph it references) goes with the compile
            compiled = self._origins[cid] = self._collector.get(cid)
            if compiled is not None and compiled.specializations:
                self.extras.setdefault(key, {})["specializations"] = [
                    encode.data(sp) for sp in compiled.specializations
                ]
            if counted:
                found = graph_breaks(self._break_mark)
                if found:
                    self.extras.setdefault(key, {})["graph_breaks"] = encode.data(found)
        if not event.recompile or not self.captures_origins:
            return event
        lines = failure_lines(event.reason)
        if not lines:
            return event
        evidence = LiveEvidence(
            lambda c: self._origins.get(c) if c else None,
            lambda c: self._entry_first_uses(event, c),
        )
        # Dynamo's user stack (read with the event) stays beside what the rule attributes
        origins = with_stacks(reason_origins(lines, evidence), event.reason_origins)
        if event.failures and cid is not None:  # every failing guard, for the causes' lines
            every = reason_origins(event.failures, evidence)
            if any(every):
                self.extras.setdefault(key, {})["failure_origins"] = encode.data(list(every))
        kind, detail = refined(event.reason, event.reason_kind, event.reason_detail, origins)
        return dataclasses.replace(
            event, reason_origins=origins, reason_kind=kind, reason_detail=detail
        )

    def _entry_first_uses(self, event: CompileEvent, cid: str | None) -> dict | None:
        """Where the entry made by compile ``cid`` first used each tensor, from the guard tree of
        the event's code object (the entry still exists: it just rejected the call)."""
        if cid is None:
            return None
        if cid not in self._first_uses:
            uses = None
            for code in cache.dynamo_codes() or ():
                if (code.co_name, code.co_filename, code.co_firstlineno) != (
                    event.function,
                    event.filename,
                    event.line,
                ):
                    continue
                entry = next(
                    (
                        e
                        for e in cache.cache_entries(code) or ()
                        if cache.entry_compile_id(e) == cid
                    ),
                    None,
                )
                if entry is not None:
                    uses = first_uses(entry, code)
                    break
            self._first_uses[cid] = uses
        return self._first_uses[cid]


def _is_internal(filename: str) -> bool:
    return (
        is_torch_file(filename)
        or filename.startswith(_PACKAGE + os.sep)
        or filename.startswith("<frozen")
    )


def compiled_as(frame: Any) -> dict[str, Any]:
    """What the user handed to torch.compile and where they called it, from the Python stack
    of a compile (the compiled frame itself is not on it yet; its callers are).

    The innermost ``nn.Module._call_impl`` names the module (unless it is torch's own
    OptimizedModule), else torch.compile's wrapper holds the function (``fn``); the first frame
    outside torch and this package is the call site. Nothing found: an empty dict (n/a)."""
    name = None
    while frame is not None:
        code = frame.f_code
        if not _is_internal(code.co_filename):
            out: dict[str, Any] = {"call_site": f"{code.co_filename}:{frame.f_lineno}"}
            if name is not None:
                out["compiled_as"] = name
            return out
        if name is None:
            try:
                if code.co_name == "_call_impl" and code.co_filename.endswith(
                    os.path.join("nn", "modules", "module.py")
                ):
                    module = frame.f_locals.get("self")
                    cls = type(module)
                    if cls.__name__ != "OptimizedModule":
                        name = f"{cls.__name__}.forward"
                elif code.co_name == "compile_wrapper":
                    fn = frame.f_locals.get("fn")
                    qual = getattr(fn, "__qualname__", None)
                    if isinstance(qual, str) and not callable(getattr(fn, "forward", None)):
                        name = qual
            except Exception:  # noqa: BLE001 - a label, never worth breaking a compile
                pass
        frame = frame.f_back
    return {}


def delta(now: int | None, before: int | None) -> int | None:
    return None if now is None or before is None else now - before
