"""The TORCH_TRACE reader: the same events as the live recorder, from the trace alone."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from helpers import PROGRAMS
from recompile_probe.commands.summarize import summarize
from recompile_probe.recording.trace import read

PROGRAM = textwrap.dedent("""
    import json, sys, torch

    def step(x):
        return x * 2

    def other(x):
        return x - 1

    torch._dynamo.config.recompile_limit = 2
    limited = torch.compile(step, backend="eager", dynamic=False)
    for n in (1, 2, 3, 4):
        limited(torch.ones(n))
    torch.compile(other, backend="eager")(torch.ones(2))
    from torch._dynamo.utils import get_compilation_metrics
    frames = {}
    for m in get_compilation_metrics():
        f = frames.setdefault(str(m.compile_id).split("/")[0],
                              {"names": set(), "compiles": 0, "failed": 0, "ids": []})
        f["compiles"] += 1
        f["failed"] += m.fail_type is not None
        f["ids"].append(str(m.compile_id))
        if m.co_name:
            f["names"].add(m.co_name)
    print(json.dumps({k: {**v, "names": sorted(v["names"])} for k, v in frames.items()}))
""")


@pytest.mark.slow
def test_summarize_puts_a_limit_hit_under_the_function_that_hit_it(tmp_path):
    program = tmp_path / "prog.py"
    program.write_text(PROGRAM)
    trace = tmp_path / "trace"
    out = subprocess.run(
        [sys.executable, str(program)],
        capture_output=True,
        text=True,
        env={**os.environ, "TORCH_TRACE": str(trace)},
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    frames = json.loads(out.stdout.strip().splitlines()[-1])
    report = summarize(trace)
    functions = {f.function: f for f in report.functions}
    assert set(functions) == {"step", "other"}  # nothing under "?"
    for frame in frames.values():
        (name,) = frame["names"]
        assert (functions[name].compiles, functions[name].failed) == (
            frame["compiles"],
            frame["failed"],
        )
    assert functions["step"].recompile_limit_hit and functions["step"].recompiles == 2
    assert [e.compile_id for e in report.events] == [i for f in frames.values() for i in f["ids"]]


def _line(envelope: dict, payload: str | None = None) -> str:
    text = "V1130 12:00:00.000000 1 torch/x.py:1] " + json.dumps(envelope) + "\n"
    return text + ("".join(f"\t{p}\n" for p in payload.splitlines()) if payload else "")


def test_graphs_of_a_restarted_attempt_are_not_counted(tmp_path):
    # Dynamo restarts a compile as [0/0_1]; attempt 0's output graph never reached the backend.
    ids = {"frame_id": 0, "frame_compile_id": 0}
    metrics = {
        "compile_id": "0/0",
        "co_name": "f",
        "co_filename": "f.py",
        "co_firstlineno": 1,
        "cache_size": 0,
        "fail_type": None,
    }
    trace = tmp_path / "t.log"
    trace.write_text(
        _line({"dynamo_output_graph": {}, **ids, "attempt": 0}, "graph")
        + _line({"dynamo_output_graph": {}, **ids, "attempt": 1}, "graph")
        + _line({"compilation_metrics": metrics, **ids, "attempt": 1})
    )
    (event,) = read(trace).events
    assert event.graphs == 1


LINE_PROGRAM = PROGRAMS / "line_origins.py"


def _marked(name: str) -> int:
    return next(
        i
        for i, text in enumerate(LINE_PROGRAM.read_text().splitlines(), 1)
        if text.rstrip().endswith(f"# LINE:{name}")
    )


def _trace_records(directory: Path) -> list[dict]:
    """The trace's JSON envelopes, read here with json alone (not the tool's reader)."""
    out = []
    for path in directory.rglob("*.log"):
        for line in path.read_text().splitlines():
            if not line.startswith("\t") and "] {" in line:
                try:
                    out.append(json.loads(line.split("] ", 1)[1]))
                except json.JSONDecodeError:
                    pass
    return out


@pytest.mark.slow
def test_summarize_and_watch_name_the_user_lines(tmp_path):
    trace = tmp_path / "trace"
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    out = tmp_path / "watch.json"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "recompile_probe",
            "watch",
            "-f",
            "json",
            "-o",
            str(out),
            "--trace-dir",
            str(trace),
            "--",
            "python",
            str(LINE_PROGRAM),
        ],
        check=True,
        capture_output=True,
        text=True,
        env=env,
    )
    watched = json.loads(out.read_text())
    summary = tmp_path / "summary.json"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "recompile_probe",
            "summarize",
            "-f",
            "json",
            "-o",
            str(summary),
            str(trace),
        ],
        check=True,
        capture_output=True,
        text=True,
    )
    summarized = json.loads(summary.read_text())

    # Dynamo's own records in the trace: the lines its guard_added_fast and
    # symbolic_shape_specialization user stacks name (file index -> path from "str" records)
    records = _trace_records(trace)
    files = {r["str"][1]: r["str"][0] for r in records if "str" in r}
    added = {
        (
            files[r["guard_added_fast"]["user_stack"][-1]["filename"]],
            r["guard_added_fast"]["user_stack"][-1]["line"],
        )
        for r in records
        if r.get("guard_added_fast", {}).get("user_stack")
    }
    program = str(LINE_PROGRAM)
    assert (program, _marked("branch")) in added and (program, _marked("range")) in added

    for report in (watched, summarized):
        functions = {f["function"]: f for f in report["functions"]}
        f = functions["f"]
        reason_lines = {r["text"]: r["origin"] for r in f["reasons"]}
        branch = next(o for t, o in reason_lines.items() if "x.size()[0]" in t)
        assert (branch["file"], branch["line"]) == (program, _marked("branch"))
        assert branch["code"] == "if x.shape[0] > 4: # LINE:branch"
        specs = {(s["source"], s["value"]): s["origin"] for s in f["specializations"]}
        assert set(specs) == {("L['n']", 2), ("L['n']", 3)}
        assert {(o["file"], o["line"], o["role"]) for o in specs.values()} == {
            (program, _marked("range"), "specialized")
        }
        breaks = [
            (b["origin"]["file"], b["origin"]["line"], b["origin"]["function"])
            for b in f["graph_break_origins"]
        ]
        assert breaks == [(program, _marked("graph_break"), "inner")]
        assert "graph_break()" in f["graph_break_origins"][0]["reason"]
        events = [e for e in report["events"] if e["recompile"] and e["function"] == "f"]
        assert all(e["reason_origins"] and all(e["reason_origins"]) for e in events)
    # summarize's specializations carry Dynamo's reason; in-process it is n/a (None)
    spec = summarized["functions"][0]["specializations"][0]
    assert spec["reason"] == "range_refined_to_singleton"


@pytest.mark.slow
def test_summarize_reads_every_failing_guard_of_a_verbose_trace(tmp_path):
    """watch turns recompiles_verbose on, so its traces join each entry's failing parts with
    "; ": summarize gives the same reason (first per entry), failures and causes as watch."""
    program = PROGRAMS / "static_cache_model.py"
    trace, out = tmp_path / "trace", tmp_path / "watch.json"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "recompile_probe",
            "watch",
            "-f",
            "json",
            "-o",
            str(out),
            "--trace-dir",
            str(trace),
            "--",
            "python",
            str(program),
        ],
        check=True,
        capture_output=True,
        text=True,
        env={**os.environ, "OMP_NUM_THREADS": "1"},
    )
    watched = json.loads(out.read_text())
    raw = "\n".join(p.read_text() for p in trace.rglob("*.log"))
    assert "recompile_reasons" in raw
    (trace_read,) = [read(p) for p in trace.rglob("*.log")]
    ours = {e.compile_id: e for e in trace_read.events if e.recompile}
    theirs = {e["compile_id"]: e for e in watched["events"] if e["recompile"]}
    assert set(ours) == set(theirs) and len(ours) == 5
    for cid, event in ours.items():
        assert event.reason == theirs[cid]["reason"]
        assert list(event.failures) == theirs[cid]["failures"]
    summary = summarize(trace)
    (f,) = summary.functions
    labels = [c.label for c in f.causes if c.recompiles]
    assert labels == [c["label"] for c in watched["functions"][0]["causes"] if c["recompiles"]]


AUTOGRAD_PROGRAM = textwrap.dedent("""
    import torch
    torch._dynamo.config.compiled_autograd = True
    lin = torch.nn.Linear(4, 4)

    @torch.compile(backend="eager")
    def forward(x):
        loss = lin(x).relu().sum()
        loss.backward()
        return loss

    for n in (2, 3, 4):
        forward(torch.randn(n, 4))
