"""Inline and process isolation agree; a fresh process's hand count agrees with the tool;
hung runs, Ctrl-C and --debug in both modes, with real torch and real subprocesses."""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from helpers import hand_count
from recompile_probe.errors import EagerFailure
from recompile_probe.execution import process
from recompile_probe.execution.session import run_scenario
from recompile_probe.scenario.load import load
from recompile_probe.scenario.overrides import with_overrides

pytestmark = pytest.mark.slow


def _counts(report):
    return [
        (
            r.sequence_name,
            r.strategy,
            r.status,
            r.graphs,
            r.compiles,
            r.recompiles,
            r.cache_entries,
            r.guard_count,
            r.shape_env_guard_count,
            r.leaf_guard_count,
            r.outputs_match,
            [c.event for c in r.calls],
        )
        for r in report.runs
    ]


@pytest.mark.exhaustive
def test_inline_and_process_produce_identical_counts(write_scenario):
    path = write_scenario("""
        target: user_targets.py:with_graph_break
        inputs: [{shape: [B, 8]}]
        sequences: {rl: [1, 2, 8], chat: [4, 1, 16]}
        strategies: [default, mark_unbacked, as_is]
    """)
    scenario = load(path)
    inline = run_scenario(scenario)
    process = run_scenario(scenario, isolate="process", timeout=120)
    assert _counts(inline) == _counts(process)
    assert {r.isolation for r in process.runs} == {"process"}


#: Compiled calls that take 50 ms each however fast the machine: a sleep in a function Dynamo
#: does not trace, reached only in compiled code (``is_compiling()`` is folded to True while
#: Dynamo traces), so the eager reference calls do not wait.
SLOW_CALLS = """
import time
import torch


@torch._dynamo.disable
def _wait():
    time.sleep(0.05)


def target(x):
    if torch.compiler.is_compiling():
        _wait()
    return x * 2
"""


def test_timeout_becomes_status_error(write_scenario, tmp_path):
    # 40 compiled calls of 50 ms at least: the half-second limit ends inside the run
    (tmp_path / "slow_calls.py").write_text(SLOW_CALLS)
    path = write_scenario(f"""
        target: slow_calls.py:target
        inputs: [{{shape: [B, 4]}}]
        sequences: {{rl: {list(range(1, 41))}}}
        strategies: [static]
        repeats: 0
    """)
    report = run_scenario(load(path), isolate="process", timeout=0.5)
    (run,) = report.runs
    assert run.status == "error" and run.error.type == "Timeout"


def test_fresh_process_hand_count_agrees(write_scenario, tmp_path):
    """What an outsider would do: count by hand in a fresh process, compare with our JSON."""
    path = write_scenario(
        """
        target: user_targets.py:project
        factory: user_targets.py:make_pair
        batch_dims: {0: [0]}
        sequences: {s: [1, 2, 8, 3]}
        strategies: [default, dynamic_true, mark_unbacked]
    """.replace("make_pair", "make_project_inputs")
    )
    (tmp_path / "user_targets.py").write_text(
        (tmp_path / "user_targets.py").read_text() + "\n\ndef make_project_inputs(b):\n"
        "    return (torch.randn(b, 16),)\n"
    )
    out = tmp_path / "r.json"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "recompile_probe",
            "run",
            str(path),
            "-q",
            "-f",
            "json",
            "-o",
            str(out),
        ],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    tool = {
        r["strategy"]: (r["graphs"], r["status"], r["outputs_match"])
        for r in json.loads(out.read_text())["runs"]
    }
    script = textwrap.dedent(f"""
        import json, sys, torch
        sys.path.insert(0, {str(tmp_path)!r})
        import user_targets as u
        from torch._dynamo.testing import CompileCounterWithBackend
        result = {{}}
        for name, dynamic, mark in [("default", None, False), ("dynamic_true", True, False),
                                    ("mark_unbacked", None, True)]:
            torch._dynamo.reset()
            cnt = CompileCounterWithBackend("eager")
            f = torch.compile(u.project, backend=cnt, dynamic=dynamic)
            ok = True
            for b in [1, 2, 8, 3]:
                (x,) = u.make_project_inputs(b)
                if mark:
                    torch._dynamo.decorators.mark_unbacked(x, 0)
                ok &= torch.allclose(f(x), u.project(x))
            result[name] = [cnt.frame_count, "ok", bool(ok)]
        print(json.dumps(result))
    """)
    hand = json.loads(
        subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
        .stdout.strip()
        .splitlines()[-1]
    )
    assert {k: tuple(v) for k, v in hand.items()} == tool


