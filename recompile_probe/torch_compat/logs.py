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


_ARTIFACT_OF = {
    RECOMPILES_LOGGER: RECOMPILES_ARTIFACT,
    RECOMPILES_VERBOSE_LOGGER: RECOMPILES_VERBOSE_ARTIFACT,
}


class _Listening(set[str]):
    """torch's set of enabled artifacts while the tool listens to recompiles.

    Dynamo decides whether to write a recompile message by asking this set, so the artifact the
    tool needs reads as enabled while the real contents stay the user's: a program that calls
    ``set_logs(...)`` (which clears the set and fills it again) neither switches the tool off nor
    has its own handlers starved, because the loggers' filters pass a record on exactly when
    the user's settings enabled its artifact.
    """

    def __init__(self, names: set[str], ours: str, listeners: list[Callable[[str], None]]) -> None:
        super().__init__(names)
        self.ours = ours
        #: shared by every set the tool installs (a program may swap torch's log state)
        self.listeners = listeners

    def really(self, name: str) -> bool:
        return set.__contains__(self, name)

    def __contains__(self, name: object) -> bool:
        if set.__contains__(self, name):
            return True
        return (
            name == self.ours
            and bool(self.listeners)
            and not any(self.really(a) for a in _ARTIFACT_OF.values())
        )


def _names(internal: Any) -> Any:
    """The artifact set torch consults now (a program may have replaced its log state)."""
    return getattr(getattr(internal, "log_state", None), "artifact_names", None)


def _enabled(names: Any, artifact: str) -> bool:
    """Whether the user's settings (not the tool's) enable ``artifact``."""
    if isinstance(names, _Listening):
        return names.really(artifact)
    return isinstance(names, set) and artifact in names


class _Relay(logging.Filter):
    """Hands each recompile message to the listeners, then lets it on to the handlers (the
    user's, torch's) only if the user's settings enabled this artifact."""

    def __init__(self, internal: Any, listeners: list[Callable[[str], None]], artifact: str):
        super().__init__()
        self.internal, self.listeners, self.artifact = internal, listeners, artifact

    def filter(self, record: logging.LogRecord) -> bool:
        for listener in list(self.listeners):
            try:
                listener(record.getMessage())
            except Exception:  # noqa: BLE001 - observing must never break the user's compile
                pass
        return _enabled(_names(self.internal), self.artifact)


def _as_torch_configures(lg: logging.Logger, artifact: str, names: Any, registry: Any) -> None:
    """The level and propagation torch's own set-up gives an artifact logger for these names."""
    lg.setLevel(logging.NOTSET)
    lg.propagate = True
    off: Any = getattr(registry, "is_off_by_default", None)
    if off is not None and off(artifact):
        lg.propagate = False
    if _enabled(names, artifact):
        lg.setLevel(logging.DEBUG)
        lg.propagate = True


@contextlib.contextmanager
def recompiles_stream(on_message: Callable[[str], None], verbose: bool = True) -> Iterator[bool]:
    """Capture the recompiles artifact in-process (no TORCH_LOGS), leaving user logging as it was.

    Dynamo writes a recompile message to ONE of two loggers: the verbose one when the user
    enabled ``recompiles_verbose``, else the plain one. Both are listened to; when the user has
    neither on, the verbose one reads as on to Dynamo (quietly: its records reach no handler):
    it names every failing part of each entry's failing guard, not just the first, and runs
    only on a recompile (nothing per call); ``verbose=False`` reads the plain one instead.
    Whatever the program does to torch's logging meanwhile (``set_logs``, a log state of its
    own as PyTorch's test utilities swap in, its own handlers on ``torch._dynamo.guards``) works
    as in a plain run, and the messages keep coming.
    """
    internal: Any = getattr(getattr(torch, "_logging", None), "_internal", None)
    names_now: Any = _names(internal)
    if not isinstance(names_now, set):
        yield False
        return
    if isinstance(names_now, _Listening):  # a recorder inside another: share the relay
        names_now.listeners.append(on_message)
        try:
            yield True
        finally:
            names_now.listeners.remove(on_message)
        return
    ours = RECOMPILES_VERBOSE_ARTIFACT if verbose else RECOMPILES_ARTIFACT
    listeners: list[Callable[[str], None]] = [on_message]
    #: (log state, the set installed in it), to give each its user's set back
    installed: list[tuple[Any, _Listening]] = []
    registry: Any = getattr(internal, "log_registry", None)
    loggers = {n: logging.getLogger(n) for n in _ARTIFACT_OF}
    saved = {n: (lg.level, lg.propagate) for n, lg in loggers.items()}
    relays = {n: _Relay(internal, listeners, a) for n, a in _ARTIFACT_OF.items()}
    mine = loggers[RECOMPILES_VERBOSE_LOGGER if verbose else RECOMPILES_LOGGER]
    reset = [False]

    def install() -> None:
        state: Any = getattr(internal, "log_state", None)
        names: Any = getattr(state, "artifact_names", None)
        if isinstance(names, set) and not isinstance(names, _Listening):
            listening = _Listening(names, ours, listeners)
            state.artifact_names = listening
            installed.append((state, listening))

    def listen() -> None:
        # Dynamo creates the record only where the logger is enabled for DEBUG; propagation
        # stays the user's (test frameworks attach their handlers by it)
        if not _enabled(_names(internal), ours):
            mine.setLevel(logging.DEBUG)

    def set_up_again() -> None:
        """After the program set torch's logging up again: the loggers as torch would have
        left them for the user's settings, then listening again."""
        reset[0] = True
        install()
        for n, lg in loggers.items():
            _as_torch_configures(lg, _ARTIFACT_OF[n], _names(internal), registry)
        listen()

    init_logs = _after_each(internal, "_init_logs", set_up_again)
    for n, lg in loggers.items():
        lg.addFilter(relays[n])
    install()
    listen()
    try:
        yield True
    finally:
        listeners.clear()
        init_logs.close()
        for state, listening in installed:
            if getattr(state, "artifact_names", None) is listening:
                state.artifact_names = set(listening)
        for n, lg in loggers.items():
            lg.removeFilter(relays[n])
            if reset[0]:
                _as_torch_configures(lg, _ARTIFACT_OF[n], _names(internal), registry)
            else:
                lg.setLevel(saved[n][0])
                lg.propagate = saved[n][1]


def _after_each(module: Any, name: str, then: Callable[[], None]) -> contextlib.ExitStack:
    """Call ``then`` after every call of ``module.name`` (and of torch._logging's binding of the
    same function) until the returned stack is closed."""
    stack = contextlib.ExitStack()
    original: Any = getattr(module, name, None)
    if not callable(original):
        return stack

    def wrapped(*args: Any, **kwargs: Any) -> Any:
        try:
            return original(*args, **kwargs)
        finally:
            then()

    def put_back(owner: Any) -> None:
        # someone who wrapped it after us keeps their wrapper
        if getattr(owner, name, None) is wrapped:
            setattr(owner, name, original)

    for owner in (module, getattr(torch, "_logging", None)):
        if owner is not None and getattr(owner, name, None) is original:
            setattr(owner, name, wrapped)
            stack.callback(put_back, owner)
    return stack


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
