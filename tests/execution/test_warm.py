"""Workers forked from the warm server give the report a fresh interpreter gives, say how they
started, fall back to a fresh interpreter where forking could differ, and leave nothing behind."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from comparable import comparable
from helpers import CONFIGS
from recompile_probe.execution import warm
from recompile_probe.execution.session import open_pool, run_scenario
from recompile_probe.records.report import to_dict
from recompile_probe.scenario.load import load
from recompile_probe.scenario.overrides import with_overrides

pytestmark = pytest.mark.slow

FRESH = "fresh interpreter: RECOMPILE_PROBE_WARM=0"


def _process_report(path: Path, monkeypatch, warm_start: bool, **overrides):
    monkeypatch.setenv(warm.SWITCH, "1" if warm_start else "0")
    scenario = with_overrides(load(path), **overrides)
    return run_scenario(scenario, isolate="process", timeout=300)


def _same(a, b) -> None:
    assert a.complete and b.complete
    assert comparable(to_dict(a)) == comparable(to_dict(b))


def test_a_forked_worker_reports_what_a_fresh_interpreter_reports(monkeypatch):
    """The seed op under three strategies, each in its own worker: forked, then fresh."""
    chosen = {"strategies": ["default", "mark_dynamic", "mark_unbacked"]}
    forked = _process_report(CONFIGS / "logprobs.yaml", monkeypatch, True, **chosen)
    fresh = _process_report(CONFIGS / "logprobs.yaml", monkeypatch, False, **chosen)
    assert forked.environment.worker_start == warm.FORKED_WORDS
    assert fresh.environment.worker_start == FRESH
    assert [r.compiles for r in forked.runs] == [r.compiles for r in fresh.runs]
    _same(forked, fresh)


@pytest.mark.exhaustive
@pytest.mark.parametrize("name", sorted(p.name for p in CONFIGS.glob("*.yaml")))
def test_every_shipped_config_forked_equals_fresh(name, monkeypatch):
    """Every shipped config (eager), one worker per strategy: forked from the warm server, and
    each in a fresh interpreter; timings, process-local ids and how the worker started masked."""
    forked = _process_report(CONFIGS / name, monkeypatch, True, backend="eager")
    fresh = _process_report(CONFIGS / name, monkeypatch, False, backend="eager")
    _same(forked, fresh)


def test_the_pool_forks_its_workers_and_reuses_them():
    scenario = with_overrides(
        load(CONFIGS / "logprobs.yaml"), strategies=["default", "static", "mark_unbacked"]
    )
    with open_pool(2, timeout=300) as pool:
        report = run_scenario(scenario, pool=pool)
        started = pool.started
    assert report.environment.worker_start == warm.FORKED_WORDS
    assert started == 2 and report.complete


def test_a_variable_torch_reads_at_import_that_differs_starts_the_worker_fresh(monkeypatch):
    if warm.server() is None:
        pytest.skip("no warm server on this platform")
    monkeypatch.setenv("PYTORCH_RECOMPILE_PROBE_TEST_VARIABLE", "1")
    scenario = with_overrides(load(CONFIGS / "logprobs.yaml"), strategies=["default"])
    report = run_scenario(scenario, isolate="process", timeout=300)
    start = report.environment.worker_start
    assert start.startswith("fresh interpreter: its environment differs from the warm server's")
    assert "PYTORCH_RECOMPILE_PROBE_TEST_VARIABLE" in start
    assert report.runs[0].status == "ok"


def test_a_variable_read_at_run_time_reaches_the_forked_worker(tmp_path, monkeypatch):
    """Set after the server started, a variable outside the import-time prefixes is in the
    forked worker's environment, as a fresh worker would have it."""
    if warm.server() is None:
        pytest.skip("no warm server on this platform")
    program = tmp_path / "reads_env.py"
    program.write_text(
        "import os\n"
        "def step(x):\n"
        "    return x * 2\n"
        "def make_inputs(b):\n"
        "    import torch\n"
        "    with open(os.environ['RP_TEST_OUT'], 'w') as out:\n"
        "        out.write(os.environ.get('RP_TEST_VALUE', 'missing'))\n"
        "    return (torch.ones(b, 2),)\n"
    )
    scenario = tmp_path / "s.yaml"
    scenario.write_text(
        "target: reads_env.py:step\nfactory: reads_env.py:make_inputs\n"
        "batch_dims: {0: [0]}\nsequences: {s: [2, 3]}\nstrategies: [default]\n"
    )
    monkeypatch.setenv("RP_TEST_OUT", str(tmp_path / "seen.txt"))
    monkeypatch.setenv("RP_TEST_VALUE", "after the server")
    report = run_scenario(load(scenario), isolate="process", timeout=300)
    assert report.environment.worker_start == warm.FORKED_WORDS
    assert (tmp_path / "seen.txt").read_text() == "after the server"


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads /proc")
def test_a_killed_command_leaves_no_server_or_worker_behind(tmp_path):
    """SIGKILL the command while a forked worker runs: the server sees its socket close and
    stops every worker's process group, then exits."""
    script = tmp_path / "run.py"
    script.write_text(
        "import sys\n"
        "from recompile_probe.execution.session import run_scenario\n"
        "from recompile_probe.scenario.load import load\n"
        "from recompile_probe.scenario.overrides import with_overrides\n"
        f"s = with_overrides(load({str(CONFIGS / 'logprobs.yaml')!r}), strategies=['static'],"
        " sequence=list(range(1, 200)))\n"
        "print('starting', flush=True)\n"
        "run_scenario(s, isolate='process', timeout=300)\n"
    )
    parent = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True)
    assert parent.stdout is not None and parent.stdout.readline().strip() == "starting"
    deadline = time.monotonic() + 60
    server = []
    while time.monotonic() < deadline and not server:
        server = [p for p in _children_of(parent.pid) if _is_server(p)]
        time.sleep(0.1)
    assert server, "no warm server started"
    time.sleep(3)  # the worker forked and compiling
    workers = _children_of(server[0])
    parent.send_signal(signal.SIGKILL)
    parent.wait()
    deadline = time.monotonic() + 15
    alive = [server[0], *workers]
    while time.monotonic() < deadline:
        alive = [p for p in alive if _alive(p)]
        if not alive:
            break
        time.sleep(0.2)
    assert alive == [], f"left behind: {alive}"