def test_worker_crash_becomes_status_error_and_others_survive(write_scenario):
    path = write_scenario("""
        target: user_targets.py:crashes_when_compiled
        inputs: [{shape: [B, 4]}]
        sequences: {s: [1, 2]}
        strategies: [default, static]
    """)
    report = run_scenario(load(path), isolate="process", timeout=120)
    assert [r.status for r in report.runs] == ["error", "error"]
    assert all(r.error.type == "WorkerCrashed" and "7" in r.error.message for r in report.runs)


# --- the next strategy's worker, prepared ahead ---------------------------------------------------

#: A target whose import takes a second (a model's load) and whose compiled calls log themselves:
#: ``is_compiling()`` is folded to True while Dynamo traces, so the log call (a graph break) runs
#: on every call of compiled code and on none of the eager reference calls.
AHEAD = """
import os, time
import torch

LOG = {log!r}


def _log(what, then_sleep=0.0):
    with open(LOG, "a") as f:
        f.write(f"{{what}} {{os.getpid()}} {{time.monotonic()}}\\n")
    time.sleep(then_sleep)  # inside the graph break, where Dynamo does not trace


_log("import")
time.sleep(1.0)


def target(x):
    if torch.compiler.is_compiling():
        _log("compiled", 0.05)
    return x * 2


def fails(x):
    raise ValueError("bad target")
"""

#: A target that one process at a time can hold (a lock file here; a GPU in exclusive mode, a
#: port, the memory for one model elsewhere): the worker started ahead cannot load it.
EXCLUSIVE = """
import fcntl
import torch

_held = open({lock!r}, "w")
fcntl.flock(_held, fcntl.LOCK_EX | fcntl.LOCK_NB)


def target(x):
    return x * 2
"""

#: the worker started ahead needs a second core; with one it is not started
two_cores = pytest.mark.skipif(not process.two_cores(), reason="needs two cores")


def _ahead_scenario(write_scenario, tmp_path: Path, target: str) -> tuple[Path, Path]:
    log = tmp_path / "calls.log"
    (tmp_path / "ahead.py").write_text(AHEAD.format(log=str(log)))
    path = write_scenario(f"""
        target: ahead.py:{target}
        inputs: [{{shape: [B, 4]}}]
        sequences: {{first: [1, 2], then: [2, 3, 4, 5, 6, 7]}}
        strategies: [default, static, dynamic_true]
        repeats: 0
    """)
    return path, log


def _log_lines(log: Path) -> list[tuple[str, int, float]]:
    rows = (line.split() for line in log.read_text().splitlines())
    return [(what, int(pid), float(t)) for what, pid, t in rows]


@two_cores
def test_the_next_strategys_worker_prepares_while_one_runs_and_runs_never_overlap(
    write_scenario, tmp_path
):
    path, log = _ahead_scenario(write_scenario, tmp_path, "target")
    scenario = load(path)
    process = run_scenario(scenario, isolate="process", timeout=120)
    lines = _log_lines(log)
    compiled: dict[int, list[float]] = {}
    for what, pid, t in lines:
        if what == "compiled":
            compiled.setdefault(pid, []).append(t)
    # one worker per strategy, in the order they ran
    workers = sorted(compiled, key=lambda pid: compiled[pid][0])
    assert len(workers) == 3, lines
    imported = {pid: t for what, pid, t in lines if what == "import"}
    for current, following in zip(workers, workers[1:]):
        # the next worker had begun loading the target before the current one's last call (it
        # starts once the current one's first run is done)...
        assert imported[following] < compiled[current][-1], lines
        # ...and made its first call only after it
        assert compiled[following][0] > compiled[current][-1], lines
    log.unlink()
    assert _counts(process) == _counts(run_scenario(scenario))


