"""watch and summarize against independent counts: in-process metrics, a TORCH_TRACE read back,
and tlparse where installed."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

FIXTURE = Path(__file__).parent / "fixtures" / "known_compiles.py"
EXAMPLE = Path(__file__).parent.parent / "examples" / "sampler_loop.py"
CLI = [sys.executable, "-m", "recompile_probe"]
EXPECTED = {"first": (2, 1, 2, 2), "torch_dynamo_resume_in_first_at_16": (2, 1, 2, 0),
            "second": (2, 1, 2, 0)}  # compiles, recompiles, graphs, graph breaks


def _figures(report: dict) -> dict:
    return {f["function"].split(".")[-1].split(" [")[0]:
            (f["compiles"], f["recompiles"], f["graphs"], f["graph_breaks"])
            for f in report["functions"]}


def test_watch_summarize_and_metrics_agree(tmp_path):
    truth = subprocess.run([sys.executable, str(FIXTURE), "--metrics"], capture_output=True,
                           text=True, check=True).stdout
    metrics = json.loads(truth.split("METRICS ", 1)[1])
    assert {k: (v["compiles"], v["recompiles"]) for k, v in metrics.items()} == \
        {k: v[:2] for k, v in EXPECTED.items()}

    out = tmp_path / "watch.json"
    watched = subprocess.run([*CLI, "watch", "-f", "json", "-o", str(out), "--", "python",
                              str(FIXTURE)], capture_output=True, text=True)
    assert watched.returncode == 0, watched.stderr
    report = json.loads(out.read_text())
    assert _figures(report) == EXPECTED
    by = {f["function"]: f for f in report["functions"]}
    assert by["first"]["cache_entries"] == 2 and by["second"]["cache_entries"] == 2
    assert [r["kind"] for r in by["second"]["reasons"]] == ["dtype_change"]
    assert by["first"]["reasons"][0]["kind"] == "zero_one_specialization"

    trace = tmp_path / "trace"
    subprocess.run([sys.executable, str(FIXTURE)], env={**os.environ, "TORCH_TRACE": str(trace)},
                   check=True, capture_output=True)
    summary = subprocess.run([*CLI, "summarize", str(trace), "-f", "json"], capture_output=True,
                             text=True)
    assert summary.returncode == 0, summary.stderr
    summarized = json.loads(summary.stdout)
    assert _figures(summarized) == EXPECTED
    assert summarized["skipped_lines"] == 0

    tlparse = shutil.which("tlparse") or shutil.which("tlparse",
                                                      path=str(Path(sys.executable).parent))
    if tlparse:
        (log,) = list(trace.glob("*.log"))
        subprocess.run([tlparse, str(log), "-o", str(tmp_path / "tl"), "--no-browser"],
                       check=True, capture_output=True)
        # tlparse lists restarted attempts (a graph break restarts analysis) as "0/0_1"
        ids = {k.strip("[]").split("_")[0] for k in json.loads(
            (tmp_path / "tl" / "compile_directory.json").read_text()) if "-" not in k}
        assert ids == {e["compile_id"] for e in summarized["events"]}


def test_summarize_tolerates_truncation_and_unknown_records(tmp_path):
    trace = tmp_path / "trace"
    subprocess.run([sys.executable, str(FIXTURE)], env={**os.environ, "TORCH_TRACE": str(trace)},
                   check=True, capture_output=True)
    (log,) = list(trace.glob("*.log"))
    text = log.read_text()
    damaged = tmp_path / "damaged.log"
    damaged.write_text('V1129 00:00:00.000000 1 x.py:1] {"some_future_record": {}}\n'
                       "not a trace line\n" + text[: int(len(text) * 0.75)] + '\nV1129 {"trunc')
    result = subprocess.run([*CLI, "summarize", str(damaged), "-f", "json"],
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["skipped_lines"] >= 2
    assert data["functions"]  # what was complete is still summarised


def test_summarize_needs_no_torch(tmp_path):
    trace = tmp_path / "trace"
    subprocess.run([sys.executable, str(FIXTURE)], env={**os.environ, "TORCH_TRACE": str(trace)},
                   check=True, capture_output=True)
    code = ("import sys; sys.modules['torch'] = None\nfrom recompile_probe.cli import main\n"
            "sys.argv = ['recompile-probe', 'summarize', sys.argv[1]]; main()")
    result = subprocess.run([sys.executable, "-c", code, str(trace)], capture_output=True,
                            text=True)
    assert result.returncode == 0, result.stderr
    assert "first" in result.stdout and "recompiles" in result.stdout


def test_example_loop_budget_exits_1_and_fixed_loop_exits_0():
    buggy = subprocess.run([*CLI, "watch", "--max-recompiles", "0", "--", "python",
                            str(EXAMPLE)], capture_output=True, text=True)
    assert buggy.returncode == 1
    assert "served 12 batches" in buggy.stdout  # the program's own stdout is untouched
    assert "zero_one_specialization" in buggy.stderr
    assert "size mismatch at index 0. expected 1, actual 4" in buggy.stderr
    fixed = subprocess.run([*CLI, "watch", "--max-recompiles", "0", "--", "python",
                            str(EXAMPLE), "--fixed"], capture_output=True, text=True)
    assert fixed.returncode == 0, fixed.stderr
    assert "0 recompiles" in fixed.stderr


def test_a_failing_program_keeps_its_exit_code_and_gets_its_table():
    result = subprocess.run([*CLI, "watch", "--", "python", str(FIXTURE), "--raise"],
                            capture_output=True, text=True)
    assert result.returncode == 1
    assert "RuntimeError: the program failed after compiling" in result.stderr
    assert "second" in result.stderr and "dtype_change" in result.stderr


def test_interrupted_program_still_gets_its_table():
    proc = subprocess.Popen([*CLI, "watch", "--", "python", str(FIXTURE), "--sleep"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    assert proc.stdout.readline().strip() == "ready"
    time.sleep(0.2)
    os.killpg(proc.pid, signal.SIGINT)  # what Ctrl-C does: the whole foreground group
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130
    assert "interrupted" in err and "second" in err


def test_filter_and_module_form(tmp_path):
    out = tmp_path / "r.json"
    result = subprocess.run([*CLI, "watch", "--filter", "sec*", "-f", "json", "-o", str(out),
                             "--", "python", str(FIXTURE)], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert [f["function"] for f in json.loads(out.read_text())["functions"]] == ["second"]


def test_nothing_to_watch_is_a_usage_error():
    result = subprocess.run([*CLI, "watch"], capture_output=True, text=True)
    assert result.returncode == 2 and "nothing to watch" in result.stderr
