"""watch and summarize against independent counts: in-process metrics, a TORCH_TRACE read back,
and tlparse where installed."""

from __future__ import annotations

import functools
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from helpers import FIXTURES, PROGRAMS, ROOT

pytestmark = pytest.mark.slow

FIXTURE = FIXTURES / "known_compiles.py"
EXAMPLE = ROOT / "examples" / "sampler_loop.py"
CLI = [sys.executable, "-m", "recompile_probe"]
FIGURES = ("compiles", "recompiles", "graphs", "graph_breaks")
TLPARSE = shutil.which("tlparse") or shutil.which("tlparse", path=str(Path(sys.executable).parent))


def _figures(report: dict) -> dict:
    return {
        f["function"].split(".")[-1].split(" [")[0]: tuple(f[k] for k in FIGURES)
        for f in report["functions"]
    }


@functools.cache
def _truth() -> dict:
    """The fixture's own count, in its process: compilation metrics per frame, its counting
    backend's graphs per compile id, Dynamo's graph-break list per function (one run per test
    process: it reads nothing the tests change)."""
    out = subprocess.run(
        [sys.executable, str(FIXTURE), "--metrics"], capture_output=True, text=True, check=True
    ).stdout
    metrics = json.loads(out.split("METRICS ", 1)[1])
    return {name: tuple(v[k] for k in FIGURES) for name, v in metrics.items()}


@pytest.fixture(scope="module")
def fixture_trace(tmp_path_factory):
    """The fixture's own TORCH_TRACE (a plain run, no recorder), shared: tests only read it."""
    trace = tmp_path_factory.mktemp("known_compiles") / "trace"
    subprocess.run(
        [sys.executable, str(FIXTURE)],
        env={**os.environ, "TORCH_TRACE": str(trace)},
        check=True,
        capture_output=True,
    )
    return trace


def test_watch_summarize_and_metrics_agree(tmp_path, fixture_trace):
    truth = _truth()
    # the fixture is what its docstring says (so the comparison below cannot pass on nothing)
    resume = next(name for name in truth if name.startswith("torch_dynamo_resume_in_first"))
    assert truth == {"first": (2, 1, 2, 2), resume: (2, 1, 2, 0), "second": (2, 1, 2, 0)}

    out = tmp_path / "watch.json"
    watched = subprocess.run(
        [*CLI, "watch", "-f", "json", "-o", str(out), "--", "python", str(FIXTURE)],
        capture_output=True,
        text=True,
    )
    assert watched.returncode == 0, watched.stderr
    report = json.loads(out.read_text())
    assert _figures(report) == truth
    by = {f["function"]: f for f in report["functions"]}
    assert by["first"]["cache_entries"] == 2 and by["second"]["cache_entries"] == 2
    assert [r["kind"] for r in by["second"]["reasons"]] == ["dtype_change"]
    assert by["first"]["reasons"][0]["kind"] == "zero_one_specialization"

    trace = fixture_trace
    summary = subprocess.run(
        [*CLI, "summarize", str(trace), "-f", "json"], capture_output=True, text=True
    )
    assert summary.returncode == 0, summary.stderr
    summarized = json.loads(summary.stdout)
    assert _figures(summarized) == truth
    assert summarized["skipped_lines"] == 0


def test_summarize_finds_the_compiles_tlparse_finds(tmp_path, fixture_trace):
    if TLPARSE is None:
        message = "tlparse is not installed (pip install -e .[dev])"
        if os.environ.get("CI"):
            pytest.fail(message + "; CI is set, so this is a failure, not a skip", pytrace=False)
        pytest.skip(message)
    trace = fixture_trace
    summary = subprocess.run(
        [*CLI, "summarize", str(trace), "-f", "json"], capture_output=True, text=True
    )
    assert summary.returncode == 0, summary.stderr
    summarized = json.loads(summary.stdout)
    (log,) = list(trace.glob("*.log"))
    subprocess.run(
        [TLPARSE, str(log), "-o", str(tmp_path / "tl"), "--no-browser"],
        check=True,
        capture_output=True,
    )
    # tlparse lists restarted attempts (a graph break restarts analysis) as "0/0_1"
    ids = {
        k.strip("[]").split("_")[0]
        for k in json.loads((tmp_path / "tl" / "compile_directory.json").read_text())
        if "-" not in k
    }
    assert len(ids) == sum(f["compiles"] for f in summarized["functions"])
    assert len(ids) == sum(figures[0] for figures in _truth().values())
    assert ids == {e["compile_id"] for e in summarized["events"]}


