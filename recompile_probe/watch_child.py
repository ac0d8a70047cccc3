"""Inside the watched program: start the Recorder the moment torch finishes importing.

Loaded by the sitecustomize that `watch` puts first on PYTHONPATH. Every compile event is written
to $RECOMPILE_PROBE_WATCH_OUT as one JSON line when it happens, so a crash, an os._exit or a kill
loses nothing already compiled; at a normal exit a last line adds qualified names and cache-entry
counts. Nothing runs per call of compiled code.
"""

from __future__ import annotations

import atexit
import dataclasses
import importlib.abc
import importlib.util
import json
import os
import sys
import threading
from typing import Any

ENV_OUT = "RECOMPILE_PROBE_WATCH_OUT"
_lock = threading.Lock()
_recorder: Any = None


def _write(record: dict) -> None:
    path = os.environ.get(ENV_OUT)
    if not path:
        return
    line = json.dumps(record, default=str) + "\n"
    with _lock, open(path, "a", encoding="utf-8") as handle:
        handle.write(line)


def _start() -> None:
    global _recorder
    if _recorder is not None:
        return
    try:
        from .recorder import Recorder

        _recorder = Recorder(on_event=lambda e: _write({"event": dataclasses.asdict(e)}))
        _recorder.__enter__()  # for the rest of the process
        atexit.register(_finish)
    except Exception as exc:  # noqa: BLE001 - never break the user's program
        _write({"warning": f"recompile-probe could not start its recorder: "
                           f"{type(exc).__name__}: {exc}"})


def _finish() -> None:
    """Qualified names and cache entries per compiled code object, while the process lives."""
    try:
        from . import compat

        _recorder.poll()
        frames = []
        for code in compat.dynamo_codes() or ():
            entries = compat.cache_entries(code)
            frames.append({"function": code.co_name, "filename": code.co_filename,
                           "line": code.co_firstlineno,
                           "qualname": getattr(code, "co_qualname", code.co_name),
                           "cache_entries": None if entries is None else len(entries)})
        _write({"final": {"frames": frames}})
    except Exception as exc:  # noqa: BLE001
        _write({"warning": f"recompile-probe could not read cache entries: {exc}"})


class _TorchImportHook(importlib.abc.MetaPathFinder):
    """Runs _start right after `import torch` completes, wherever the program first imports it."""

    def find_spec(self, name: str, path: Any, target: Any = None) -> Any:
        if name != "torch":
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec("torch")
        if spec is None or spec.loader is None:
            return spec
        exec_module = spec.loader.exec_module

        def exec_then_record(module: Any) -> None:
            exec_module(module)
            _start()

        spec.loader.exec_module = exec_then_record  # type: ignore[method-assign]
        return spec


def install() -> None:
    if "torch" in sys.modules:
        _start()
    else:
        sys.meta_path.insert(0, _TorchImportHook())
