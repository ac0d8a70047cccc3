"""A suite that checks its own recompiles log (transformers' pattern: set_logs, a handler on
``torch._dynamo.guards``, set_logs() again) passes or fails exactly as without the tool, and its
captured logs are the same records, under `watch` and under the pytest plugin."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import PROGRAMS

pytestmark = pytest.mark.slow

PYTEST = [
    sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly",
    "-rP", "--log-level=DEBUG", "test_own_log.py",
]  # fmt: skip
CLI = [sys.executable, "-m", "recompile_probe"]


def _run(cmd: list[str], where: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTEST_ADDOPTS", "TORCH_LOGS")}
    env.pop("PYTEST_XDIST_WORKER", None)
    return subprocess.run(cmd, cwd=where, env=env, capture_output=True, text=True, timeout=300)


def _records(stdout: str) -> list[str]:
    """The captured log records pytest printed, in order, times and pids masked."""
    lines = [ln for ln in stdout.splitlines() if re.match(r"(DEBUG|INFO|WARNING|ERROR) ", ln)]
    return [re.sub(r"\d+\.\d+|\b\d{3,}\b", "<n>", ln) for ln in lines]


SIZE = r"size mismatch at index 0\. expected (\d+), actual (\d+)"


def _logged(stdout: str) -> list[tuple[str, str]]:
    """(expected, actual) of the first failing guard of each recompile message (the newest
    entry's, which Dynamo lists first)."""
    return re.findall(r"guard 0 failures:\s*- \d+/\d+: tensor 'x' " + SIZE, stdout)


@pytest.fixture(scope="module")
def suite(tmp_path_factory) -> Path:
    where = tmp_path_factory.mktemp("own_log")
    shutil.copy(PROGRAMS / "own_log_check" / "cases.py", where / "test_own_log.py")
    return where


def test_the_suites_log_checks_see_the_same_records_under_watch_and_the_plugin(suite, tmp_path):
    plain = _run(PYTEST, suite)
    watch_json = tmp_path / "watch.json"
    watched = _run([*CLI, "watch", "-q", "-f", "json", "-o", str(watch_json), "--", *PYTEST], suite)
    plugin = _run([*PYTEST, f"--recompile-report={tmp_path / 'plugin.json'}"], suite)

    assert plain.returncode == 0 and "4 passed" in plain.stdout, plain.stdout[-2000:]
    for run in (watched, plugin):
        assert run.returncode == 0 and "4 passed" in run.stdout, run.stdout[-2000:]
        assert _records(run.stdout) == _records(plain.stdout)
    records = _records(plain.stdout)
    assert sum("Recompiling function" in r for r in records) >= 3  # the records compared exist

    # each recompile the program logged itself is one the report names, with the same guard
    report = json.loads(watch_json.read_text())
    reasons = [r for f in report["functions"] for r in f["reasons"]]
    named = [m for r in reasons for m in re.findall(SIZE, r["text"] if isinstance(r, dict) else r)]
    assert set(_logged(plain.stdout)) <= set(named)
