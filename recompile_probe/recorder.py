"""The Recorder: every Dynamo compile in the process while it is active, as ``CompileEvent``s.

It listens, it does not drive: compilation metrics (one record per frame compile, failed ones
included) and the ``recompiles`` logging artifact (the guard failures that caused a recompile).
Nothing runs per call of compiled code, only per compile. On exit every piece of logging and
config state is as it was. The probe, and later ``watch`` and the pytest plugin, all use it.
"""

from __future__ import annotations

import contextlib
import re
import threading
from typing import Any, Callable

from . import compat, reasons
from .model import CompileEvent

_HEADER = re.compile(r"Recompiling function (?P<name>\S+) in (?P<file>.+):(?P<line>\d+)")


def parse_recompile_message(message: str) -> tuple[str | None, str]:
    """(function name, the guard failures joined by newlines) from one recompiles log message.

    Each failure is "- N/M: guard"; Dynamo also prefixes its "User stack trace" lines with "- ",
    and those are dropped.
    """
    match = _HEADER.search(message)
    items = [ln.strip()[2:] for ln in message.splitlines() if ln.strip().startswith("- ")]
    failures = reasons.failure_lines("\n".join(items))
    reason = "\n".join(failures) if failures else message.strip()
    return (match.group("name") if match else None), reason


class Recorder:
    """``with Recorder() as rec: ...`` then ``rec.events``."""

    def __init__(self, on_event: Callable[[CompileEvent], None] | None = None) -> None:
        self.events: list[CompileEvent] = []
        self._on_event = on_event
        self._graphs_seen: int | None = None
        self._breaks_seen: int | None = None
        self._pending_reasons: list[tuple[str | None, str]] = []
        self._seen_frames: set[tuple] = set()
        self._lock = threading.Lock()
        self._stack: contextlib.ExitStack | None = None
        self._streaming = False
        self._deque_seen = 0

    def __enter__(self) -> "Recorder":
        stack = contextlib.ExitStack()
        try:
            self._streaming = stack.enter_context(compat.metrics_stream(self._on_metrics))
            stack.enter_context(compat.recompiles_stream(self._on_recompile_message))
        except BaseException:
            stack.close()
            raise
        if not self._streaming:
            self._deque_seen = len(compat.get_metrics())
        self._graphs_seen, self._breaks_seen = compat.unique_graphs(), compat.graph_break_count()
        self._stack = stack
        return self

    def __exit__(self, *exc: Any) -> None:
        self.poll()
        assert self._stack is not None
        self._stack.close()
        self._stack = None

    def poll(self) -> None:
        """Pick up metrics records from the deque where this torch cannot stream them."""
        if self._streaming:
            return
        records = compat.get_metrics()
        for record in records[self._deque_seen:]:
            self._on_metrics(record)
        self._deque_seen = len(records)

    def __len__(self) -> int:
        return len(self.events)

    def since(self, start: int) -> list[CompileEvent]:
        return self.events[start:]

    # --- hooks ------------------------------------------------------------------------------------

    def _on_recompile_message(self, message: str) -> None:
        with self._lock:
            self._pending_reasons.append(parse_recompile_message(message))

    def _take_reason(self, function: str | None) -> str | None:
        for i, (name, reason) in enumerate(self._pending_reasons):
            if name is None or name == function:
                del self._pending_reasons[i]
                return reason
        return None

    def _on_metrics(self, record: Any) -> None:
        if not compat.is_frame_compile(record):
            return
        m = lambda name: compat.metric(record, name)  # noqa: E731
        with self._lock:
            function, filename, line = m("co_name"), m("co_filename"), m("co_firstlineno")
            frame = (function, filename, line)
            cache_size = m("cache_size")
            recompile = cache_size > 0 if isinstance(cache_size, int) else frame in self._seen_frames
            failed = m("fail_type") is not None
            # A frame past its recompile limit is a recompile attempt, whatever cache_size says.
            recompile = recompile or reasons.is_recompile_limit(m("fail_type"), m("fail_reason"))
            if not failed:
                self._seen_frames.add(frame)
            reason = self._take_reason(function) if recompile else None
            if recompile and reason is None and m("recompile_reason"):
                reason = "\n".join(reasons.failure_lines(m("recompile_reason"))) or \
                    m("recompile_reason")
            detail = reasons.classify(reason, fail_type=m("fail_type"),
                                      fail_reason=m("fail_reason")) if recompile else None
            if reason is None and detail is not None:  # e.g. the recompile limit: no guard failed
                reason = detail.text
            time_us = m("dynamo_cumulative_compile_time_us")
            # Counters move during a compile and the metrics record closes it: the delta since
            # the previous record belongs to this compile (exact when streaming).
            graphs_now, breaks_now = compat.unique_graphs(), compat.graph_break_count()
            graphs = delta(graphs_now, self._graphs_seen) if self._streaming else None
            breaks = delta(breaks_now, self._breaks_seen) if self._streaming else None
            self._graphs_seen, self._breaks_seen = graphs_now, breaks_now
            event = CompileEvent(
                compile_id=None if m("compile_id") is None else str(m("compile_id")),
                function=function,
                call_index=None,
                reason=reason,
                guard_count=m("guard_count"),
                shape_env_guard_count=m("shape_env_guard_count"),
                graph_op_count=m("graph_op_count"),
                compile_time_ms=None if time_us is None else time_us / 1000.0,
                failed=failed,
                filename=filename,
                line=line,
                recompile=recompile,
                fail_type=m("fail_type"),
                fail_reason=_first_line(m("fail_reason")),
                reason_kind=detail.kind if detail else None,
                reason_detail=detail.to_dict() if detail else None,
                guard_latency_us=m("guard_latency_us"),
                graphs=graphs,
                graph_breaks=breaks,
            )
            self.events.append(event)
        if self._on_event is not None:
            self._on_event(event)


def delta(now: int | None, before: int | None) -> int | None:
    return None if now is None or before is None else now - before


def _first_line(text: str | None) -> str | None:
    if not text:
        return None
    return next((ln.strip() for ln in str(text).splitlines() if ln.strip()), None)
