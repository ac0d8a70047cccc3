"""Every private torch API the tool reads, feature-detected in one place.

Dynamo's internals move between releases. Each accessor here returns ``None`` (or does nothing)
when its API is missing, and the figure it feeds reads ``n/a``: the tool never crashes on an
older or newer torch, and never guesses a number.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import logging
import sys
from typing import Any, Callable, Iterator

import torch

METRICS_LOGGER = "torch._utils_internal"
RECOMPILES_LOGGER = "torch._dynamo.guards.__recompiles"
RECOMPILES_ARTIFACT = "recompiles"
#: With TORCH_LOGS=recompiles_verbose Dynamo logs here only (every failing guard of each entry).
RECOMPILES_VERBOSE_LOGGER = "torch._dynamo.guards.__recompiles_verbose"
RECOMPILES_VERBOSE_ARTIFACT = "recompiles_verbose"


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
EVENT_FIELDS = ("compile_id", "co_name", "co_filename", "co_firstlineno", "cache_size",
                "fail_type", "fail_reason", "recompile_reason", "guard_count",
                "shape_env_guard_count", "graph_op_count", "dynamo_cumulative_compile_time_us",
                "guard_latency_us")


def metrics_fields(record: Any) -> dict[str, Any]:
    """A metrics record as the mapping the event builder reads (missing fields: None)."""
    return {name: metric(record, name) for name in EVENT_FIELDS}


def metrics_key(record: Any) -> tuple:
    """Identifies one record whichever way it reached us (log handler or deque)."""
    cid = metric(record, "compile_id")
    return (None if cid is None else str(cid), metric(record, "start_time_us"),
            metric(record, "co_name"), metric(record, "fail_type"))


@contextlib.contextmanager
def keep_all_metrics(limit: int = 1 << 20) -> Iterator[None]:
    """Let the metrics deque (maxlen 64 by default) hold every record while the block runs.

    Only for readers that have no log stream and must poll the deque: a full deque would drop
    records between two polls. The original limit is put back (keeping the newest records).
    """
    utils = _dynamo_utils()
    setter = getattr(utils, "set_compilation_metrics_limit", None)
    current = getattr(utils, "_compilation_metrics", None)
    old = getattr(current, "maxlen", None)
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


@contextlib.contextmanager
def metrics_stream(on_record: Callable[[Any], None]) -> Iterator[bool]:
    """Call ``on_record`` with every CompilationMetrics as Dynamo logs it.

    Yields False when this torch has no such log (the caller then reads the metrics deque).
    The user's view of the logger is kept: it propagates exactly as before, and INFO records reach
    their handlers only if their level already let INFO through.
    """
    internal = getattr(torch, "_utils_internal", None)
    config = getattr(torch._dynamo, "config", None)
    if internal is None or not hasattr(internal, "log_compilation_event") or \
            not hasattr(config, "log_compilation_metrics"):
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


# --- recompile reasons (the torch._logging "recompiles" artifact) ----------------------------------

@contextlib.contextmanager
def recompiles_stream(on_message: Callable[[str], None], verbose: bool = True
                      ) -> Iterator[bool]:
    """Capture the recompiles artifact in-process (no TORCH_LOGS), leaving user logging as it was.

    Dynamo writes a recompile message to ONE of two loggers: the verbose one when the user
    enabled ``recompiles_verbose``, else the plain one. Both are listened to; when the user has
    neither on, the verbose one is switched on (quietly): it names every failing part of each
    entry's failing guard, not just the first, and runs only on a recompile (nothing per call);
    ``verbose=False`` switches on the plain one instead.
    """
    internal = getattr(getattr(torch, "_logging", None), "_internal", None)
    state = getattr(internal, "log_state", None)
    if state is None or not hasattr(state, "artifact_names"):
        yield False
        return
    user_on = {a for a in (RECOMPILES_ARTIFACT, RECOMPILES_VERBOSE_ARTIFACT)
               if a in state.artifact_names}

    class _Handler(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            on_message(record.getMessage())

    handler = _Handler(logging.DEBUG)
    loggers = [logging.getLogger(n) for n in (RECOMPILES_LOGGER, RECOMPILES_VERBOSE_LOGGER)]
    saved = [(lg, lg.level, lg.propagate) for lg in loggers]
    for lg in loggers:
        lg.addHandler(handler)
    ours = RECOMPILES_VERBOSE_ARTIFACT if verbose else RECOMPILES_ARTIFACT
    if not user_on:
        state.artifact_names.add(ours)
        loggers[1 if verbose else 0].setLevel(logging.DEBUG)
        loggers[1 if verbose else 0].propagate = False  # the user did not ask for these
    try:
        yield True
    finally:
        for lg, level, propagate in saved:
            lg.removeHandler(handler)
            lg.setLevel(level)
            lg.propagate = propagate
        if not user_on:
            state.artifact_names.discard(ours)


@contextlib.contextmanager
def stance_rejections(on_rejected: Callable[[Any, list[str], list[str]], None]) -> Iterator[bool]:
    """Observe recompiles refused by ``set_stance("fail_on_recompile")``.

    That stance raises before Dynamo writes a metrics record or a log line; the only place the
    refusal passes through is its call of ``get_and_maybe_log_recompilation_reasons(...,
    skip_logging=True)``. It is wrapped while the block runs (the original still does all the
    work) and ``on_rejected(code, entry compile ids, failure lines)`` is called. Where the stance
    raises without asking for them (2.9), its own check for tensors in the frame is observed
    instead and the failures are asked for here, as the newer stance does. Yields False where
    this torch has neither.
    """
    guards_mod = getattr(torch._dynamo, "guards", None)
    original = getattr(guards_mod, "get_and_maybe_log_recompilation_reasons", None)
    eval_frame = getattr(torch._dynamo, "eval_frame", None)
    if original is None or not hasattr(eval_frame, "_stance"):
        yield False
        return
    if not _stance_reads_reasons():
        with _stance_rejections_by_tensor_check(on_rejected, original) as observing:
            yield observing
        return

    def observed(cache_entries: Any, frame: Any, *args: Any, **kwargs: Any) -> Any:
        result = original(cache_entries, frame, *args, **kwargs)
        skip = kwargs.get("skip_logging", args[1] if len(args) > 1 else False)
        if skip and getattr(eval_frame._stance, "stance", None) == "fail_on_recompile":
            _reject(on_rejected, frame, _chained(cache_entries), result)
        return result

    observed.__wrapped__ = original  # type: ignore[attr-defined]
    guards_mod.get_and_maybe_log_recompilation_reasons = observed
    try:
        yield True
    finally:
        if guards_mod.get_and_maybe_log_recompilation_reasons is observed:
            guards_mod.get_and_maybe_log_recompilation_reasons = original


def _reject(on_rejected: Callable[[Any, list[str], list[str]], None], frame: Any,
            entries: list[Any], failures: Any) -> None:
    """Report one refused recompile: the frame's code, its entries' compile ids, the guard
    failures (a list, or a callable reading them). Observing must never change the program."""
    try:
        found = failures() if callable(failures) else failures
        ids = [entry_compile_id(e) for e in entries]
        on_rejected(frame.f_code, [i for i in ids if i], list(found or ()))
    except Exception:  # noqa: BLE001
        pass


def _chained(entries: Any) -> list[Any]:
    """Cache entries as a list: 2.13 passes one, 2.11 the first entry of a ``.next`` chain."""
    if entries is None or isinstance(entries, (list, tuple)):
        return list(entries or ())
    out = []
    while entries is not None and len(out) < 1 << 16:
        out.append(entries)
        entries = getattr(entries, "next", None)
    return out


@contextlib.contextmanager
def _stance_rejections_by_tensor_check(on_rejected: Callable[[Any, list[str], list[str]], None],
                                       reasons: Callable[..., Any]) -> Iterator[bool]:
    """2.9's fail_on_recompile callback: after skipping torch's own files it asks
    ``convert_frame.has_tensor_in_frame`` and raises when that says True. That call, made by the
    stance's callback, is the refusal; the guard failures are read as the newer stance reads them."""
    convert_frame = getattr(torch._dynamo, "convert_frame", None)
    check = getattr(convert_frame, "has_tensor_in_frame", None)
    eval_frame = torch._dynamo.eval_frame
    if check is None or not _stance_checks_tensors():
        yield False
        return
    first_only = next(iter(inspect.signature(reasons).parameters), "") == "cache_entry"

    def observed(frame: Any, *args: Any, **kwargs: Any) -> Any:
        result = check(frame, *args, **kwargs)
        if result and getattr(eval_frame._stance, "stance", None) == "fail_on_recompile" \
                and sys._getframe(1).f_code.co_name == "fail_callback":
            entries = cache_entries(frame.f_code) or []
            _reject(on_rejected, frame, entries, lambda: [] if not entries else reasons(
                entries[0] if first_only else entries, frame, skip_logging=True))
        return result

    observed.__wrapped__ = check  # type: ignore[attr-defined]
    convert_frame.has_tensor_in_frame = observed
    try:
        yield True
    finally:
        if convert_frame.has_tensor_in_frame is observed:
            convert_frame.has_tensor_in_frame = check


