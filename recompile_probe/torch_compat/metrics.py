"""Dynamo's compilation metrics: one record per frame compile, read as Dynamo logs it."""

from __future__ import annotations

import collections
import contextlib
import logging
from collections.abc import Callable, Iterator
from typing import Any

import torch

METRICS_LOGGER = "torch._utils_internal"


def _dynamo_utils() -> Any:
    return getattr(torch._dynamo, "utils", None)


# --- compilation metrics --------------------------------------------------------------------------


def metrics_available() -> bool:
    utils = _dynamo_utils()
    return utils is not None and hasattr(utils, "get_compilation_metrics")


def get_metrics() -> list[Any]:
    utils = _dynamo_utils()
    return list(utils.get_compilation_metrics()) if metrics_available() else []


def clear_metrics() -> None:
    utils = _dynamo_utils()
    if utils is not None and hasattr(utils, "clear_compilation_metrics"):
        utils.clear_compilation_metrics()


def metric(record: Any, name: str) -> Any:
    return getattr(record, name, None)


#: The record fields events are built from (events.EventBuilder.build reads these keys).
EVENT_FIELDS = (
    "compile_id",
    "co_name",
    "co_filename",
    "co_firstlineno",
    "cache_size",
    "fail_type",
    "fail_reason",
    "recompile_reason",
    "guard_count",
    "shape_env_guard_count",
    "graph_op_count",
    "dynamo_cumulative_compile_time_us",
    "guard_latency_us",
)


def metrics_fields(record: Any) -> dict[str, Any]:
    """A metrics record as the mapping the event builder reads (missing fields: None)."""
    return {name: metric(record, name) for name in EVENT_FIELDS}


def metrics_key(record: Any) -> tuple:
    """Identifies one record whichever way it reached us (log handler or deque)."""
    cid = metric(record, "compile_id")
    return (
        None if cid is None else str(cid),
        metric(record, "start_time_us"),
        metric(record, "co_name"),
        metric(record, "fail_type"),
    )


@contextlib.contextmanager
def keep_all_metrics(limit: int = 1 << 20) -> Iterator[None]:
    """Let the metrics deque (maxlen 64 by default) hold every record while the block runs.

    Only for readers that have no log stream and must poll the deque: a full deque would drop
    records between two polls. The original limit is put back (keeping the newest records).
    """
    utils = _dynamo_utils()
    setter: Any = getattr(utils, "set_compilation_metrics_limit", None)
    current: Any = getattr(utils, "_compilation_metrics", None)
    old: Any = getattr(current, "maxlen", None)
    if setter is None or old is None or old >= limit:
        yield
        return
    setter(limit)
    try:
        yield
    finally:
        setter(old)


def metrics_capacity() -> int | None:
    """How many records the deque keeps (None: unbounded or unknown)."""
    return getattr(getattr(_dynamo_utils(), "_compilation_metrics", None), "maxlen", None)


def is_frame_compile(record: Any) -> bool:
    """A Dynamo frame compilation, not a backward or runtime (autotune) record."""
    return metric(record, "is_runtime") is not True and metric(record, "is_forward") is not False


class _Observed(collections.deque):
    """Dynamo's metrics deque, telling every listener about each record appended to it."""

    def __init__(self, items: Any = (), maxlen: int | None = None) -> None:
        super().__init__(items, maxlen=maxlen)
        self.listeners: list[Callable[[Any], None]] = []

    def append(self, record: Any) -> None:
        super().append(record)
        for listener in list(self.listeners):
            try:
                listener(record)
            except Exception:  # noqa: BLE001 - observing must never break the user's compile
                pass


def _records_into_deque() -> bool:
    """Whether this torch's record_compilation_metrics appends every record, whatever
    ``log_compilation_metrics`` says, to the module's ``_compilation_metrics`` deque."""
    utils = _dynamo_utils()
    record: Any = getattr(utils, "record_compilation_metrics", None)
    names = getattr(getattr(record, "__code__", None), "co_names", ())
    return isinstance(getattr(utils, "_compilation_metrics", None), collections.deque) and (
        "_compilation_metrics" in names
    )


