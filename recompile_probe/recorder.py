"""The Recorder: every Dynamo compile in the process while it is active, as ``CompileEvent``s.

It listens, it does not drive: compilation metrics (one record per frame compile, failed ones
included), the ``recompiles`` logging artifact (the guard failures that caused a recompile) and
the recompiles that the ``fail_on_recompile`` stance refuses before any record exists. Events are
built in one place (events.py), attributed by compile id. Nothing runs per call of compiled code,
only per compile. On exit every piece of logging and config state is as it was. The probe,
``watch``, ``record()`` and the pytest plugin all use it.

Where the metrics log cannot be streamed, or streams records in a shape this code does not know,
the metrics deque is read instead (``poll``), so a record is never silently missed; if the deque
dropped records before they were read, ``complete`` turns False and counts read n/a.
"""

from __future__ import annotations

import contextlib
import threading
from typing import Any, Callable

from . import compat
from .events import EventBuilder
from .model import CompileEvent


class Recorder:
    """``with Recorder() as rec: ...`` then ``rec.events``."""

    def __init__(self, on_event: Callable[[CompileEvent], None] | None = None) -> None:
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
        #: keys of the records already turned into events, or present before we started
        self._known: set[tuple] = set()
        self._deque_mark: tuple[int, Any] | None = None

    def __enter__(self) -> "Recorder":
        stack = contextlib.ExitStack()
        try:
            self._streaming = stack.enter_context(compat.metrics_stream(self._on_metrics))
            stack.enter_context(compat.recompiles_stream(self._on_recompile_message))
            self.sees_stance_rejections = stack.enter_context(
                compat.stance_rejections(self._on_rejected))
            if not self._streaming:
                stack.enter_context(compat.keep_all_metrics())
        except BaseException:
            stack.close()
            raise
        self._known = {compat.metrics_key(r) for r in compat.get_metrics()}
        self._graphs_seen, self._breaks_seen = compat.unique_graphs(), compat.graph_break_count()
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
        records = compat.get_metrics()
        mark = (len(records), id(records[-1]) if records else None)
        if mark == self._deque_mark:
            return
        self._deque_mark = mark
        with self._lock:
            unseen = [r for r in records if compat.metrics_key(r) not in self._known]
            capacity = compat.metrics_capacity()
            if unseen and capacity is not None and len(records) >= capacity and \
                    compat.metrics_key(records[0]) not in self._known and self.events:
                self.complete = False  # the oldest record is new to us: older ones were dropped
            for record in unseen:
                if compat.is_frame_compile(record):
                    self._add(record, counted=False)
                else:
                    self._known.add(compat.metrics_key(record))

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
                identity, entry_ids, failures, "RuntimeError",
                "Detected recompile when torch.compile stance is 'fail_on_recompile'")
            self.events.append(event)
        if self._on_event is not None:
            self._on_event(event)

    def _on_metrics(self, record: Any) -> None:
        if compat.is_frame_compile(record):
            self._add(record, counted=True)

    def _add(self, record: Any, counted: bool) -> None:
        """``counted``: the record arrived as Dynamo wrote it, so the counters' movement since the
        previous record is this compile's (graphs, graph breaks); a record read late has none."""
        with self._lock:
            key = compat.metrics_key(record)
            if key in self._known:
                return
            self._known.add(key)
            graphs_now, breaks_now = compat.unique_graphs(), compat.graph_break_count()
            graphs = delta(graphs_now, self._graphs_seen) if counted else None
            breaks = delta(breaks_now, self._breaks_seen) if counted else None
            self._graphs_seen, self._breaks_seen = graphs_now, breaks_now
            event = self._builder.build(compat.metrics_fields(record), graphs=graphs,
                                        graph_breaks=breaks)
            self.events.append(event)
        if self._on_event is not None:
            self._on_event(event)


def delta(now: int | None, before: int | None) -> int | None:
    return None if now is None or before is None else now - before