def test_summarize_tolerates_truncation_and_unknown_records(tmp_path, fixture_trace):
    trace = fixture_trace
    (log,) = list(trace.glob("*.log"))
    text = log.read_text()
    damaged = tmp_path / "damaged.log"
    damaged.write_text(
        'V1129 00:00:00.000000 1 x.py:1] {"some_future_record": {}}\n'
        "not a trace line\n" + text[: int(len(text) * 0.75)] + '\nV1129 {"trunc'
    )
    result = subprocess.run(
        [*CLI, "summarize", str(damaged), "-f", "json"], capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["skipped_lines"] >= 2
    # what was complete is still summarised: exactly the compiles whose metrics record survived
    # whole, read here straight from the kept lines
    kept = text[: int(len(text) * 0.75)].splitlines()[:-1]  # the last kept line is cut
    records = [
        json.loads(line.split("] ", 1)[1])["compilation_metrics"]
        for line in kept
        if '] {"compilation_metrics":' in line
    ]
    assert 0 < len(records) < 6, "the cut must keep some compiles and lose others"
    survivors: dict[str, int] = {}
    for r in records:
        survivors[r["co_name"]] = survivors.get(r["co_name"], 0) + 1
    assert {e["compile_id"] for e in data["events"]} == {r["compile_id"] for r in records}
    assert {f["function"]: f["compiles"] for f in data["functions"]} == survivors


def test_summarize_needs_no_torch(fixture_trace):
    trace = fixture_trace
    code = (
        "import sys; sys.modules['torch'] = None\nfrom recompile_probe.cli import main\n"
        "sys.argv = ['recompile-probe', 'summarize', sys.argv[1]]; main()"
    )
    result = subprocess.run(
        [sys.executable, "-c", code, str(trace)], capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr
    assert "first" in result.stdout and "recompiles" in result.stdout


def test_example_loop_budget_exits_1_and_fixed_loop_exits_0():
    buggy = subprocess.run(
        [*CLI, "watch", "--max-recompiles", "0", "--", "python", str(EXAMPLE)],
        capture_output=True,
        text=True,
    )
    assert buggy.returncode == 1
    assert "served 12 batches" in buggy.stdout  # the program's own stdout is untouched
    assert "zero_one_specialization" in buggy.stderr
    assert "size mismatch at index 0. expected 1, actual 4" in buggy.stderr
    fixed = subprocess.run(
        [*CLI, "watch", "--max-recompiles", "0", "--", "python", str(EXAMPLE), "--fixed"],
        capture_output=True,
        text=True,
    )
    assert fixed.returncode == 0, fixed.stderr
    assert "0 recompiles" in fixed.stderr


def test_a_failing_program_keeps_its_exit_code_and_gets_its_table():
    result = subprocess.run(
        [*CLI, "watch", "--", "python", str(FIXTURE), "--raise"], capture_output=True, text=True
    )
    assert result.returncode == 1
    assert "RuntimeError: the program failed after compiling" in result.stderr
    assert "second" in result.stderr and "dtype_change" in result.stderr


def test_interrupted_program_still_gets_its_table():
    proc = subprocess.Popen(
        [*CLI, "watch", "--", "python", str(FIXTURE), "--sleep"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    assert proc.stdout.readline().strip() == "ready"
    time.sleep(0.2)
    os.killpg(proc.pid, signal.SIGINT)  # what Ctrl-C does: the whole foreground group
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130
    assert "interrupted" in err and "second" in err


def test_filter_and_module_form(tmp_path):
    out = tmp_path / "r.json"
    result = subprocess.run(
        [
            *CLI,
            "watch",
            "--filter",
            "sec*",
            "-f",
            "json",
            "-o",
            str(out),
            "--",
            "python",
            str(FIXTURE),
        ],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr
    assert [f["function"] for f in json.loads(out.read_text())["functions"]] == ["second"]


def test_nothing_to_watch_is_a_usage_error():
    result = subprocess.run([*CLI, "watch"], capture_output=True, text=True)
    assert result.returncode == 2 and "nothing to watch" in result.stderr


# --- child processes, explicit interpreters, start-up -----------------

LOADER_PROGRAM = '''
"""A DataLoader with 2 workers whose __getitem__ calls a compiled function; the parent compiles
too, before the workers start (forked workers inherit that cache entry) and after.
Each process writes its own truth from Dynamo's records. argv: default|fork|spawn TRUTH_DIR"""
import json, os, sys
import torch
from torch.utils.data import DataLoader, Dataset

TRUTH = sys.argv[2]


def _item(x):
    return x.sum() + 1


item_fn = torch.compile(_item, backend="eager")


@torch.compile(backend="eager")
def train_step(x):
    return (x * x).mean()


def metrics():
    from torch._dynamo.utils import get_compilation_metrics
    return list(get_compilation_metrics())


def entries(code):
    return len(torch._dynamo.eval_frame._debug_get_cache_entry_list(code))


def frames(records, start=0):
    """Per frame id, over records[start:] (a forked worker's own; the frame's first record may
    be its parent's): compiles; recompiles = records with cache_size > 0 or a fail_type after
    the frame's first record; failed = records with a fail_type."""
    out, seen = {}, set()
    for i, m in enumerate(records):
        frame = str(m.compile_id).split("/")[0]
        later = frame in seen
        seen.add(frame)
        if i < start:
            continue
        f = out.setdefault(frame, {"function": None, "compiles": 0, "recompiles": 0,
                                   "failed": 0})
        f["function"] = f["function"] or m.co_name
        f["compiles"] += 1
        f["recompiles"] += int(later and ((m.cache_size or 0) > 0 or m.fail_type is not None))
        f["failed"] += int(m.fail_type is not None)
    return out


_start = {}


def worker_init(worker_id):
    # a forked worker starts with the parent's records and cache entries: not its own
    _start.update(records=len(metrics()), entries=entries(_item.__code__))


class Items(Dataset):
    def __len__(self):
        return 8

    def __getitem__(self, i):
        out = item_fn(torch.ones(i % 3 + 1))
        with open(os.path.join(TRUTH, "worker-%d.json" % os.getpid()), "w") as handle:
            json.dump({"frames": frames(metrics(), _start["records"]),
                       "entries": entries(_item.__code__) - _start["entries"]}, handle)
        return out


if __name__ == "__main__":
    method = sys.argv[1]
    kwargs = {} if method == "default" else {"multiprocessing_context": method}
    item_fn(torch.ones(5))
    loader = DataLoader(Items(), batch_size=2, num_workers=2, worker_init_fn=worker_init,
                        **kwargs)
    for batch in loader:
        train_step(batch)
    train_step(torch.ones(3, 3))
    context = loader.multiprocessing_context
    with open(os.path.join(TRUTH, "parent.json"), "w") as handle:
        json.dump({"pid": os.getpid(), "frames": frames(metrics()),
                   "start_method": context.get_start_method() if context else
                   torch.multiprocessing.get_start_method(),
                   "entries": {"_item": entries(_item.__code__),
                               "train_step": entries(train_step._torchdynamo_orig_callable)}},
                  handle)
    print("done")
'''


def _by_name(frames: dict) -> dict:
    return {f["function"]: (f["compiles"], f["recompiles"], f["failed"]) for f in frames.values()}


def _section(functions: list) -> dict:
    return {f["function"]: (f["compiles"], f["recompiles"], f["failed"]) for f in functions}


# fork (the default here); spawned workers are compared with their own traces in
# tests/commands/test_watch_real_programs.py (dataloader_workers)
@pytest.mark.parametrize("method", ["default"])
def test_dataloader_workers_get_their_own_sections(tmp_path, method):
    prog = tmp_path / "loader.py"
    prog.write_text(LOADER_PROGRAM)
    out = tmp_path / "report.json"
    result = subprocess.run(
        [
            *CLI,
            "watch",
            "-f",
            "json",
            "-o",
            str(out),
            "--",
            "python",
            str(prog),
            method,
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    assert "done" in result.stdout
    report = json.loads(out.read_text())
    parent = json.loads((tmp_path / "parent.json").read_text())
    assert parent["start_method"] == ("fork" if method == "default" else "spawn")

    # the program's own figures are exactly what its own Dynamo recorded, workers excluded
    assert _section(report["functions"]) == _by_name(parent["frames"])
    assert {f["function"]: f["cache_entries"] for f in report["functions"]} == parent["entries"]
    assert len(report["events"]) == sum(f[0] for f in _by_name(parent["frames"]).values())
    assert {e["pid"] for e in report["events"]} == {parent["pid"]}
    main, *children = report["processes"]
    assert main["main"] and main["pid"] == parent["pid"]
    assert _section(main["functions"]) == _by_name(parent["frames"])

    # one section per worker, with that worker's own compiles and no inherited ones
    assert sorted(c["role"] for c in children) == ["DataLoader worker 0", "DataLoader worker 1"]
    for child in children:
        truth = json.loads((tmp_path / f"worker-{child['pid']}.json").read_text())
        assert _section(child["functions"]) == _by_name(truth["frames"])
        (item,) = child["functions"]
        assert item["cache_entries"] == truth["entries"]
        assert {e["pid"] for e in child["events"]} == {child["pid"]}
        assert child["forked_from"] == (parent["pid"] if method == "default" else None)
        assert child["exit_recorded"]
    assert report["totals"]["processes"] == 3
    assert report["totals"]["compiles"] == sum(
        f["compiles"] for p in report["processes"] for f in p["functions"]
    )
    # compile ids are per process: (pid, compile id) names each compile once
    ids = [(p["pid"], e["compile_id"]) for p in report["processes"] for e in p["events"]]
    assert len(ids) == len(set(ids))
    if method == "spawn":  # spawned processes number their frames from 0 again
        assert len({i for _, i in ids}) < len(ids)


def test_child_tables_fit_100_columns_and_the_budget_counts_workers(tmp_path):
    prog = tmp_path / "loader.py"
    prog.write_text(LOADER_PROGRAM)
    result = subprocess.run(
        [*CLI, "watch", "--max-recompiles", "1", "--", "python", str(prog), "fork", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "COLUMNS": "160"},
    )
    parent = json.loads((tmp_path / "parent.json").read_text())
    assert sum(f[1] for f in _by_name(parent["frames"]).values()) == 1  # within the budget alone
    assert result.returncode == 1, result.stderr  # the workers' recompiles count too
    text = result.stderr
    children = text[text.index("Child processes") :]
    assert all(len(line) <= 100 for line in children.splitlines())
    for worker in (0, 1):
        assert f"DataLoader worker {worker} · forked from {parent['pid']}" in children
    assert "All 3 processes:" in children


def test_bare_python_maps_to_this_interpreter_and_a_path_runs_as_named():
    from recompile_probe.commands.watch import resolve

    assert resolve(["python", "x.py"]) == [sys.executable, "x.py"]
    assert resolve(["python3", "-m", "m"]) == [sys.executable, "-m", "m"]
    assert resolve(["pytest", "-q"]) == [sys.executable, "-m", "pytest", "-q"]
    assert resolve(["/opt/other/bin/python", "x.py"]) == ["/opt/other/bin/python", "x.py"]
    assert resolve(["./python3", "x.py"]) == ["./python3", "x.py"]


VENV_PYTHON = Path(sys.prefix) / "bin" / "python"


@pytest.mark.skipif(
    sys.prefix == sys.base_prefix or not (Path(sys.prefix) / "bin" / "python3").exists(),
    reason="needs a virtual environment with bin/python and bin/python3",
)
def test_explicit_interpreter_path_is_the_one_that_runs(tmp_path):
    prog = tmp_path / "which.py"
    prog.write_text(
        "import sys, torch\nprint('EXE', sys.executable)\n"
        "f = torch.compile(lambda x: x + 1, backend='eager')\n"
        "f(torch.ones(1)); f(torch.ones(1, dtype=torch.float64))\n"
    )
    out = tmp_path / "r.json"
    # the tool runs under bin/python3, the program is asked for bin/python: they must differ
    tool = [str(Path(sys.prefix) / "bin" / "python3"), "-m", "recompile_probe"]
    result = subprocess.run(
        [*tool, "watch", "-f", "json", "-o", str(out), "--", str(VENV_PYTHON), str(prog)],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr
    assert f"EXE {VENV_PYTHON}" in result.stdout.splitlines()
    (f,) = json.loads(out.read_text())["functions"]
    assert (f["compiles"], f["recompiles"]) == (2, 1)  # the recorder loaded in that interpreter


def test_another_venv_with_torch_but_without_this_tool_is_recorded(tmp_path):
    import sysconfig

    venv = tmp_path / "other-venv"
    subprocess.run(
        [
            getattr(sys, "_base_executable", sys.executable),
            "-m",
            "venv",
            "--without-pip",
            str(venv),
        ],
        check=True,
        capture_output=True,
    )
    other = venv / "bin" / "python"
    site = subprocess.run(
        [str(other), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    )
    # torch from this environment (a path, not its .pth files: recompile_probe stays unknown)
    Path(site.stdout.strip(), "torch_here.pth").write_text(sysconfig.get_paths()["purelib"])
    found = subprocess.run(
        [
            str(other),
            "-c",
            "import importlib.util as u; print(u.find_spec("
            "'torch') is not None, u.find_spec('recompile_probe') is None)",
        ],
        capture_output=True,
        text=True,
        check=True,
        cwd=tmp_path,
    )
    assert found.stdout.split() == ["True", "True"]  # torch there, this tool not installed
    prog = tmp_path / "prog.py"
    prog.write_text(
        "import sys, torch\n"
        "print('EXE', sys.executable)\n"
        "f = torch.compile(lambda x: x + 1, backend='eager')\n"
        "f(torch.ones(1)); f(torch.ones(1, dtype=torch.float64))\n"
    )
    out = tmp_path / "r.json"
    result = subprocess.run(
        [*CLI, "watch", "-f", "json", "-o", str(out), "--", str(other), str(prog)],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr
    assert f"EXE {other}" in result.stdout.splitlines()
    (f,) = json.loads(out.read_text())["functions"]
    assert (f["compiles"], f["recompiles"]) == (2, 1)


def test_a_recorder_that_cannot_start_leaves_the_program_alone(tmp_path):
    # A torch the recorder cannot work with (every attribute of torch._dynamo raises).
    stub = tmp_path / "stub" / "torch"
    (stub / "_dynamo").mkdir(parents=True)
    (stub / "__init__.py").write_text("__version__ = '0.0-stub'\n")
    (stub / "_dynamo" / "__init__.py").write_text(
        "def __getattr__(name):\n    raise RuntimeError('stub torch has no ' + name)\n"
    )
    prog = tmp_path / "prog.py"
    prog.write_text(
        f"import sys\nsys.path.insert(0, {str(stub.parent)!r})\n"
        "import torch._dynamo\nprint('ran with', torch.__version__)\nsys.exit(3)\n"
    )
    result = subprocess.run(
        [
            *CLI,
            "watch",
            "--",
            str(VENV_PYTHON if VENV_PYTHON.exists() else sys.executable),
            str(prog),
        ],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 3
    assert "ran with 0.0-stub" in result.stdout
    # the warning is wrapped at the terminal's width (torch 2.9.1's CI path broke it mid-phrase):
    # compare by words
    words = " ".join(result.stderr.split())
    assert "the recorder did not start" in words
    assert "stub torch has no" in words


IMPORT_THEN_COMPILE = """
import json, sys
import torch
loaded = "torch._dynamo" in sys.modules  # watch must not have imported Dynamo
f = torch.compile(lambda x: x * 2, backend="eager")  # the first compile, right after import
for n in (1, 2, 3):
    f(torch.ones(n))
from torch._dynamo.utils import get_compilation_metrics
records = list(get_compilation_metrics())
print("TRUTH " + json.dumps({"dynamo_at_import": loaded, "compiles": len(records),
                             "recompiles": sum((m.cache_size or 0) > 0 for m in records)}))
"""


def test_import_torch_does_not_start_dynamo_and_later_compiles_are_all_recorded(tmp_path):
    prog = tmp_path / "prog.py"
    prog.write_text(IMPORT_THEN_COMPILE)
    out = tmp_path / "r.json"
    result = subprocess.run(
        [*CLI, "watch", "-f", "json", "-o", str(out), "--", "python", str(prog)],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr
    truth = json.loads(result.stdout.split("TRUTH ", 1)[1])
    assert truth["dynamo_at_import"] is False
    report = json.loads(out.read_text())
    assert truth["compiles"] >= 2
    assert sum(f["compiles"] for f in report["functions"]) == truth["compiles"]
    assert sum(f["recompiles"] for f in report["functions"]) == truth["recompiles"]
    assert report["processes"][0]["recorder"]


CHILD_COMPILES_ALONE = '''
"""The program never uses Dynamo; a multiprocessing child (fork) starts compiling on its own, a
second one does nothing, a plain os.fork child compiles once. Children write their own truth."""
import json, os, sys, multiprocessing as mp
import torch

TRUTH = sys.argv[1]


def truth(fn):
    from torch._dynamo.utils import get_compilation_metrics
    records = list(get_compilation_metrics())
    entries = torch._dynamo.eval_frame._debug_get_cache_entry_list(fn._torchdynamo_orig_callable)
    with open(os.path.join(TRUTH, "child-%d.json" % os.getpid()), "w") as handle:
        json.dump({"compiles": len(records), "entries": len(entries),
                   "recompiles": sum((m.cache_size or 0) > 0 for m in records)}, handle)


def work():
    f = torch.compile(lambda x: x + 1, backend="eager")
    f(torch.ones(1)); f(torch.ones(2))
    truth(f)


def idle():
    pass


if __name__ == "__main__":
    ctx = mp.get_context("fork")
    for target in (work, idle):
        p = ctx.Process(target=target)
        p.start()
        p.join()
    pid = os.fork()
    if pid == 0:
        g = torch.compile(lambda x: x * 3, backend="eager")
        g(torch.ones(2))
        truth(g)
        sys.exit(0)
    os.waitpid(pid, 0)
    print("DYNAMO_IN_PARENT", "torch._dynamo" in sys.modules)
'''


def test_children_that_start_compiling_on_their_own(tmp_path):
    prog = tmp_path / "prog.py"
    prog.write_text(CHILD_COMPILES_ALONE)
    out = tmp_path / "r.json"
    result = subprocess.run(
        [*CLI, "watch", "-f", "json", "-o", str(out), "--", "python", str(prog), str(tmp_path)],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr
    assert "DYNAMO_IN_PARENT False" in result.stdout
    report = json.loads(out.read_text())
    assert report["functions"] == [] and report["events"] == []
    main, *children = report["processes"]
    assert main["main"] and not main["recorder"]
    compiled = [c for c in children if c["functions"]]
    assert len(compiled) == 2
    for child in compiled:
        truth = json.loads((tmp_path / f"child-{child['pid']}.json").read_text())
        (f,) = child["functions"]
        assert (f["compiles"], f["recompiles"]) == (truth["compiles"], truth["recompiles"])
        assert child["exit_recorded"] and f["cache_entries"] == truth["entries"]
        assert child["forked_from"] == main["pid"]
    idle = [c for c in children if not c["functions"]]
    assert len(idle) == 1 and idle[0]["events"] == []
    assert report["totals"]["compiles"] == sum(
        json.loads(p.read_text())["compiles"] for p in tmp_path.glob("child-*.json")
    )


def _stream_event(compile_id, recompile=False):
    return {
        "event": {
            "compile_id": compile_id,
            "function": "step",
            "call_index": None,
            "reason": "0/0: tensor 'x' size mismatch at index 0. expected 1, actual 2"
            if recompile
            else None,
            "guard_count": 8,
            "shape_env_guard_count": 0,
            "graph_op_count": 1,
            "compile_time_ms": 5.0,
            "failed": False,
            "filename": "/x/train.py",
            "line": 3,
            "recompile": recompile,
        }
    }


def test_sections_in_table_and_markdown_from_streams():
    from recompile_probe.commands.watch import Outcome, report
    from recompile_probe.render.formats import Document, Layout, render

    header = {"process": {"pid": 10, "ppid": 1, "argv": ["train.py"], "forked_from": None}}
    streams = {
        10: [
            header,
            _stream_event("0/0"),
            _stream_event("0/1", True),
            {
                "final": {
                    "frames": [
                        {
                            "function": "step",
                            "filename": "/x/train.py",
                            "line": 3,
                            "qualname": "step",
                            "cache_entries": 2,
                        }
                    ]
                }
            },
        ],
        12: [
            {"process": {"pid": 12, "ppid": 10, "argv": ["train.py"], "forked_from": 10}},
            _stream_event("0/0"),
            {"final": {"frames": [], "role": "DataLoader worker 0"}},
        ],
        11: [
            {"process": {"pid": 11, "ppid": 10, "argv": ["train.py"], "forked_from": 10}},
            {"final": {"frames": [], "role": "DataLoader worker 1", "recorder": True}},
        ],
    }
    r = report(["python", "train.py"], Outcome(0, False, 10, streams))
    assert [p.pid for p in r.processes] == [10, 11, 12]  # the program first
    assert [(f.compiles, f.recompiles, f.cache_entries) for f in r.functions] == [(2, 1, 2)]
    # an exit record without that frame: the worker's entries are not known, never guessed 0
    assert r.processes[2].functions[0].cache_entries is None
    assert r.totals() == {
        "processes": 3,
        "processes_compiled": 2,
        "functions": 2,
        "compiles": 3,
        "recompiles": 1,
        "failed": 0,
    }
    text = render(Document.FUNCTIONS, "table", r, Layout(width=160))
    tail = text[text.index("Child processes") :]
    assert "pid 11 · DataLoader worker 1 · forked from 10: compiled nothing." in tail
    assert "pid 12 · DataLoader worker 0 · forked from 10" in tail
    assert all(len(line) <= 100 for line in tail.splitlines())
    assert tail.rstrip().endswith(
        "All 3 processes: 2 compiled functions (counted per process), 3 compiles, 1 recompile."
    )
    md = render(Document.FUNCTIONS, "markdown", r)
    assert "### pid 12 · DataLoader worker 0 · forked from 10" in md
    assert "- pid 11 · DataLoader worker 1 · forked from 10: compiled nothing." in md
    from recompile_probe.records.watch import watch_to_json

    data = json.loads(watch_to_json(r))
    assert [e["pid"] for e in data["events"]] == [10, 10]
    assert [e["pid"] for e in data["processes"][2]["events"]] == [12]
    assert data["totals"]["compiles"] == 3


STATIC_CACHE = PROGRAMS / "static_cache_model.py"
_VERBOSE_SIZE = re.compile(
    r"\[(?P<cid>\d+/\d+)\] \[__recompiles_verbose\].*?- (?P<entry>\d+/\d+): "
    r"tensor '(?P<name>.+?)' size mismatch at index (?P<dim>\d+)\. "
    r"expected (?P<before>\d+), actual (?P<after>\d+)"
)


def test_static_cache_model_causes_are_batch_and_cache_length_not_len_kwargs(tmp_path):
    """Issue 11's done-when: a Hugging Face-style model with a static cache behind a
    functools.wraps decorator. Dynamo's own verbose log (a plain run with
    TORCH_LOGS=recompiles_verbose, no recorder) is the reference for what changed per recompile."""
    env = {**os.environ, "TORCH_LOGS": "recompiles_verbose", "OMP_NUM_THREADS": "1"}
    plain = subprocess.run(
        [sys.executable, str(STATIC_CACHE)], capture_output=True, text=True, env=env, check=True
    )
    truth: dict[str, set] = {}
    for m in _VERBOSE_SIZE.finditer(plain.stderr):
        truth.setdefault(m["cid"], set()).add((m["name"], int(m["dim"]), m["before"], m["after"]))
    assert truth, plain.stderr[-2000:]

    out = tmp_path / "watch.json"
    subprocess.run(
        [*CLI, "watch", "-f", "json", "-o", str(out), "--", "python", str(STATIC_CACHE)],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "OMP_NUM_THREADS": "1"},
    )
    report = json.loads(out.read_text())
    (f,) = report["functions"]
    # the row names what the user compiled; the code object's own name stays in the JSON
    assert f["function"] == "TinyDecoder.forward"
    assert f["code_name"] == "deprecate_kwarg.<locals>.wrapper.<locals>.wrapped_func"
    call = next(
        i for i, t in enumerate(STATIC_CACHE.read_text().splitlines(), 1) if "logits = model(" in t
    )
    assert f["call_site"] == f"{STATIC_CACHE}:{call}"

    # every size change Dynamo's log shows, per recompile, is among the watch run's failures
    events = {e["compile_id"]: e for e in report["events"]}
    for cid, changes in truth.items():
        seen = set()
        for line in events[cid]["failures"]:
            m = re.search(
                r"tensor '(.+?)' size mismatch at index (\d+)\. expected (\d+), "
                r"actual (\d+)",
                line,
            )
            if m:
                seen.add((m[1], int(m[2]), m[3], m[4]))
        assert seen == changes, cid

    costly = [c for c in f["causes"] if c["recompiles"]]
    # the two causes named first are the batch going 1 -> 2 and the cache length 16 -> 32,
    # each charged with the recompiles whose verbose log shows that change
    first, second = costly[0], costly[1]
    assert (first["source"], first["dim"], first["before"], first["after"]) == (
        "L['kwargs']['input_ids']",
        0,
        "1",
        "2",
    )
    assert (second["source"], second["dim"], second["before"], second["after"]) == (
        "L['kwargs']['past_key_values'].key_cache",
        2,
        "16",
        "32",
    )
    for cause, name in (
        (first, "kwargs['input_ids']"),
        (second, "kwargs['past_key_values'].key_cache"),
    ):
        shown = {
            cid
            for cid, changes in truth.items()
            if any(
                c[0] == name and (str(c[2]), str(c[3])) == (cause["before"], cause["after"])
                for c in changes
            )
        }
        assert set(cause["compile_ids"]) == shown
    kwargs_causes = [c for c in f["causes"] if c["what"] == "length"]
    # len(kwargs) costs only the recompile where nothing else failed (prefill -> decode)
    only_kwargs = [
        cid
        for cid, e in events.items()
        if e["recompile"] and not any("size mismatch" in line for line in e["failures"])
    ]
    assert sorted(kwargs_causes[0]["compile_ids"]) == sorted(only_kwargs)
    # the set of arguments is its own kind; incidental only if it never was alone
    assert [c["kind"] for c in kwargs_causes] == ["arguments_changed"]
    assert kwargs_causes[0]["incidental"] is (not only_kwargs)
    # origins: the tensor's first use, and the kwargs guard's own line
    source = STATIC_CACHE.read_text().splitlines()
    assert source[first["origin"]["line"] - 1].strip() == "b, s = input_ids.shape"
    assert first["origin"]["role"] == "first_use"
    assert "kwargs" in source[kwargs_causes[0]["origin"]["line"] - 1]

    # the table of the same run: its saved report re-rendered (what `watch` prints, see
    # tests/render/test_watch_table.py::test_failed_column_shows_when_a_compile_failed)
    table = subprocess.run(
        [*CLI, "render", str(out)], capture_output=True, text=True, check=True
    ).stdout
    causes_at = table.index("causes (every failing guard")
    assert table.index("size of dim 0 of kwargs['input_ids']: 1 → 2", causes_at) < table.index(
        "the arguments changed: len(kwargs)", causes_at
    )
    use = next(i for i, t in enumerate(source, 1) if t.strip() == "b, s = input_ids.shape")
    assert f"at static_cache_model.py:{use} `b, s = input_ids.shape` (first use)" in table


def test_tiny_llama_with_a_static_cache_names_real_causes(tmp_path):
    """The same on a real transformers Llama built from a config (skipped without transformers):
    the batch change is a named cause, len(kwargs) never outranks a changed size."""
    pytest.importorskip("transformers")
    program = PROGRAMS / "static_cache_llama.py"
    out = tmp_path / "watch.json"
    done = subprocess.run(
        [*CLI, "watch", "-f", "json", "-o", str(out), "--", "python", str(program)],
        capture_output=True,
        text=True,
        env={**os.environ, "OMP_NUM_THREADS": "1"},
    )
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(out.read_text())
    recompiled = [f for f in report["functions"] if f["recompiles"]]
    assert recompiled
    for f in recompiled:
        costly = [c for c in f["causes"] if c["recompiles"]]
        sizes = [i for i, c in enumerate(costly) if c["what"] == "size"]
        lengths = [i for i, c in enumerate(costly) if c["what"] == "length"]
        assert not sizes or not lengths or max(sizes) < min(lengths)
    events = [e for e in report["events"] if e["recompile"]]
    # every batch change Dynamo named is charged to a size cause of dim 0, 1 -> 2
    if any(
        "size mismatch at index 0. expected 1, actual 2" in line
        for e in events
        for line in e["failures"]
    ):
        assert any(
            c["what"] == "size" and c["dim"] == 0 and (c["before"], c["after"]) == ("1", "2")
            for f in recompiled
            for c in f["causes"]
        )