@two_cores
def test_a_target_that_fails_reports_its_error_and_leaves_no_worker_started_ahead(
    write_scenario, tmp_path
):
    path, log = _ahead_scenario(write_scenario, tmp_path, "fails")
    with pytest.raises(EagerFailure, match="bad target"):
        run_scenario(load(path), isolate="process", timeout=120)
    started = {pid for what, pid, _ in _log_lines(log) if what == "import"}
    # the first strategy's worker only: no run of it finished, so none was started ahead
    assert len(started) == 1, started
    assert not any(_running(pid) for pid in started)


@two_cores
def test_a_target_one_process_at_a_time_can_hold_runs_every_strategy(write_scenario, tmp_path):
    (tmp_path / "exclusive.py").write_text(EXCLUSIVE.format(lock=str(tmp_path / "held.lock")))
    path = write_scenario("""
        target: exclusive.py:target
        inputs: [{shape: [B, 4]}]
        sequences: {a: [1, 2], b: [2, 3]}
        strategies: [default, static, dynamic_true]
    """)
    report = run_scenario(load(path), isolate="process", timeout=120)
    assert [(r.strategy, r.sequence_name, r.status) for r in report.runs] == [
        (strategy, sequence, "ok")
        for sequence in ("a", "b")
        for strategy in ("default", "static", "dynamic_true")
    ]


#: As EXCLUSIVE, but a worker that finds the target held waits for the holder to exit and for
#: its own jobs to be handed to it (the test's marker file ``sent-PID``), then fails; the
#: holder's runs of size 3 wait until another worker has found the target held.
EXCLUSIVE_LATE = """
import fcntl, os, time
import torch

LOG = {log!r}


def _log(what):
    with open(LOG, "a") as f:
        f.write(f"{{what}} {{os.getpid()}} {{time.monotonic()}}\\n")


def _seen(what):
    with open(LOG) as f:
        return any(line.startswith(what + " ") for line in f)


_held = open({lock!r}, "w")
try:
    fcntl.flock(_held, fcntl.LOCK_EX | fcntl.LOCK_NB)
except OSError:
    _log("waits")
    fcntl.flock(_held, fcntl.LOCK_EX)  # until the holder has exited
    fcntl.flock(_held, fcntl.LOCK_UN)
    deadline = time.monotonic() + 60
    while not os.path.exists(f"{{LOG}}.sent-{{os.getpid()}}") and time.monotonic() < deadline:
        time.sleep(0.01)
    _log("fails")
    raise RuntimeError("the target was held by another process")
_log("holds")


def _hold(x):
    deadline = time.monotonic() + 60
    while x.shape[0] == 3 and not _seen("waits") and time.monotonic() < deadline:
        time.sleep(0.02)


def target(x):
    if torch.compiler.is_compiling():
        _hold(x)  # a graph break: runs on the compiled calls only
    return x * 2
"""


@two_cores
def test_a_worker_that_fails_to_load_the_target_after_its_jobs_were_sent_is_replaced(
    write_scenario, tmp_path, monkeypatch
):
    """The worker started ahead for `static` is handed its jobs while it still waits for the
    target, then fails to load it: `static` runs in a fresh worker, and every run is ok."""
    log = tmp_path / "workers.log"
    log.touch()
    (tmp_path / "late.py").write_text(
        EXCLUSIVE_LATE.format(log=str(log), lock=str(tmp_path / "held.lock"))
    )
    path = write_scenario("""
        target: late.py:target
        inputs: [{shape: [B, 4]}]
        sequences: {a: [1, 2], b: [3, 4]}
        strategies: [default, static]
        repeats: 0
    """)
    sent: list[tuple[int, float]] = []
    send = process.ProcessExecutor._send

    def recorded(self, worker, group):
        sent.append((worker.proc.pid, time.monotonic()))
        done = send(self, worker, group)
        Path(f"{log}.sent-{worker.proc.pid}").touch()  # the jobs are handed over
        return done

    monkeypatch.setattr(process.ProcessExecutor, "_send", recorded)
    report = run_scenario(load(path), isolate="process", timeout=120)
    assert [(r.strategy, r.sequence_name, r.status) for r in report.runs] == [
        (strategy, sequence, "ok") for sequence in ("a", "b") for strategy in ("default", "static")
    ]
    events = _log_lines(log)
    assert [what for what, _, _ in events] == ["holds", "waits", "fails", "holds"], events
    (_, holder, _), (_, ahead, _), (_, _, failed_at), (_, fresh, _) = events
    assert len({holder, ahead, fresh}) == 3, events
    # the worker started ahead had its jobs before it failed; its strategy's own worker after
    assert [pid for pid, _ in sent] == [holder, ahead, fresh], (sent, events)
    assert sent[1][1] < failed_at < sent[2][1], (sent, events)