@functools.lru_cache(maxsize=None)
def _stance_checks_tensors() -> bool:
    """Whether this torch's fail_on_recompile callback raises right after its
    ``convert_frame.has_tensor_in_frame`` check (2.9), read from its source like the above."""
    try:
        source = inspect.getsource(torch._dynamo.eval_frame)
    except (OSError, TypeError):
        return False
    start = source.find('"fail_on_recompile"')
    body = source[start:start + 2000] if start >= 0 else ""
    check = body.find("convert_frame.has_tensor_in_frame(frame)")
    return check >= 0 and "raise RuntimeError" in body[check:]


@functools.lru_cache(maxsize=None)
def _stance_reads_reasons() -> bool:
    """Whether this torch's fail_on_recompile path asks for the guard failures (2.13 does; 2.9
    raises without looking at them, so there is nothing to observe)."""
    eval_frame = getattr(torch._dynamo, "eval_frame", None)
    try:
        source = inspect.getsource(eval_frame)
    except (OSError, TypeError):
        return False
    start = source.find('"fail_on_recompile"')
    return start >= 0 and "get_and_maybe_log_recompilation_reasons" in source[start:start + 4000]


# --- knobs a release may have without honouring them -----------------------------------------------

@functools.lru_cache(maxsize=None)
def knob_not_honoured(dotted: str) -> str | None:
    """Why a config this torch has does nothing here, measured by a canary compile; None when it
    works (or no canary is known for it). Runs at most once per knob and process, in a fresh
    Dynamo state that it leaves fresh."""
    if dotted != "torch.compiler.config.unbacked_sources":
        return None

    def canary(x: torch.Tensor) -> torch.Tensor:
        return x * 2

    def compiles(value: str) -> int:
        counter = [0]

        def backend(gm: Any, example_inputs: Any) -> Any:
            counter[0] += 1
            return gm

        reset_dynamo()
        try:
            with torch.compiler.config.patch(unbacked_sources=value), quiet_torch_logs():
                compiled = torch.compile(canary, backend=backend)
                for n in (1, 2, 3):
                    compiled(torch.ones(n))
        finally:
            reset_dynamo()
        return counter[0]

    try:
        per_dim = compiles("L['x']:0")
        if per_dim == 1:
            return None
        # torch 2.9 matches whole tensor names only (every dim unbacked): say so, since the
        # strategy names single dims and would be a different experiment with whole tensors
        whole = compiles("L['x']")
    except Exception as exc:  # noqa: BLE001 - a knob that breaks compiles is not honoured either
        return f"{dotted} makes a canary compile fail in this torch ({type(exc).__name__})"
    why = (f"{dotted} exists in this torch but is not honoured for dims: a canary marked "
           f"through it (L['x']:0) compiled {per_dim} times for sizes 1, 2, 3 (1 when honoured)")
    if whole == 1:
        why += ("; this torch takes whole tensors only (L['x'] compiled once), which would make "
                "every dim of a named tensor unbacked, not just the batch dims")
    return why