@contextlib.contextmanager
def metrics_hook(on_record: Callable[[Any], None]) -> Iterator[Callable[[], bool]]:
    """Call ``on_record`` with every CompilationMetrics as Dynamo records it, with or without
    metrics logging (torch._dynamo.test_case.TestCase turns it off) and however small the deque.

    Dynamo appends each record to its module-level deque before anything else reads it; the
    deque is replaced by one that reports each append to its listeners (nested recorders share
    it). Yields ``installed()``: True while the hook holds. set_compilation_metrics_limit swaps
    the deque: called through the module, it puts the hook on the new one at once; a copy of
    the function taken before the hook only at the next ``installed()`` call. Where this
    torch records otherwise, ``installed()`` is False from the start and the caller streams the
    log instead.
    """
    utils = _dynamo_utils()
    if not _records_into_deque():
        yield lambda: False
        return

    def install() -> bool:
        current = utils._compilation_metrics
        if not isinstance(current, _Observed):
            current = _Observed(current, maxlen=current.maxlen)
            utils._compilation_metrics = current
        if on_record not in current.listeners:
            current.listeners.append(on_record)
        return True

    install()
    # set_compilation_metrics_limit swaps the deque for a new one: observed from the swap on
    resize: Any = getattr(utils, "set_compilation_metrics_limit", None)

    def set_limit(new_size: int) -> None:
        assert resize is not None
        resize(new_size)
        install()

    if resize is not None:
        set_limit.__wrapped__ = resize  # type: ignore[attr-defined]
        utils.set_compilation_metrics_limit = set_limit
    try:
        yield install
    finally:
        if resize is not None and utils.set_compilation_metrics_limit is set_limit:
            utils.set_compilation_metrics_limit = resize
        current = utils._compilation_metrics
        if isinstance(current, _Observed):
            if on_record in current.listeners:
                current.listeners.remove(on_record)
            if not current.listeners:  # the last one out puts Dynamo's plain deque back
                utils._compilation_metrics = collections.deque(current, maxlen=current.maxlen)


@contextlib.contextmanager
def metrics_stream(on_record: Callable[[Any], None]) -> Iterator[bool]:
    """Call ``on_record`` with every CompilationMetrics as Dynamo logs it.

    Yields False when this torch has no such log (the caller then reads the metrics deque).
    The user's view of the logger is kept: it propagates as it did outside the block, and INFO
    records reach their handlers only if their level already let INFO through.
    """
    internal: Any = getattr(torch, "_utils_internal", None)
    config: Any = getattr(torch._dynamo, "config", None)
    if (
        internal is None
        or not hasattr(internal, "log_compilation_event")
        or not hasattr(config, "log_compilation_metrics")
    ):
        yield False
        return
    logger = logging.getLogger(METRICS_LOGGER)
    user_saw_info = logger.isEnabledFor(logging.INFO)
    old_level, old_propagate = logger.level, logger.propagate

    class _Handler(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            if record.args and isinstance(record.args, tuple):
                payload = record.args[0]
                if hasattr(payload, "compile_id"):
                    on_record(payload)

    handler = _Handler(logging.INFO)
    logger.addHandler(handler)
    if not user_saw_info:
        logger.setLevel(logging.INFO)
        logger.propagate = False  # INFO records the user never saw stay unseen
    try:
        with config.patch(log_compilation_metrics=True):
            yield True
    finally:
        logger.removeHandler(handler)
        logger.setLevel(old_level)
        logger.propagate = old_propagate


def unique_graphs() -> int | None:
    """Dynamo's own count of graphs handed to a backend (for runs without our counting backend)."""
    utils = _dynamo_utils()
    counters: Any = getattr(utils, "counters", None)
    # .get, never [ ]: counters is a defaultdict, and a key read into being is printed by
    # torch's TestCase tearDown on a failing test ("graph_break []"): the user's output changed
    return None if counters is None else int(counters.get("stats", {}).get("unique_graphs", 0))


def graph_break_count() -> int | None:
    """Graph breaks Dynamo has counted in this process (all reasons)."""
    utils = _dynamo_utils()
    counters: Any = getattr(utils, "counters", None)
    return None if counters is None else int(sum(counters.get("graph_break", {}).values()))