def test_the_timeout_counts_a_workers_preparation_whether_it_began_ahead_or_not(
    write_scenario, tmp_path
):
    """The target's import takes a second: every strategy's worker is past a half-second limit
    before its first call, the ones that began loading it while another strategy ran too."""
    path, _ = _ahead_scenario(write_scenario, tmp_path, "target")
    report = run_scenario(load(path), isolate="process", timeout=0.5)
    assert [(r.status, r.error.type if r.error else None) for r in report.runs] == [
        ("error", "Timeout")
    ] * 6


# --- hung runs, Ctrl-C and --debug ----------------------------------------------------------------

#: A factory that behaves only under the custom strategy `gated` (the one run with
#: recompile_limit 9, a value no sequence here comes near): it logs an ERROR on torch's logger,
#: and for batch sizes >= 3 starts a child process, then blocks until a `release` file appears.
GATED = """
import logging, pathlib, subprocess, sys, time
import torch

HERE = pathlib.Path(__file__).parent


def target(x):
    return x * 2 + 1


def make_inputs(b):
    if torch._dynamo.config.recompile_limit == 9:
        logging.getLogger("torch._dynamo").error("LOGGED-UNDER-GATE b=%d", b)
        if b >= 3:
            child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
            (HERE / "child.pid").write_text(str(child.pid))
            (HERE / "blocked").touch()
            while not (HERE / "release").exists():
                time.sleep(0.05)
    return (torch.randn(b, 4),)
"""

GATED_SCENARIO = """
    target: gated.py:target
    factory: gated.py:make_inputs
    batch_dims: {{0: [0]}}
    sequences: {{a: [1, 2], b: [3, 4]}}
    repeats: 0
    strategies: {strategies}
    custom_strategies:
      gated: {{extends: default, config: {{torch._dynamo.config.recompile_limit: 9}}}}
"""


@pytest.fixture
def gated(write_scenario, tmp_path):
    """Write gated.py and a scenario over it; on teardown release the gate and end its child."""
    (tmp_path / "gated.py").write_text(GATED)

    def write(strategies: str) -> Path:
        return write_scenario(GATED_SCENARIO.format(strategies=strategies))

    yield write
    (tmp_path / "release").touch()
    pid_file = tmp_path / "child.pid"
    if pid_file.exists() and _running(int(pid_file.read_text())):
        os.kill(int(pid_file.read_text()), signal.SIGKILL)  # the test's own leftover


def _running(pid: int) -> bool:
    """Alive and not a zombie (an orphan's zombie waits for a reaper we do not control)."""
    if not Path("/proc").is_dir():
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        return True
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat[stat.rfind(")") + 2] not in "ZX"


def _hand(tmp_path: Path, sequence: list[int]) -> tuple[int, None]:
    spec = importlib.util.spec_from_file_location("gated_hand", tmp_path / "gated.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return hand_count(module.target, module.make_inputs, sequence)


def _cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "recompile_probe", "run", *args, "-f", "json", "-q"]


def _figures(report: dict) -> dict:
    return {
        (r["sequence_name"], r["strategy"]): (
            r["status"],
            r["graphs"],
            r["compiles"],
            (r["error"] or {}).get("type"),
        )
        for r in report["runs"]
    }


