"""Warm worker starts, the parent's side: one warm server per command (warm_server.py), started
with the first worker, and every worker forked from it in milliseconds instead of a fresh
interpreter importing torch for seconds.

A forked worker is what a fresh ``python -m MODULE`` would be (warm_server.py says how), so its
figures are a fresh worker's; the exhaustive tier compares the two. Where forking could differ
from a fresh start, the worker starts fresh and its report's environment says why
(``worker_start``): no ``fork`` or no Unix seqpacket sockets on this platform, the server failed
to start, ``RECOMPILE_PROBE_WARM=0``, or the worker's environment differs from the server's in a
variable that torch, its libraries or Python read at start (``IMPORT_TIME_PREFIXES``).
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import select
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import IO

#: ``0`` keeps every worker a fresh interpreter.
SWITCH = "RECOMPILE_PROBE_WARM"
#: Prefixes of the environment variables read while torch, its libraries or Python start (torch's
#: settings, thread pools, CUDA, the dynamic loader, locale): a worker whose value of one of
#: them differs from the server's starts fresh. Any other variable is set in the forked worker
#: before its module runs, so what it reads at run time is what a fresh worker would read.
IMPORT_TIME_PREFIXES = (
    "TORCH",
    "PYTORCH",
    "CUDA",
    "NVIDIA",
    "NCCL",
    "GLOO",
    "TRITON",
    "OMP_",
    "GOMP_",
    "KMP_",
    "MKL",
    "OPENBLAS",
    "PYTHON",
    "LD_",
    "LC_",
    "LANG",
    "SYMPY",
    "NUMPY",
    # read by torch's config modules as they load
    "UNSAFE_",
    "PT2_",
    "FAKE_",
    "CXX",
)
#: How long the server may take to import torch and the worker's modules.
READY_TIMEOUT_S = 120.0

FORKED_WORDS = "forked from a warm server"


class Forked:
    """A forked worker, with the part of ``subprocess.Popen`` the executors use: ``pid`` (it
    leads its own process group), ``stdin`` (its job pipe), ``poll``, ``wait``, ``returncode``."""

    def __init__(self, server: Server, pid: int, stdin: IO[bytes]) -> None:
        self.server, self.pid, self.stdin = server, pid, stdin
        self.returncode: int | None = None

    def poll(self) -> int | None:
        if self.returncode is None:
            self.returncode = self.server.exit_code(self.pid, 0.0)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        if self.returncode is None:
            self.returncode = self.server.exit_code(self.pid, timeout)
        if self.returncode is None:
            raise subprocess.TimeoutExpired(f"worker {self.pid}", timeout or 0.0)
        return self.returncode

    def kill(self) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(self.pid, 9)


class Server:
    """The warm server of this process: its socket, the environment it was started with, and
    the exit codes its children have reported."""

    def __init__(self, env: dict[str, str] | None = None) -> None:
        """``env``: the environment the server imports torch in (this process's by default)."""
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.env = dict(os.environ if env is None else env)
        env = {**self.env, "PYTHONUNBUFFERED": "1"}
        try:
            self.proc = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "recompile_probe.execution.warm_server",
                    str(theirs.fileno()),
                ],
                pass_fds=(theirs.fileno(),),
                stdin=subprocess.DEVNULL,
                env=env,
                start_new_session=True,  # Ctrl-C at the terminal reaches only the parent
            )
        except BaseException:
            ours.close()
            raise
        finally:
            theirs.close()
        self.sock = ours
        self.exits: dict[int, int] = {}
        self.lock = threading.Lock()
        #: the server's own start (torch and the worker's modules imported), once it is ready
        self.import_s: float | None = None
        #: whether the server sent a scout to find what a first compile imports (False: the
        #: list kept from an earlier start served), once it is ready
        self.scouted: bool | None = None

    def ready(self) -> None:
        """Wait until the server has imported what workers need (once)."""
        if self.import_s is not None:
            return
        message = self._receive(READY_TIMEOUT_S, until="ready")
        if message is None:
            raise OSError(f"the warm server was not ready within {READY_TIMEOUT_S:g} s")
        self.import_s = message["ready"]
        self.scouted = message.get("scouted")

    def _receive(self, timeout: float | None, until: str) -> dict | None:
        """Messages until one with key ``until`` (returned); exit reports on the way are kept."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            readable, _, _ = select.select([self.sock], [], [], left)
            if not readable:
                return None
            data = self.sock.recv(1 << 16)
            if not data:
                raise OSError("the warm server exited")
            message = json.loads(data)
            if "exit" in message:
                self.exits[message["exit"]] = message["code"]
                if until == "exit":
                    return message
            elif until in message:
                return message

    def start(
        self,
        module: str,
        args: list[str],
        env: dict[str, str],
        err: Path,
        out: Path | None = None,
        cwd: str | None = None,
    ) -> Forked:
        """Fork ``python -m module args``: stderr to ``err`` (stdout too, unless ``out``), in
        ``cwd`` (this process's by default), with ``env``; its stdin is the returned pipe."""
        with self.lock:
            self.ready()
        read, write = os.pipe()
        try:
            with contextlib.ExitStack() as files:
                err_file = files.enter_context(open(err, "wb"))
                fds = [read, err_file.fileno()]
                if out is not None:
                    fds.insert(1, files.enter_context(open(out, "wb")).fileno())
                request = {"module": module, "args": args, "cwd": cwd or os.getcwd(), "env": env}
                with self.lock:
                    socket.send_fds(self.sock, [json.dumps(request).encode()], fds)
                    reply = self._receive(READY_TIMEOUT_S, until="pid")
            if reply is None or reply.get("pid") is None:
                why = "no answer" if reply is None else reply.get("error")
                raise OSError(f"the warm server did not fork ({why})")
        except BaseException:
            os.close(write)
            raise
        finally:
            os.close(read)
        self.exits.pop(reply["pid"], None)  # a pid the system reused: that exit was another's
        return Forked(self, reply["pid"], os.fdopen(write, "wb"))

    def exit_code(self, pid: int, timeout: float | None) -> int | None:
        """``pid``'s exit code once the server has reported it (waiting up to ``timeout``;
        0 reads what has arrived without waiting)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self.lock:
            while pid not in self.exits:
                left = None if deadline is None else max(0.0, deadline - time.monotonic())
                try:
                    if self._receive(left, until="exit") is None:
                        return None
                except OSError:  # the server is gone, and its children with it
                    return self.exits.setdefault(pid, -15)
            return self.exits[pid]

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.sock.close()  # the server stops its children's groups and exits
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(5)
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


_server: Server | None = None
_failed: str | None = None


def import_time(env: dict[str, str]) -> dict[str, str]:
    """The variables of ``env`` that torch, its libraries or Python may read when imported (the
    server's own PYTHONUNBUFFERED aside): a fork is a fresh start only where these are equal."""
    return {
        k: v
        for k, v in env.items()
        if k.upper().startswith(IMPORT_TIME_PREFIXES) and k != "PYTHONUNBUFFERED"
    }


def why_not(env: dict[str, str]) -> str | None:
    """Why a worker with environment ``env`` cannot be forked from this process's warm server
    (None: it can)."""
    if os.environ.get(SWITCH) == "0":
        return f"{SWITCH}=0"
    if not hasattr(os, "fork") or not hasattr(socket, "send_fds"):
        return "this platform has no fork"
    if _failed is not None:
        return _failed
    base = import_time(_server.env if _server is not None else dict(os.environ))
    wanted = import_time(env)
    differ = sorted(k for k in set(base) | set(wanted) if base.get(k) != wanted.get(k))
    if differ:
        return (
            "its environment differs from the warm server's in "
            + ", ".join(differ[:3])
            + (" ..." if len(differ) > 3 else "")
            + ", which torch may read when it is imported"
        )
    return None


def server() -> Server | None:
    """This process's warm server, started on first use (it gets ready in the background while
    the caller goes on; the first fork waits for it); None where it could not start."""
    global _server, _failed
    if _server is None and _failed is None:
        try:
            _server = Server()
        except OSError as exc:
            _failed = f"the warm server could not start ({exc})"
            return None
        atexit.register(shutdown)
    return _server


def give_up(reason: str) -> None:
    """The server failed mid-command: every later worker of this process starts fresh, saying
    ``reason``."""
    global _failed
    shutdown()
    _failed = reason


def shutdown() -> None:
    global _server
    if _server is not None:
        _server.close()
        _server = None