""")


@pytest.mark.slow
def test_compiled_autograd_graphs_count_under_their_own_functions(tmp_path):
    """Under compiled autograd torch writes ``compiled_autograd_id`` into every envelope; the
    graphs of its forwards belong to their own compiles (``!0/1/0``), not to none."""
    program = tmp_path / "prog.py"
    program.write_text(AUTOGRAD_PROGRAM)
    trace = tmp_path / "trace"
    out = subprocess.run(
        [sys.executable, str(program)],
        capture_output=True,
        text=True,
        env={**os.environ, "TORCH_TRACE": str(trace)},
        timeout=180,
    )
    assert out.returncode == 0, out.stderr
    records = _trace_records(trace)

    def ident(e: dict) -> tuple:
        return (e.get("compiled_autograd_id"), e.get("frame_id"), e.get("frame_compile_id"))

    # the truth, from the envelopes alone: each compile's output graphs of its last attempt,
    # under the code object its metrics record names
    last: dict[tuple, int] = {}
    for e in records:
        if "dynamo_output_graph" in e:
            last[ident(e)] = max(last.get(ident(e), 0), e.get("attempt") or 0)
    graphs: dict[tuple, int] = {}
    for e in records:
        if "dynamo_output_graph" in e and (e.get("attempt") or 0) == last[ident(e)]:
            graphs[ident(e)] = graphs.get(ident(e), 0) + 1
    expected: dict[tuple, int] = {}
    for e in records:
        if m := e.get("compilation_metrics"):
            where = (m["co_name"], m["co_filename"], m["co_firstlineno"])
            expected[where] = expected.get(where, 0) + graphs.get(ident(e), 0)
    assert sum(1 for e in records if e.get("compiled_autograd_id") is not None) > 0

    report = summarize(trace)
    assert {(f.function, f.filename, f.line): f.graphs for f in report.functions} == expected
    assert sum(expected.values()) == sum(1 for e in records if "dynamo_output_graph" in e)
    autograd = [e for e in report.events if e.compile_id and e.compile_id.startswith("!")]
    assert autograd and all(e.graphs == 1 for e in autograd)
