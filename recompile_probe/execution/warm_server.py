"""The warm server (``python -m recompile_probe.execution.warm_server FD``): one process per
command that imports torch and the worker's modules once, then forks every worker from that
state on request (warm.py is the parent's side).

It runs no tensor op and compiles nothing, so a forked worker starts from the Dynamo state a
fresh interpreter has: no cache entry, no counter moved, no thread pool started. The child
then becomes what ``python -m MODULE ARGS`` would have been: its own session and process group,
the job pipe on stdin and its stderr file on stdout and stderr (or a stdout of its own), the
parent's working directory and environment as of the request, ``sys.argv`` and ``sys.path[0]``
as ``-m`` sets them, a fresh seed for ``random``; then the module runs as ``__main__``.

Protocol on the inherited SOCK_SEQPACKET socket, one JSON message per packet: in, ``{"module",
"args", "cwd", "env"}`` with two descriptors (the job pipe's read end, the stderr file, which
takes stdout too) or three (stdin, stdout, stderr); out, ``{"ready": import_s, "scouted":
bool}`` once (``scouted``: a scout child found what a first compile imports, rather than the
list kept from an earlier start, warm_modules.py), ``{"pid": n}`` per request, ``{"exit": pid,
"code": rc}`` when a child ends (``rc`` as ``subprocess`` gives it: ``-signal`` when killed).
When the parent's end closes, every child's process group is sent SIGTERM and the server exits.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import socket
import sys
import time

#: What a worker imports before its first job, loaded once here.
PRELOAD = (
    "torch",
    "recompile_probe.execution.worker",
    "recompile_probe.execution.rank_worker",
    "recompile_probe.execution.inline",
    "recompile_probe.records.environment",
    "recompile_probe.torch_compat.settings",
)
#: The backends whose first compile a scout child makes, so that the server imports what that
#: compile imports (a first compile imports some 450 modules: 0.3 s of each worker's warm-up).
SCOUTED_BACKENDS = ("eager", "aot_eager")
#: How often children are reaped when neither a message nor a child's exit wakes the server.
REAP_S = 0.5


def send(sock: socket.socket, record: dict) -> None:
    sock.send(json.dumps(record).encode("utf-8"))


def main(fd: int) -> int:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle
    sock = socket.socket(fileno=fd)
    started = time.perf_counter()
    import importlib

    importlib.import_module("torch")
    from . import warm_modules
    from .warm import import_time

    remembered = warm_modules.path(SCOUTED_BACKENDS, import_time(dict(os.environ)))
    known = warm_modules.read(remembered)
    # side by side with what follows, on a second core; not needed where a list is kept
    scout = None if known is not None else _scout()
    for name in PRELOAD:
        importlib.import_module(name)
    from ..torch_compat.settings import changed_config

    changed_config()  # reads configs only; what it imports, every worker imports first
    if scout is not None:
        known = _found(*scout)
        warm_modules.write(remembered, known)
    for name in known or ():
        try:
            importlib.import_module(name)
        except Exception:  # noqa: BLE001 - a module made at run time, not importable by name
            pass
    # What is alive now lives as long as every worker: moved out of the collector's reach, a
    # child's collections neither walk it (half of a first run's time) nor copy its pages.
    import gc

    gc.collect()
    gc.freeze()
    # a child's exit wakes the loop at once: its parent learns of it without a poll's delay
    wake_read, wake_write = os.pipe()
    os.set_blocking(wake_read, False)
    os.set_blocking(wake_write, False)
    signal.set_wakeup_fd(wake_write)
    signal.signal(signal.SIGCHLD, lambda signum, frame: None)
    send(sock, {"ready": round(time.perf_counter() - started, 4), "scouted": scout is not None})
    children: set[int] = set()
    groups: set[int] = set()
    while True:
        readable, _, _ = select.select([sock.fileno(), wake_read], [], [], REAP_S)
        if wake_read in readable:
            with contextlib.suppress(BlockingIOError):
                os.read(wake_read, 4096)
        _reap(sock, children)
        if sock.fileno() not in readable:
            continue
        try:
            data, fds, _, _ = socket.recv_fds(sock, 1 << 20, 3)
        except OSError:
            data, fds = b"", []
        if not data:  # the parent is gone or done: nothing of ours outlives it
            _stop_all(groups)
            return 0
        try:
            request = json.loads(data)
            pid = os.fork()
        except (OSError, ValueError) as exc:  # the parent starts that worker fresh
            for descriptor in fds:
                os.close(descriptor)
            send(sock, {"pid": None, "error": f"{type(exc).__name__}: {exc}"})
            continue
        if pid == 0:
            signal.set_wakeup_fd(-1)
            os.close(wake_read)
            os.close(wake_write)
            _child(sock, request, fds)  # never returns
        for descriptor in fds:
            os.close(descriptor)
        children.add(pid)
        groups.add(pid)  # each child leads its own group, which outlives it if it orphans some
        send(sock, {"pid": pid})


def _scout() -> tuple[int, int]:
    """Fork a child that imports what a worker imports before its first job and makes the
    first compiles a worker's warm-up makes, then reports the modules it imported, in order
    (the server itself never runs a tensor op, so that forking it stays safe): (its pid, the
    pipe to read)."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        try:
            before = set(sys.modules)
            import importlib

            for name in PRELOAD:
                importlib.import_module(name)
            from ..probe.run import warm_up
            from ..torch_compat.settings import changed_config

            changed_config()
            for backend in SCOUTED_BACKENDS:
                warm_up(backend)
            _dynamic_compile()
            names = [name for name in sys.modules if name not in before]
            with os.fdopen(write, "w", encoding="utf-8") as out:
                json.dump(names, out)
        finally:
            os._exit(0)
    os.close(write)
    return pid, read


