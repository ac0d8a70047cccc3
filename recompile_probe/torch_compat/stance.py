"""torch.compiler.set_stance: refusals of fail_on_recompile observed, the eager stance."""

from __future__ import annotations

import contextlib
import functools
import inspect
import sys
from collections.abc import Callable, Iterator
from typing import Any

import torch

from .cache import cache_entries, entry_compile_id


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
    guards_mod: Any = getattr(torch._dynamo, "guards", None)
    original: Any = getattr(guards_mod, "get_and_maybe_log_recompilation_reasons", None)
    eval_frame: Any = getattr(torch._dynamo, "eval_frame", None)
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


def _reject(
    on_rejected: Callable[[Any, list[str], list[str]], None],
    frame: Any,
    entries: list[Any],
    failures: Any,
) -> None:
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
    out: list[Any] = []
    while entries is not None and len(out) < 1 << 16:
        out.append(entries)
        entries = getattr(entries, "next", None)
    return out


@contextlib.contextmanager
def _stance_rejections_by_tensor_check(
    on_rejected: Callable[[Any, list[str], list[str]], None], reasons: Callable[..., Any]
) -> Iterator[bool]:
    """2.9's fail_on_recompile callback: after skipping torch's own files it asks
    ``convert_frame.has_tensor_in_frame`` and raises when that says True. That call, made by the
    stance's callback, is the refusal; the guard failures are read as the newer stance reads
    them."""
    convert_frame: Any = getattr(torch._dynamo, "convert_frame", None)
    check: Any = getattr(convert_frame, "has_tensor_in_frame", None)
    eval_frame = torch._dynamo.eval_frame
    if check is None or not _stance_checks_tensors():
        yield False
        return
    first_only = next(iter(inspect.signature(reasons).parameters), "") == "cache_entry"

    def observed(frame: Any, *args: Any, **kwargs: Any) -> Any:
        result = check(frame, *args, **kwargs)
        if (
            result
            and getattr(eval_frame._stance, "stance", None) == "fail_on_recompile"
            and sys._getframe(1).f_code.co_name == "fail_callback"
        ):
            entries = cache_entries(frame.f_code) or []
            _reject(
                on_rejected,
                frame,
                entries,
                lambda: (
                    []
                    if not entries
                    else reasons(entries[0] if first_only else entries, frame, skip_logging=True)
                ),
            )
        return result

    observed.__wrapped__ = check  # type: ignore[attr-defined]
    convert_frame.has_tensor_in_frame = observed
    try:
        yield True
    finally:
        if convert_frame.has_tensor_in_frame is observed:
            convert_frame.has_tensor_in_frame = check


@functools.cache
def _stance_checks_tensors() -> bool:
    """Whether this torch's fail_on_recompile callback raises right after its
    ``convert_frame.has_tensor_in_frame`` check (2.9), read from its source like the above."""
    try:
        source = inspect.getsource(torch._dynamo.eval_frame)
    except (OSError, TypeError):
        return False
    start = source.find('"fail_on_recompile"')
    body = source[start : start + 2000] if start >= 0 else ""
    check = body.find("convert_frame.has_tensor_in_frame(frame)")
    return check >= 0 and "raise RuntimeError" in body[check:]


@functools.cache
def _stance_reads_reasons() -> bool:
    """Whether this torch's fail_on_recompile path asks for the guard failures (2.13 does; 2.9
    raises without looking at them, so there is nothing to observe)."""
    eval_frame: Any = getattr(torch._dynamo, "eval_frame", None)
    try:
        source = inspect.getsource(eval_frame)
    except (OSError, TypeError):
        return False
    start = source.find('"fail_on_recompile"')
    return start >= 0 and "get_and_maybe_log_recompilation_reasons" in source[start : start + 4000]


def eager_stance() -> contextlib.AbstractContextManager:
    """Run torch.compile'd code inside the target eagerly (for the eager reference)."""
    set_stance: Any = getattr(torch.compiler, "set_stance", None)
    return set_stance("force_eager") if set_stance is not None else contextlib.nullcontext()


def set_stance_missing() -> str | None:
    """Why a strategy's ``stance:`` cannot run here (torch.compiler.set_stance is from 2.6)."""
    if getattr(torch.compiler, "set_stance", None) is None:
        return "torch.compiler.set_stance does not exist in this torch"
    return None


def stance(name: str) -> contextlib.AbstractContextManager:
    """``torch.compiler.set_stance(name)`` for the block; set_stance_missing() says where not."""
    return torch.compiler.set_stance(name)