#: how each process mode is asked for: one process per strategy, or a pool of 2 reused workers
MODES = {"process": ["--isolate", "process"], "jobs": ["--jobs", "2"]}


@pytest.mark.skipif(not hasattr(os, "killpg"), reason="needs process groups")
@pytest.mark.parametrize("mode", list(MODES))
def test_hung_run_times_out_and_leaves_no_process_behind(gated, tmp_path, mode):
    """The gated strategy hangs on sequence b (in a child of the worker too): b becomes status
    error "Timeout"; its run a, which finished first, and every run of the next strategy keep
    real figures; the child the target started is gone; the run exits 0. With --jobs the limit
    is per run and the worker that ran out of time is replaced by a fresh one."""
    path, out = gated("[gated, default]"), tmp_path / "out.json"
    # 6 s: a forked worker runs the finished runs in about one; the hung one waits out the rest
    done = subprocess.run(
        _cli(str(path), *MODES[mode], "--timeout", "6", "-o", str(out)),
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(out.read_text())
    timed_out = next(r for r in report["runs"] if r["error"])
    assert ("the run did not" if mode == "jobs" else "the strategy did not") in timed_out["error"][
        "message"
    ]
    a, b = _hand(tmp_path, [1, 2]), _hand(tmp_path, [3, 4])
    assert _figures(report) == {
        ("a", "gated"): ("ok", a[0], a[0], None),
        ("b", "gated"): ("error", None, None, "Timeout"),
        ("a", "default"): ("ok", a[0], a[0], None),
        ("b", "default"): ("ok", b[0], b[0], None),
    }
    assert a[1] is None and b[1] is None and report["complete"] is True
    child = int((tmp_path / "child.pid").read_text())
    assert not _running(child), "the timed-out worker's child process was left running"


def _default_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _group_state(pgid: int) -> str:
    """Each process of the group: its command, state, kernel wait and signal masks (SigIgn
    says whether SIGINT, bit 2, was ignored), for a test that waited in vain."""
    rows = []
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            if os.getpgid(int(proc.name)) != pgid:
                continue
            status = dict(
                line.split(":\t", 1)
                for line in (proc / "status").read_text().splitlines()
                if ":\t" in line
            )
            cmd = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode()[:160]
            wchan = (proc / "wchan").read_text()
        except (OSError, ProcessLookupError):
            continue
        keys = ("State", "SigIgn", "SigCgt", "SigBlk", "Threads")
        rows.append(
            f"{proc.name} {cmd} wchan={wchan} " + " ".join(f"{k}={status.get(k)}" for k in keys)
        )
    return "\n".join(rows) or "(none left)"


def _interrupt_at_the_gate(tmp_path: Path, argv: list[str], finished: int = 0) -> tuple[int, str]:
    """Start the CLI in a process group of its own (as a terminal does), send the group SIGINT
    once the gate blocks (so at least one run has finished) and the --output file (rewritten
    after every finished run) holds ``finished`` runs, return (exit code, stderr)."""
    proc = subprocess.Popen(
        argv,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        # A terminal starts its job with SIGINT at its default; a suite started in the
        # background of a non-interactive shell inherits it ignored (SigIgn 0x7), and the CLI
        # rightly keeps ignoring it then, so the test would wait for nothing.
        preexec_fn=_default_sigint,
    )
    out = tmp_path / "out.json"

    def saved() -> int:
        try:
            return len(json.loads(out.read_text())["runs"])
        except (OSError, ValueError, KeyError):
            return 0

    try:
        deadline = time.monotonic() + 120
        while not (tmp_path / "blocked").exists() or saved() < finished:
            assert proc.poll() is None, proc.communicate()[1]
            assert time.monotonic() < deadline, "the gate was never reached"
            time.sleep(0.05)
        os.killpg(proc.pid, signal.SIGINT)  # what Ctrl-C in a terminal does
        try:
            _, stderr = proc.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            pytest.fail(f"no exit 60 s after SIGINT; the process group:\n{_group_state(proc.pid)}")
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    return proc.returncode, stderr


@pytest.mark.skipif(not hasattr(os, "killpg"), reason="needs process groups")
@pytest.mark.parametrize("isolate", ["inline", "process", "jobs"])
def test_ctrl_c_keeps_the_finished_runs(gated, tmp_path, isolate):
    """Ctrl-C while the gated strategy is blocked on sequence b: exit 130, and the report holds
    every run that finished, with Dynamo's own counts, marked incomplete, in every mode. With
    --jobs 2, gated a may still run beside the blocked b: Ctrl-C waits for the --output file to
    hold the three finished runs."""
    path, out = gated("[default, gated]"), tmp_path / "out.json"
    mode = ["--jobs", "2"] if isolate == "jobs" else ["--isolate", isolate]
    code, stderr = _interrupt_at_the_gate(
        tmp_path, _cli(str(path), *mode, "-o", str(out)), finished=3
    )
    assert code == 130 and "interrupted" in stderr, stderr
    report = json.loads(out.read_text())
    a, b = _hand(tmp_path, [1, 2]), _hand(tmp_path, [3, 4])
    assert _figures(report) == {
        ("a", "default"): ("ok", a[0], a[0], None),
        ("b", "default"): ("ok", b[0], b[0], None),
        ("a", "gated"): ("ok", a[0], a[0], None),
    }  # finished inside the interrupted strategy
    assert report["complete"] is False
    assert {r["isolation"] for r in report["runs"]} == {
        "inline" if isolate == "inline" else "process"
    }
    if isolate != "inline":  # inline, the child shares our group and got the SIGINT itself
        assert not _running(int((tmp_path / "child.pid").read_text()))


@pytest.mark.skipif(not hasattr(os, "killpg"), reason="needs process groups")
def test_ctrl_c_during_explain_exits_130_with_the_finished_runs(gated, tmp_path):
    path, out = gated("[default, gated]"), tmp_path / "out.json"
    code, stderr = _interrupt_at_the_gate(
        tmp_path,
        [
            sys.executable,
            "-m",
            "recompile_probe",
            "explain",
            str(path),
            "-f",
            "json",
            "-q",
            "-o",
            str(out),
        ],
    )
    assert code == 130 and "interrupted" in stderr, stderr
    a, b = _hand(tmp_path, [1, 2]), _hand(tmp_path, [3, 4])
    costs = {
        (c["sequence_name"], c["strategy"]): c["compiles"]
        for c in json.loads(out.read_text())["costs"]
    }
    assert costs == {("a", "default"): a[0], ("b", "default"): b[0], ("a", "gated"): a[0]}


# --debug on and off in a fresh process; on in a pool worker (off there is the same silencing)
@pytest.mark.parametrize(("debug", "jobs"), [(True, 1), (False, 1), (True, 2)])
def test_debug_reaches_the_worker(gated, capsys, debug, jobs):
    """--debug keeps torch's own error logs in the worker, relayed to our stderr; without it the
    worker silences them as inline mode does. The same with --jobs 2 (a pool worker)."""
    path = gated("[gated]")
    overrides = {"sequence": [1, 2]}  # below the gate's blocking sizes
    scenario = with_overrides(load(path), **overrides)
    report = run_scenario(scenario, isolate="process", timeout=120, debug=debug, jobs=jobs)
    assert [r.status for r in report.runs] == ["ok"]
    err = capsys.readouterr().err
    assert ("[worker gated]" in err and "LOGGED-UNDER-GATE b=2" in err) is debug, err
    assert "LOGGED-UNDER-GATE" not in err or debug, err


@pytest.mark.parametrize("jobs", [1, 2])
def test_debug_shows_the_workers_traceback_of_a_fatal_error(write_scenario, capsys, jobs):
    path = write_scenario("""
        target: user_targets.py:eager_fails
        inputs: [{shape: [B, 4]}]
        sequences: {s: [1]}
        strategies: [default]
    """)
    with pytest.raises(EagerFailure, match="bad target"):
        run_scenario(load(path), isolate="process", timeout=120, debug=True, jobs=jobs)
    err = capsys.readouterr().err
    assert "[worker default] Traceback (most recent call last):" in err, err
    assert "[worker default] ValueError: bad target" in err, err