# --- cache entries and guard trees ----------------------------------------------------------------

def cache_entries(code: Any) -> list[Any] | None:
    """Cache entries of a code object, most recently used first; None if this torch hides them."""
    eval_frame = getattr(torch._dynamo, "eval_frame", None)
    getter = getattr(eval_frame, "_debug_get_cache_entry_list", None)
    if getter is None:
        return None
    try:
        return list(getter(code))
    except Exception:  # noqa: BLE001 - a private API; its failure means "n/a", not a crash
        return None


def dynamo_codes() -> list[Any] | None:
    """Every code object Dynamo was asked to compile since the last reset."""
    convert_frame = getattr(torch._dynamo, "convert_frame", None)
    tracker = getattr(convert_frame, "input_codes", None)
    seen = getattr(tracker, "seen", None)
    if seen is None:
        return None
    return [c for c in (ref() for ref in list(seen)) if c is not None]


def entry_compile_id(entry: Any) -> str | None:
    cid = getattr(entry, "compile_id", None)
    return None if cid is None else str(cid)


def guard_root(entry: Any) -> Any | None:
    return getattr(getattr(entry, "guard_manager", None), "root", None)


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
    internal = getattr(getattr(torch, "_logging", None), "_internal", None)
    handler_cls = getattr(internal, "LazyTraceHandler", None)
    formatter_cls = getattr(internal, "TorchLogsFormatter", None)
    trace_log = getattr(internal, "trace_log", None)
    if handler_cls is None or formatter_cls is None or trace_log is None:
        yield lambda: None
        return
    handler = handler_cls(directory)
    handler.setFormatter(formatter_cls(trace=True))
    # File names are interned once per process ("str" records): a second trace file written
    # later would hold none of them and tlparse would show "(unknown)". Each file gets its own
    # table; the process's table is put back afterwards for any trace the user writes.
    structured = getattr(getattr(torch, "_logging", None), "structured", None)
    interned = getattr(structured, "INTERN_TABLE", None)
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
        path[0] = getattr(handler, "_stream_path", None) or \
            getattr(getattr(handler, "stream", None), "name", None)
        trace_log.removeHandler(handler)
        handler.close()
        trace_log.setLevel(old_level)
        trace_log.propagate = old_propagate
        if saved is not None:
            interned.clear()
            interned.update(saved)