def _found(pid: int, read: int) -> list[str]:
    with os.fdopen(read, encoding="utf-8") as found:
        text = found.read()
    os.waitpid(pid, 0)
    try:
        return list(json.loads(text))
    except ValueError:  # the scout failed: each worker imports them itself, as a fresh one does
        return []


def _dynamic_compile() -> None:
    """A compile over a marked dim, as most strategies make: it imports the symbolic-shape side
    (sympy's solvers, value ranges) that a static warm-up leaves out."""
    import torch

    from ..probe.run import reset_dynamo

    def step(x: torch.Tensor) -> torch.Tensor:
        return (x * 2).sum(-1)

    fn = torch.compile(step, backend="eager")
    for size in (2, 3):
        x = torch.ones(size, 4)
        torch._dynamo.mark_dynamic(x, 0)
        fn(x)
    fn(torch.ones(5, 4))
    reset_dynamo()


def _stop_all(groups: set[int], grace: float = 2.0) -> None:
    """SIGTERM every worker's process group, SIGKILL what is left after ``grace`` seconds."""

    def signal_all(signum: int) -> bool:
        alive = False
        for group in groups:
            try:
                os.killpg(group, signum)
                alive = True
            except (ProcessLookupError, PermissionError):
                pass
        return alive

    if not signal_all(signal.SIGTERM):
        return
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        with contextlib.suppress(ChildProcessError):
            while os.waitpid(-1, os.WNOHANG)[0]:
                pass
        if not signal_all(0):
            return
        time.sleep(0.05)
    signal_all(signal.SIGKILL)


def _reap(sock: socket.socket, children: set[int]) -> None:
    while children:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        children.discard(pid)
        code = -os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)
        try:
            send(sock, {"exit": pid, "code": code})
        except OSError:
            pass


def _child(sock: socket.socket, request: dict, fds: list[int]) -> None:
    """Become ``python -m MODULE ARGS`` in the request's directory and environment."""
    code = 1
    try:
        sock.close()
        os.setsid()
        for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGCHLD):
            signal.signal(signum, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        stdin, *outputs = fds  # stdin, then stderr alone (stdout to it too) or stdout and stderr
        out, err = outputs if len(outputs) == 2 else (outputs[0], outputs[0])
        os.dup2(stdin, 0)
        os.dup2(out, 1)
        os.dup2(err, 2)
        for descriptor in {stdin, out, err}:
            os.close(descriptor)
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        import random
        import runpy

        random.seed()
        if "numpy" in sys.modules:  # seeded once at import in a fresh interpreter: seed it here
            sys.modules["numpy"].random.seed()
        sys.argv = [request["module"], *request["args"]]
        sys.path[0] = request["cwd"]
        try:
            runpy.run_module(request["module"], run_name="__main__", alter_sys=True)
            code = 0
        except SystemExit as exc:
            if isinstance(exc.code, int) or exc.code is None:
                code = exc.code or 0
            else:  # sys.exit("message"): the interpreter prints it and exits 1
                print(exc.code, file=sys.stderr)
                code = 1
        except BaseException:  # noqa: BLE001 - a fresh interpreter prints it and exits 1
            import traceback

            traceback.print_exc()
            code = 1
        import atexit
        import threading

        shutdown = getattr(threading, "_shutdown", None)
        if shutdown is not None:  # as the interpreter does at exit: non-daemon threads joined
            shutdown()
        atexit._run_exitfuncs()
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:  # noqa: BLE001
                pass
    finally:
        os._exit(code)


if __name__ == "__main__":
    sys.exit(main(int(sys.argv[1])))
