"""`watch -- python -m pytest`, `summarize` and the pytest plugin on a real TestCase suite.

The suite (tests/programs/dynamo_suite) is built the way projects test compile behaviour, on
torch._dynamo.test_case.TestCase: metrics logging off, Dynamo reset and counters cleared around
every test. Its cases: more compiles than Dynamo's metrics deque keeps, a recompile limit, a limit
under fullgraph, a reset inside a test (frame ids reused by another function), counters cleared
between compiles, two tests that each define their own `f` (one breaks the graph), a failing
test. Its own conftest (the truth plugin, written for these tests)
records per test what Dynamo did, from Dynamo's own records and the suite's counting backend;
every figure the tool prints is held to that truth, per function and per test.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from helpers import PROGRAMS

pytestmark = pytest.mark.slow

SUITE = PROGRAMS / "dynamo_suite"
CLI = [sys.executable, "-m", "recompile_probe"]
PYTEST = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly"]
FIGURES = ("compiles", "recompiles", "failed", "graphs", "graph_breaks")


@pytest.fixture(scope="module")
def suite(tmp_path_factory) -> Path:
    """The suite copied out of this repository (its own folder, its own rootdir)."""
    where = tmp_path_factory.mktemp("suite")
    shutil.copy(SUITE / "truth_plugin.py", where / "conftest.py")
    shutil.copy(SUITE / "suite_truth.py", where / "suite_truth.py")
    shutil.copy(SUITE / "cases.py", where / "test_cases.py")
    return where


@pytest.fixture(scope="module")
def plain(suite, tmp_path_factory) -> tuple[subprocess.CompletedProcess, Path, Path]:
    """The suite run on its own once, with its truth and a TORCH_TRACE (which writes files only):
    (the run, its truth file, its trace folder), shared by the tests that read a plain run."""
    where = tmp_path_factory.mktemp("plain")
    truth, trace = where / "truth.jsonl", where / "trace"
    return _run(PYTEST, suite, truth, TORCH_TRACE=str(trace)), truth, trace


def _run(cmd: list[str], where: Path, truth: Path, **env: str) -> subprocess.CompletedProcess:
    environment = {**os.environ, "TRUTH_OUT": str(truth), **env}
    environment.pop("PYTEST_ADDOPTS", None)
    environment.pop("PYTEST_XDIST_WORKER", None)
    return subprocess.run(
        cmd, cwd=where, env=environment, capture_output=True, text=True, timeout=600
    )


def _truth(path: Path) -> list[dict]:
    tests = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    assert len(tests) == 8, tests
    return tests


def _key(function: str, filename: str, line: int) -> str:
    return f"{function}|{filename}|{line}"


def _text(reason: str) -> str:
    """A failing guard as a summary shows it: no "N/M: " entry, no "  # ..." comment."""
    return reason.split(": ", 1)[-1].split("  #", 1)[0].strip()


def _totals(tests: list[dict]) -> dict[str, dict]:
    out: dict[str, dict] = {}
    for test in tests:
        for key, f in test["functions"].items():
            total = out.setdefault(key, {k: 0 for k in (*FIGURES, "limit_hits")} | {"reasons": []})
            for k in (*FIGURES, "limit_hits"):
                total[k] += f[k]
            total["reasons"] += f["reasons"]
    return out


def _figures(functions: list[dict]) -> dict[str, tuple]:
    return {
        _key(f["function"], f["filename"], f["line"]): (
            *(f[k] for k in FIGURES),
            f["recompile_limit_hit"],
        )
        for f in functions
    }


def _expected(truth: dict[str, dict]) -> dict[str, tuple]:
    return {k: (*(f[k2] for k2 in FIGURES), f["limit_hits"] > 0) for k, f in truth.items()}


def _reasons_of_events(events: list[dict]) -> Counter:
    """Per function, the first failing guard of each recompile that compiled (as Dynamo's own
    metrics record names it: recompile_reason)."""
    return Counter(
        (_key(e["function"], e["filename"], e["line"]), _text(e["reason"].splitlines()[0]))
        for e in events
        if e["recompile"] and not e["failed"] and e["reason"]
    )


def _reasons_of_truth(truth: dict[str, dict]) -> Counter:
    return Counter((k, _text(r)) for k, f in truth.items() for r in f["reasons"])


def test_the_truth_is_what_the_suite_was_built_to_do(plain):
    """The truth plugin sees the cases as written (so nothing below compares against nothing)."""
    done, truth, _ = plain
    assert done.returncode == 1 and "1 failed, 7 passed" in done.stdout, done.stdout
    total = _totals(_truth(truth))
    by_name = {k.split("|")[0]: v for k, v in total.items()}
    assert by_name["many"]["compiles"] == 70 > 64  # past the deque Dynamo keeps
    assert by_name["limited"]["limit_hits"] == by_name["after_reset"]["limit_hits"] == 1
    assert by_name["full"]["limit_hits"] == 1 and by_name["full"]["failed"] == 1
    assert by_name["broken"]["graph_breaks"] == 2
    local = {k: v["graph_breaks"] for k, v in total.items() if k.startswith("f|")}
    assert sorted(local.values()) == [0, 1]  # two functions named f, one graph break between them


def test_watch_on_the_suite_matches_its_truth_and_leaves_its_output_alone(suite, plain, tmp_path):
    plain, _, _ = plain
    report = tmp_path / "watch.json"
    watched = _run(
        [*CLI, "watch", "-q", "-f", "json", "-o", str(report), "--", *PYTEST],
        suite,
        tmp_path / "watched.jsonl",
    )

    # the program's own output and exit code, unchanged (durations masked)
    def masked(text: str) -> str:
        return re.sub(r"\d+\.\d+s\b", "<t>s", text)

    assert watched.returncode == plain.returncode == 1
    assert masked(watched.stdout) == masked(plain.stdout)
    assert watched.stderr == plain.stderr
    truth = _totals(_truth(tmp_path / "watched.jsonl"))
    data = json.loads(report.read_text())
    assert _figures(data["functions"]) == _expected(truth)
    assert _reasons_of_events(data["events"]) == _reasons_of_truth(truth)


def test_summarize_of_the_suites_trace_matches_its_truth(plain):
    done, truth_file, trace = plain
    assert done.returncode == 1, done.stderr
    summary = subprocess.run(
        [*CLI, "summarize", str(trace), "-f", "json"], capture_output=True, text=True
    )
    assert summary.returncode == 0, summary.stderr
    data = json.loads(summary.stdout)
    truth = _totals(_truth(truth_file))
    assert _figures(data["functions"]) == _expected(truth)
    assert _reasons_of_events(data["events"]) == _reasons_of_truth(truth)
    assert data["skipped_lines"] == 0


def test_the_pytest_plugin_matches_the_truth_of_every_test(suite, tmp_path):
    out = tmp_path / "report.json"
    done = _run([*PYTEST, "--recompile-report", str(out)], suite, tmp_path / "truth.jsonl")
    assert done.returncode == 1, done.stdout
    truth = {t["nodeid"]: t["functions"] for t in _truth(tmp_path / "truth.jsonl")}
    tests = {t["nodeid"]: t for t in json.loads(out.read_text())["tests"]}
    assert set(tests) == set(truth)
    for nodeid, functions in truth.items():
        got = tests[nodeid]
        assert _figures(got["functions"]) == _expected(functions), nodeid
        assert got["compiles"] == sum(f["compiles"] for f in functions.values()), nodeid
        assert got["graphs"] == sum(f["graphs"] for f in functions.values()), nodeid
        reasons = Counter(
            (_key(f["function"], f["filename"], f["line"]), r["text"])
            for f in got["functions"]
            for r in f["reasons"]
            for _ in range(r["count"])
            if r["kind"] != "recompile_limit_hit"
        )
        assert reasons == _reasons_of_truth(functions), nodeid


# watch over pytest-xdist's workers is also covered by the pytest plugin's own xdist test and by
# test_watch.py's child-process tests; this runs the whole suite a fifth time
@pytest.mark.exhaustive
def test_watch_on_the_suite_under_xdist_matches_its_truth_across_workers(suite, tmp_path):
    """pytest -n 2: each worker is a child process with its own section; their functions
    together are the suite's truth (written by the truth plugin in each worker)."""
    report = tmp_path / "watch.json"
    watched = _run(
        [*CLI, "watch", "-q", "-f", "json", "-o", str(report), "--", *PYTEST, "-n", "2"],
        suite,
        tmp_path / "truth.jsonl",
    )
    assert watched.returncode == 1, watched.stdout + watched.stderr
    data = json.loads(report.read_text())
    workers = [p for p in data["processes"] if p["functions"]]
    assert len(workers) == 2  # the tests ran in both workers, none in the parent
    assert not data["functions"]
    merged: dict[str, tuple] = {}
    for process in workers:
        for key, figures in _figures(process["functions"]).items():
            assert key not in merged, key  # every function's tests ran in one worker
            merged[key] = figures
    assert merged == _expected(_totals(_truth(tmp_path / "truth.jsonl")))
