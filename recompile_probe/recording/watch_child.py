"""Inside the watched program: start the Recorder the moment Dynamo finishes importing.

Loaded by the sitecustomize that `watch` puts first on PYTHONPATH, in the program and in every
Python process it starts (spawned workers, torchrun ranks). Each process writes its own stream,
``$RECOMPILE_PROBE_WATCH_OUT/events-<pid>.jsonl``, one JSON line per record, the moment it
happens, so a crash, an os._exit or a kill loses nothing already compiled:

- ``{"process": {...}}``: who this process is (pid, ppid, argv, forked_from, python, torch),
  written when it imports torch, or for a forked child with its first record;
- ``{"event": {...}, "extra": {...}}``: one compile (``extra``, where known: ``compiled_as``,
  ``call_site``, ``graph_breaks`` with their user lines; see Recorder.extras);
- ``{"warning": "..."}``;
- ``{"final": {"frames": [...], "role": ..., "recorder": ..., "collective_knobs": [...]}}``:
  qualified names and cache-entry counts, at the exit of a process that imported torch (and the
  knobs against ranks compiling differently that its torch has).

Why Dynamo and not ``import torch``: importing ``torch._dynamo`` costs as much as importing torch
(~1.5 s), and a program that never compiles should not pay it. No compile can happen before
Dynamo is imported, so starting then misses nothing. Nothing runs per call of compiled code.

A forked child inherits the running recorder with the Dynamo state it describes (cache entries,
counters, frame ids), so the recorder goes on listening unchanged; only this module's per-process
state is reset (os.register_at_fork): its own stream, its own compile ids, its own exit record.
"""

from __future__ import annotations

import atexit
import importlib.abc
import json
import os
import sys
import threading
import time
from typing import Any

ENV_OUT = "RECOMPILE_PROBE_WATCH_OUT"  #: the folder of the per-process streams
STREAM_PREFIX = "events-"

_lock = threading.Lock()
_recorder: Any = None
_pid = os.getpid()  #: the process the state below describes
_forked_from: int | None = None
_announced = False  #: this process's "process" record is written
_finished = False  #: this process's "final" record is written
_torch_ready = False  #: `import torch` has completed
_dynamo_ready = False  #: `import torch._dynamo` has completed
_own_ids: set[str] = set()  #: compile ids of the events this process recorded


def stream_path(directory: str, pid: int) -> str:
    return os.path.join(directory, f"{STREAM_PREFIX}{pid}.jsonl")


def _append(line: str) -> None:
    directory = os.environ.get(ENV_OUT)
    if not directory:
        return
    with open(stream_path(directory, os.getpid()), "a", encoding="utf-8") as handle:
        handle.write(line)


def _write(record: dict) -> None:
    line = json.dumps(record, default=str) + "\n"
    with _lock:
        if not _announced:
            _announce_locked()
        _append(line)


def _announce() -> None:
    with _lock:
        if not _announced:
            _announce_locked()


def _announce_locked() -> None:
    global _announced
    _announced = True
    _append(
        json.dumps(
            {
                "process": {
                    "pid": os.getpid(),
                    "ppid": os.getppid(),
                    "argv": list(sys.argv),
                    "executable": sys.executable,
                    "forked_from": _forked_from,
                    "started": time.time(),
                    "role": _role(),
                    "python": ".".join(map(str, sys.version_info[:3])),
                    "torch": getattr(sys.modules.get("torch"), "__version__", None),
                }
            }
        )
        + "\n"
    )


_worker_role: str | None = None  #: kept: torch 2.15 clears _worker_info as the worker loop ends


def _role() -> str | None:
    """What this process is to the program, where it can be told without importing anything."""
    global _worker_role
    data = sys.modules.get("torch.utils.data._utils.worker")
    info = getattr(data, "_worker_info", None)
    if info is not None and getattr(info, "id", None) is not None:
        _worker_role = f"DataLoader worker {info.id}"
    if _worker_role is not None:  # the exit record comes after the loop's own clean-up
        return _worker_role
    if os.environ.get("RANK") is not None and os.environ.get("WORLD_SIZE") is not None:
        return f"rank {os.environ['RANK']}"
    if _rank is not None:
        return f"rank {_rank}"
    mp = sys.modules.get("multiprocessing")
    if mp is not None:
        try:
            name = mp.current_process().name
        except Exception:  # noqa: BLE001 - a label, never worth breaking the program
            name = None
        if name and name != "MainProcess":
            return name
    return None


_rank: int | None = None  #: from torch.distributed, seen while its process group lived


def _note_rank() -> None:
    """A rank started without a RANK variable (torch.multiprocessing.spawn) is known by its
    process group, which is usually gone by the exit record: note it while compiling."""
    global _rank
    if _rank is None and "torch.distributed" in sys.modules:
        from ..torch_compat.distributed import current_rank

        _rank = current_rank()


def _knobs() -> list[str] | None:
    try:
        from ..torch_compat.distributed import collective_knobs

        return list(collective_knobs())
    except Exception:  # noqa: BLE001 - advice only
        return None


def _on_event(event: Any) -> None:
    _role()  # a spawned worker announced itself before its loop: note its id while it runs
    _note_rank()
    if event.compile_id is not None:
        _own_ids.add(event.compile_id)
    from ..records import encode

    record: dict[str, Any] = {"event": encode.data(event)}
    extra = _recorder.extra(event.compile_id, event.resets) if _recorder is not None else None
    if extra:  # the user's name for what was compiled, their call site, graph-break lines
        record["extra"] = extra
    _write(record)