def _children_of(pid: int) -> list[int]:
    out = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat[stat.rfind(")") + 2 :].split()[1]) == pid:
                out.append(int(entry.name))
    return out


def _is_server(pid: int) -> bool:
    try:
        return b"warm_server" in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return state[state.rfind(")") + 2 :].split()[0] not in ("Z", "X")


def test_the_server_reports_its_start_and_workers_start_in_milliseconds(tmp_path):
    """Not a timing assert: the worker's own ready record says it imported nothing more."""
    server = warm.server()
    if server is None:
        pytest.skip("no warm server on this platform")
    from recompile_probe.execution import processes

    worker = processes.start(tmp_path, "probe")
    worker.end_input()
    ready = None
    deadline = time.monotonic() + 60
    while ready is None and time.monotonic() < deadline:
        ready = next((e for e in worker.records(worker.stop) if hasattr(e, "import_s")), None)
        time.sleep(0.01)
    worker.stop()
    assert ready is not None and server.import_s is not None
    assert json.loads((tmp_path / "job.json").read_text())["start"] == warm.FORKED_WORDS
    # the imports were the server's: a forked worker's own start is a fraction of them
    assert ready.import_s < server.import_s / 5


def test_a_server_that_died_leaves_every_later_worker_fresh_with_the_reason(tmp_path, monkeypatch):
    """Its own server (the session's stays as it was): killed, the next worker starts fresh and
    says why, and so does every one after it."""
    if warm.why_not(dict(os.environ)) is not None:
        pytest.skip("no warm server on this platform")
    from recompile_probe.execution import processes

    own = warm.Server()
    own.ready()
    monkeypatch.setattr(warm, "_server", own)
    monkeypatch.setattr(warm, "_failed", None)
    own.proc.kill()
    own.proc.wait()
    starts = []
    for i in range(2):
        folder = tmp_path / str(i)
        folder.mkdir()
        worker = processes.start(folder, "after")
        worker.end_input()
        worker.proc.wait(120)
        worker.stop()
        starts.append(json.loads((folder / "job.json").read_text())["start"])
    assert all(s.startswith("fresh interpreter: the warm server could not fork it") for s in starts)


def test_a_later_server_imports_what_the_first_ones_scout_found_and_forks_the_same_figures(
    tmp_path, monkeypatch
):
    """The first server of an installation sends a scout to find what a first compile imports
    and keeps the list; the next one imports that list instead, and the workers it forks still
    report what fresh interpreters report."""
    if warm.why_not(dict(os.environ)) is not None:
        pytest.skip("no warm server on this platform")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    first = warm.Server()
    first.ready()
    first.close()
    (kept,) = tmp_path.glob("recompile-probe/first-compile-modules-*.json")
    names = json.loads(kept.read_text())
    assert first.scouted is True
    assert "torch._dynamo.convert_frame" in names  # what compiling a frame imports
    second = warm.Server()
    second.ready()
    assert second.scouted is False
    monkeypatch.setattr(warm, "_server", second)
    monkeypatch.setattr(warm, "_failed", None)
    try:
        chosen = {"strategies": ["default", "mark_unbacked"]}
        forked = _process_report(CONFIGS / "logprobs.yaml", monkeypatch, True, **chosen)
    finally:
        second.close()
    assert forked.environment.worker_start == warm.FORKED_WORDS
    fresh = _process_report(CONFIGS / "logprobs.yaml", monkeypatch, False, **chosen)
    _same(forked, fresh)
