"""torch._logging: the recompiles artifacts, torch's own log level, the structured trace."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Iterator
from typing import Any

import torch

RECOMPILES_LOGGER = "torch._dynamo.guards.__recompiles"
RECOMPILES_ARTIFACT = "recompiles"
#: With TORCH_LOGS=recompiles_verbose Dynamo logs here only (every failing guard of each entry).
RECOMPILES_VERBOSE_LOGGER = "torch._dynamo.guards.__recompiles_verbose"
RECOMPILES_VERBOSE_ARTIFACT = "recompiles_verbose"


@contextlib.contextmanager
def recompiles_stream(on_message: Callable[[str], None], verbose: bool = True) -> Iterator[bool]:
    """Capture the recompiles artifact in-process (no TORCH_LOGS), leaving user logging as it was.

    Dynamo writes a recompile message to ONE of two loggers: the verbose one when the user
    enabled ``recompiles_verbose``, else the plain one. Both are listened to; when the user has
    neither on, the verbose one is switched on (quietly): it names every failing part of each
    entry's failing guard, not just the first, and runs only on a recompile (nothing per call);
    ``verbose=False`` switches on the plain one instead.
    """
    internal: Any = getattr(getattr(torch, "_logging", None), "_internal", None)
    state: Any = getattr(internal, "log_state", None)
    if state is None or not hasattr(state, "artifact_names"):
        yield False
        return
    user_on = {
        a for a in (RECOMPILES_ARTIFACT, RECOMPILES_VERBOSE_ARTIFACT) if a in state.artifact_names
    }

    class _Handler(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            on_message(record.getMessage())

    class _Swallow(logging.Filter):
        """Reads the messages of the artifact we switched on, then drops them before any
        handler sees them: the user's, and torch's own if the program re-initializes
        torch._logging (its _init_logs gives every enabled artifact a stderr handler)."""

        def filter(self, record: logging.LogRecord) -> bool:
            try:
                on_message(record.getMessage())
            except Exception:  # noqa: BLE001 - observing must never break the user's compile
                pass
            return False

    handler = _Handler(logging.DEBUG)
    swallow = _Swallow()
    loggers = [logging.getLogger(n) for n in (RECOMPILES_LOGGER, RECOMPILES_VERBOSE_LOGGER)]
    saved = [(lg, lg.level, lg.propagate) for lg in loggers]
    ours = RECOMPILES_VERBOSE_ARTIFACT if verbose else RECOMPILES_ARTIFACT
    mine = loggers[1 if verbose else 0]
    if user_on:
        for lg in loggers:
            lg.addHandler(handler)
    else:
        state.artifact_names.add(ours)
        mine.setLevel(logging.DEBUG)
        mine.addFilter(swallow)
    try:
        yield True
    finally:
        for lg, level, propagate in saved:
            lg.removeHandler(handler)
            lg.removeFilter(swallow)
            lg.setLevel(level)
            lg.propagate = propagate
        if not user_on:
            state.artifact_names.discard(ours)


@contextlib.contextmanager
def quiet_torch_logs() -> Iterator[None]:
    """Silence torch's own log output (the "torch" logger tree) for the duration."""
    logger = logging.getLogger("torch")
    old = logger.level
    logger.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        logger.setLevel(old)


@contextlib.contextmanager
def structured_trace(directory: str) -> Iterator[Callable[[], str | None]]:
    """Write the structured trace (what TORCH_TRACE writes, what tlparse reads) into directory.

    Yields a function returning the file written, once the block has ended (None if nothing was
    logged or this torch has no structured trace).
    """
    internal: Any = getattr(getattr(torch, "_logging", None), "_internal", None)
    handler_cls: Any = getattr(internal, "LazyTraceHandler", None)
    formatter_cls: Any = getattr(internal, "TorchLogsFormatter", None)
    trace_log: Any = getattr(internal, "trace_log", None)
    if handler_cls is None or formatter_cls is None or trace_log is None:
        yield lambda: None
        return
    handler = handler_cls(directory)
    handler.setFormatter(formatter_cls(trace=True))
    # File names are interned once per process ("str" records): a second trace file written
    # later would hold none of them and tlparse would show "(unknown)". Each file gets its own
    # table; the process's table is put back afterwards for any trace the user writes.
    structured: Any = getattr(getattr(torch, "_logging", None), "structured", None)
    interned: Any = getattr(structured, "INTERN_TABLE", None)
    saved = dict(interned) if isinstance(interned, dict) else None
    if saved is not None:
        interned.clear()
    old_level, old_propagate = trace_log.level, trace_log.propagate
    trace_log.setLevel(logging.DEBUG)
    trace_log.propagate = False
    trace_log.addHandler(handler)
    path: list[str | None] = [None]
    try:
        yield lambda: path[0]
    finally:
        # 2.13 keeps the file's path in _stream_path; older releases only in the stream's name.
        path[0] = getattr(handler, "_stream_path", None) or getattr(
            getattr(handler, "stream", None), "name", None
        )
        trace_log.removeHandler(handler)
        handler.close()
        trace_log.setLevel(old_level)
        trace_log.propagate = old_propagate
        if saved is not None:
            interned.clear()
            interned.update(saved)