# --- isolation ------------------------------------------------------------------------------------

def reset_dynamo() -> None:
    """Fresh Dynamo state, including what torch._dynamo.reset() leaves behind."""
    torch._dynamo.reset()
    clear_metrics()
    eval_frame = getattr(torch._dynamo, "eval_frame", None)
    if eval_frame is not None and hasattr(eval_frame, "_EXAMPLE_INPUTS"):
        eval_frame._EXAMPLE_INPUTS = None  # eager_then_compile would skip its eager call
    utils = _dynamo_utils()
    if utils is not None and hasattr(utils, "counters"):
        utils.counters.clear()


@contextlib.contextmanager
def isolated_caches(backend: str) -> Iterator[None]:
    """No profile-guided dynamism from earlier runs, and fresh inductor caches."""
    with contextlib.ExitStack() as stack:
        config = torch._dynamo.config
        for name, value in (("automatic_dynamic_local_pgo", False),
                            ("automatic_dynamic_remote_pgo", False)):
            if hasattr(config, name):
                stack.enter_context(config.patch(name, value))
        if backend == "inductor":
            import torch._inductor.utils as inductor_utils

            fresh = getattr(inductor_utils, "fresh_cache", None) or \
                getattr(inductor_utils, "fresh_inductor_cache", None)
            if fresh is not None:
                stack.enter_context(fresh())
        yield


def unique_graphs() -> int | None:
    """Dynamo's own count of graphs handed to a backend (for runs without our counting backend)."""
    utils = _dynamo_utils()
    counters = getattr(utils, "counters", None)
    return None if counters is None else int(counters["stats"]["unique_graphs"])


def graph_break_count() -> int | None:
    """Graph breaks Dynamo has counted in this process (all reasons)."""
    utils = _dynamo_utils()
    counters = getattr(utils, "counters", None)
    return None if counters is None else int(sum(counters["graph_break"].values()))


def eager_stance() -> contextlib.AbstractContextManager:
    """Run torch.compile'd code inside the target eagerly (for the eager reference)."""
    set_stance = getattr(torch.compiler, "set_stance", None)
    return set_stance("force_eager") if set_stance is not None else contextlib.nullcontext()


def resolve_backend(name: str, mode: str | None, options: dict | None, dynamic: bool | None) -> Any:
    """The backend torch.compile would build for these arguments."""
    if name == "inductor" and hasattr(torch, "_TorchCompileInductorWrapper"):
        # lookup_backend("inductor") would drop mode and options.
        return torch._TorchCompileInductorWrapper(mode, options, dynamic)
    from torch._dynamo.backends.registry import lookup_backend

    return lookup_backend(name)
