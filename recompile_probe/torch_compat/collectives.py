"""torch.distributed as a distributed scenario's ranks use it: the process group each rank
process joins, and the two knobs torch has for ranks that compile differently (compiler
collectives, guard collectives), each feature-detected and measured where it runs.

Measured on torch 2.13.0 CPU with gloo (2 ranks): guard collectives work (a rank whose guards
fail makes every rank recompile); compiler collectives fail inside Dynamo on the first compile,
before any collective is issued: with "gloo" the group serves two device types (Dynamo asserts
one, and its message then fails to format: TypeError), with "cpu:gloo" it takes the rank modulo
``torch.accelerator.device_count()``, 0 without an accelerator (ZeroDivisionError). The canary
below finds that out on the process group the ranks really use instead of assuming it.
"""

from __future__ import annotations

import contextlib
import datetime
import functools
from collections.abc import Iterator
from typing import Any

import torch

from .dynamo import reset_dynamo
from .logs import quiet_torch_logs

COMPILER_COLLECTIVES = "torch._dynamo.config.enable_compiler_collectives"
GUARD_COLLECTIVES = "torch.compiler.set_enable_guard_collectives"
_NO_GROUP = "needs a process group: it runs only in a scenario with `ranks:`"


def _dist() -> Any:
    import torch.distributed as dist

    return dist if dist.is_available() else None


def initialised() -> bool:
    dist = _dist()
    return dist is not None and dist.is_initialized()


def init_group(backend: str, timeout_s: float) -> None:
    """Join the process group RANK/WORLD_SIZE/MASTER_ADDR/MASTER_PORT describe. ``timeout_s``
    bounds every collective, so a rank waiting on one that never joins gives up instead of
    hanging."""
    dist = _dist()
    if dist is None:
        raise RuntimeError("torch.distributed is not available in this torch build")
    dist.init_process_group(backend, timeout=datetime.timedelta(seconds=timeout_s))


def barrier() -> None:
    if initialised():
        _dist().barrier()


def close_group() -> None:
    if initialised():
        with contextlib.suppress(Exception):  # a broken group (a timed-out peer) still exits
            _dist().destroy_process_group()


def guard_collectives_missing() -> str | None:
    """Why the guard-collectives strategy cannot run here; None when it can."""
    if not hasattr(torch.compiler, "set_enable_guard_collectives"):
        return f"{GUARD_COLLECTIVES} does not exist in this torch"
    if not initialised():
        return f"{GUARD_COLLECTIVES} {_NO_GROUP}"
    return None


def guard_collectives_on() -> bool:
    """Whether guard collectives are on in this process now (set by a strategy or by the
    program itself). torch keeps no getter: the hook is read by setting it and putting it back,
    which is atomic under the GIL. False where the knob does not exist."""
    try:
        from torch._C._dynamo.eval_frame import set_guard_complete_hook
    except ImportError:
        return False
    previous = set_guard_complete_hook(None)
    set_guard_complete_hook(previous)
    return previous is not None


@contextlib.contextmanager
def guard_collectives() -> Iterator[None]:
    """Guard collectives on for the run, the previous setting restored after it."""
    previous = torch.compiler.set_enable_guard_collectives(True)
    try:
        yield
    finally:
        torch.compiler.set_enable_guard_collectives(bool(previous))


@functools.cache
def compiler_collectives_fail() -> str | None:
    """Why compiler collectives do not work on this process group, measured by a canary compile
    that every rank makes at the same point (ranks run the same jobs in the same order); None
    when the canary compiles. Once per process; the Dynamo state is left fresh."""
    config: Any = torch._dynamo.config
    if not hasattr(config, "enable_compiler_collectives"):
        return f"{COMPILER_COLLECTIVES} does not exist in this torch"
    if not initialised():
        return f"{COMPILER_COLLECTIVES} {_NO_GROUP}"

    def canary(x: torch.Tensor) -> torch.Tensor:
        return x * 2

    reset_dynamo()
    try:
        with config.patch(enable_compiler_collectives=True), quiet_torch_logs():
            torch.compile(canary, backend="eager")(torch.ones(3))
    except Exception as exc:  # noqa: BLE001 - any failure means the knob cannot be measured here
        cause = exc.__cause__ or exc
        dist = _dist()
        backend = dist.get_backend() if dist is not None else "?"
        return (
            f"{COMPILER_COLLECTIVES} fails in Dynamo on this process group ({backend}, "
            f"{torch.accelerator.device_count() if hasattr(torch, 'accelerator') else '?'} "
            f"accelerators): {type(cause).__name__}: {str(cause).splitlines()[0][:160]}"
        )
    finally:
        reset_dynamo()
    return None
