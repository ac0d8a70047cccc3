"""The tests' warm CLI runner (warm_cli.py) against a fresh interpreter: the same report
figures, exit codes and streams, and the calls it must not fork run fresh."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

import warm_cli

pytestmark = pytest.mark.slow

RUN = [sys.executable, "-m", "recompile_probe", "run", "-s", "default,mark_unbacked",
       "--sequence", "1,2,8", "-q", "-f", "json"]  # fmt: skip
#: what differs between two runs of the same scenario whatever runs them
MASKED = {"compile_time_ms", "steady_state_us", "steady_state_min_us", "steady_state_p90_us",
          "eager_us", "eager_min_us", "guard_check_us", "guard_latency_us", "steady_state_noisy",
          "eager_noisy", "calls", "compile_events", "entries", "notes"}  # fmt: skip


def _figures(stdout: str) -> list[dict]:
    return [{k: v for k, v in r.items() if k not in MASKED} for r in json.loads(stdout)["runs"]]


def test_a_forked_run_reports_what_a_fresh_interpreter_reports():
    forked = subprocess.run(RUN, capture_output=True, text=True, timeout=300)
    assert warm_cli.last == "forked"
    fresh = warm_cli.REAL_RUN(RUN, capture_output=True, text=True, timeout=300)
    assert forked.returncode == fresh.returncode == 0, forked.stderr + fresh.stderr
    assert _figures(forked.stdout) == _figures(fresh.stdout)
    default, unbacked = (r["compiles"] for r in json.loads(forked.stdout)["runs"])
    assert default > unbacked >= 1  # the B=1 specialization recompiles; the marks do not


def test_a_usage_error_keeps_its_exit_code_and_streams_apart():
    args = [sys.executable, "-m", "recompile_probe", "run", "--format", "nope"]
    forked = subprocess.run(args, capture_output=True, text=True, timeout=120)
    assert warm_cli.last == "forked"
    fresh = warm_cli.REAL_RUN(args, capture_output=True, text=True, timeout=120)
    assert forked.returncode == fresh.returncode == 2
    assert forked.stdout == fresh.stdout == ""
    assert "nope" in forked.stderr and forked.stderr.strip() == fresh.stderr.strip()


def test_calls_it_must_not_fork_run_fresh(monkeypatch):
    version = [sys.executable, "-m", "recompile_probe", "--version"]
    # a variable torch reads at import that the session does not have
    env = {**os.environ, "TORCH_LOGS": "recompiles"}
    subprocess.run(version, capture_output=True, env=env, timeout=120)
    assert warm_cli.last == "fresh"
    subprocess.run([sys.executable, "-c", "pass"], capture_output=True, timeout=60)
    assert warm_cli.last == "fresh"
    monkeypatch.setenv(warm_cli.SWITCH, "0")
    subprocess.run(version, capture_output=True, timeout=60)
    assert warm_cli.last == "fresh"