def _start() -> None:
    global _recorder
    if _recorder is not None:
        return
    try:
        from .recorder import Recorder

        recorder = Recorder(on_event=_on_event)
        recorder.__enter__()  # for the rest of the process
        _recorder = recorder
        atexit.register(_finish)  # again: now it runs before Dynamo's own exit handlers
        if "multiprocessing.util" in sys.modules:  # a worker that started compiling on its own
            _register_finalizer(None)
    except Exception as exc:  # noqa: BLE001 - never break the user's program
        _write(
            {
                "warning": f"the recorder did not start in pid {os.getpid()} "
                f"({sys.executable}): {type(exc).__name__}: {exc}"
            }
        )


def _finish() -> None:
    """Qualified names and cache entries per compiled code object, while the process lives.

    A forked child counts only the entries it created itself (their compile ids are among its
    events): the ones it inherited are its parent's, reported there.
    """
    global _finished
    if _finished or not _torch_ready:
        return
    _finished = True
    if _recorder is None:  # it never used Dynamo: say only that it lived and left
        _write({"final": {"frames": [], "role": _role(), "recorder": False}})
        return
    try:
        from ..torch_compat import cache

        _recorder.poll()
        forked = _forked_from is not None
        frames = []
        for code in cache.dynamo_codes() or ():
            entries = cache.cache_entries(code)
            count = None if entries is None else len(entries)
            if forked and entries is not None:
                ids = [cache.entry_compile_id(e) for e in entries]
                count = None if None in ids else sum(i in _own_ids for i in ids)
                if count == 0:
                    continue
            frames.append(
                {
                    "function": code.co_name,
                    "filename": code.co_filename,
                    "line": code.co_firstlineno,
                    "qualname": getattr(code, "co_qualname", code.co_name),
                    "cache_entries": count,
                }
            )
        _write(
            {
                "final": {
                    "frames": frames,
                    "role": _role(),
                    "recorder": True,
                    "collective_knobs": _knobs(),
                }
            }
        )
    except Exception as exc:  # noqa: BLE001
        _write({"warning": f"could not read cache entries in pid {os.getpid()}: {exc}"})


class _ForkToken:
    """multiprocessing's after-fork registry holds its objects weakly: this one lives forever."""


_TOKEN = _ForkToken()


def _after_fork_in_child() -> None:
    global _lock, _pid, _forked_from, _announced, _finished, _own_ids, _worker_role, _rank
    _lock = threading.Lock()  # another thread of the parent may have held it at the fork
    _worker_role = None  # a worker's child is not that worker
    _rank = None  # nor that rank
    _forked_from, _pid = _pid, os.getpid()
    _announced = _finished = False
    _own_ids = set()
    # Nothing is written here: a fork that goes on to exec another program (subprocess with a
    # preexec_fn) must leave no trace. The child shows up with its first event or at its exit.
    mp_util = sys.modules.get("multiprocessing.util")
    if _torch_ready and mp_util is not None:
        # A multiprocessing child (a DataLoader worker) leaves through os._exit: atexit never
        # runs. Its bootstrap clears the finalizers it inherited and then runs the after-fork
        # callbacks, so the exit record is registered from one of those.
        mp_util.register_after_fork(_TOKEN, _register_finalizer)


def _register_finalizer(_token: Any) -> None:
    """_finish at a multiprocessing child's exit (it skips atexit); elsewhere at most a second
    call, which does nothing."""
    import multiprocessing.util as mp_util

    mp_util.Finalize(None, _finish, exitpriority=0)


def _torch_imported() -> None:
    global _torch_ready
    _torch_ready = True
    _announce()
    atexit.register(_finish)  # the exit record of a process that never uses Dynamo
    if _dynamo_ready:
        _start()


def _dynamo_imported() -> None:
    global _dynamo_ready
    _dynamo_ready = True
    if _torch_ready:  # else torch imported Dynamo while importing itself: start when it is done
        _start()


class _ImportHook(importlib.abc.MetaPathFinder):
    """Calls back right after `import torch` and `import torch._dynamo` complete, wherever (and
    however: `torch.compile`, `torch._dynamo` attribute access) the program first imports them."""

    def __init__(self) -> None:
        self._callbacks = {"torch": _torch_imported, "torch._dynamo": _dynamo_imported}
        self._busy = False

    def find_spec(self, name: str, path: Any, target: Any = None) -> Any:
        callback = self._callbacks.get(name)
        if callback is None or self._busy:
            return None
        self._busy = True
        try:
            spec = None
            for finder in sys.meta_path:  # the spec the import system would have found
                if finder is self or not hasattr(finder, "find_spec"):
                    continue
                spec = finder.find_spec(name, path, target)
                if spec is not None:
                    break
        finally:
            self._busy = False
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        del self._callbacks[name]
        if not self._callbacks and self in sys.meta_path:
            sys.meta_path.remove(self)
        exec_module = spec.loader.exec_module

        def exec_then_call(module: Any) -> None:
            exec_module(module)
            # The import system binds a submodule to its package only after this returns; the
            # recorder reads torch._dynamo as an attribute, so bind it now, as import would.
            parent, _, child = name.rpartition(".")
            if parent in sys.modules:
                setattr(sys.modules[parent], child, sys.modules.get(name, module))
            callback()

        spec.loader.exec_module = exec_then_call  # type: ignore[method-assign]
        return spec


def install() -> None:
    os.register_at_fork(after_in_child=_after_fork_in_child)
    hook = _ImportHook()
    if "torch" in sys.modules:
        del hook._callbacks["torch"]
        _torch_imported()
    if "torch._dynamo" in sys.modules:
        del hook._callbacks["torch._dynamo"]
        _dynamo_imported()
    if hook._callbacks:
        sys.meta_path.insert(0, hook)
