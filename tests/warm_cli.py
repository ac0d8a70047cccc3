"""`python -m recompile_probe ARGS` for the tests, forked from a warm server instead of a fresh
interpreter that imports torch for seconds: the tool's own warm start (execution/warm.py), whose
forked children are what a fresh ``python -m`` would be (tests/execution/test_warm.py holds them
to a fresh interpreter's figures).

conftest.py puts ``run`` in place of ``subprocess.run`` for the test session. It forks only the
exact form ``[sys.executable, "-m", "recompile_probe", ...]`` with its output captured; anything
else, and every call under ``RECOMPILE_PROBE_TEST_WARM=0``, goes to the real ``subprocess.run``.
One server per set of import-time variables (``warm.IMPORT_TIME_PREFIXES``: a test's
``OMP_NUM_THREADS`` or ``PYTHONPATH`` is read when torch is imported), started on first use; a
call that sets another of them (``TORCH_LOGS``, ``TORCH_TRACE``) runs fresh.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from recompile_probe.execution import warm

SWITCH = "RECOMPILE_PROBE_TEST_WARM"
#: the real subprocess.run, whatever conftest puts in its place
REAL_RUN = subprocess.run
_servers: dict[tuple, warm.Server] = {}
#: how the last call ran: "forked" or "fresh" (for the tests of this module)
last = ""


def _key(env: dict[str, str]) -> tuple:
    return tuple(sorted(warm.import_time(env).items()))


#: the import-time variables a test may set and still be forked; any other that differs from
#: this process's (a TORCH_TRACE folder per test) would start a server for one call: fresh instead
SERVED = {"OMP_NUM_THREADS", "PYTHONPATH"}
#: servers per test process at most (each holds an imported torch)
MOST = 3


def _server(env: dict[str, str]) -> warm.Server | None:
    key = _key(env)
    differ = {k for k, v in set(key) ^ set(_key(dict(os.environ)))}
    if differ - SERVED:
        return None
    server = _servers.get(key)
    if server is None and len(_servers) >= MOST:
        return None
    if server is None:
        try:
            server = _servers[key] = warm.Server(env)
        except OSError:
            return None
    return server


def _forkable(args: Any, kwargs: dict) -> bool:
    allowed = {"capture_output", "text", "env", "timeout", "cwd", "input", "check", "encoding"}
    return (
        os.environ.get(SWITCH) != "0"
        and hasattr(os, "fork")
        and isinstance(args, (list, tuple))
        and len(args) >= 3
        and list(args[:3]) == [sys.executable, "-m", "recompile_probe"]
        and kwargs.get("capture_output") is True
        and set(kwargs) <= allowed
    )


def _fresh(args: Any, *pos: Any, **kwargs: Any) -> subprocess.CompletedProcess:
    global last
    last = "fresh"
    return REAL_RUN(args, *pos, **kwargs)


def run(args: Any, *pos: Any, **kwargs: Any) -> subprocess.CompletedProcess:
    global last
    if pos or not _forkable(args, kwargs):
        return _fresh(args, *pos, **kwargs)
    env = {k: str(v) for k, v in (kwargs.get("env") or os.environ).items()}
    server = _server(env)
    if server is None:
        return _fresh(args, **kwargs)
    text = bool(kwargs.get("text") or kwargs.get("encoding"))
    with tempfile.TemporaryDirectory(prefix="warm-cli-") as folder:
        out, err = Path(folder, "out"), Path(folder, "err")
        try:
            child = server.start(
                "recompile_probe",
                [str(a) for a in args[3:]],
                env,
                err,
                out=out,
                cwd=str(kwargs["cwd"]) if kwargs.get("cwd") else None,
            )
        except OSError:
            return _fresh(args, **kwargs)
        given = kwargs.get("input")
        with contextlib.suppress(BrokenPipeError):
            if given:
                child.stdin.write(given.encode() if isinstance(given, str) else given)
            child.stdin.close()
        try:
            code = child.wait(kwargs.get("timeout"))
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(child.pid, signal.SIGKILL)
            child.wait(30)
            raise subprocess.TimeoutExpired(list(args), kwargs.get("timeout") or 0.0) from None
        stdout, stderr = out.read_bytes(), err.read_bytes()
    last = "forked"
    result = subprocess.CompletedProcess(
        list(args),
        code,
        stdout.decode(kwargs.get("encoding") or "utf-8", "replace") if text else stdout,
        stderr.decode(kwargs.get("encoding") or "utf-8", "replace") if text else stderr,
    )
    if kwargs.get("check"):
        result.check_returncode()
    return result


def close() -> None:
    for server in _servers.values():
        server.close()
    _servers.clear()
