"""One attribution rule, whoever holds the evidence: the same recompiles of one program get the
same user lines under `run`, `explain`, `watch`, `summarize` (a TORCH_TRACE log) and `record()`,
and those lines are the ones the program marks (``# LINE:<name>``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import PROGRAMS

pytestmark = pytest.mark.slow

PROGRAM = PROGRAMS / "line_origins.py"
CLI = [sys.executable, "-m", "recompile_probe"]
SCENARIO = f"""
name: line-origins
target: {PROGRAM}:f
factory: {PROGRAM}:make_inputs
dims: {{B: {{0: [0]}}, N: {{}}}}
# the program's own calls: x of size 8, 3, 9 and n = 2, 2, 3, compiled with dynamic=True
sequences: {{s: [{{B: 8, N: 2}}, {{B: 3, N: 2}}, {{B: 9, N: 3}}]}}
strategies: [dynamic_true]
repeats: 0
"""


def _marked(name: str) -> int:
    lines = PROGRAM.read_text().splitlines()
    return next(i for i, line in enumerate(lines, 1) if line.rstrip().endswith(f"# LINE:{name}"))


def _firsts(events: list[dict]) -> list[tuple]:
    """Per recompile of f, in order: (file name, line, role) of its first failing guard."""
    out = []
    for e in events:
        if e.get("recompile") is False or e.get("function") not in (None, "f"):
            continue
        origins = e.get("reason_origins") or [None]
        o = origins[0]
        out.append(None if o is None else (Path(o["file"]).name, o["line"], o["role"]))
    return out


def _cli(*args: str, cwd: Path, env: dict | None = None) -> subprocess.CompletedProcess:
    done = subprocess.run(
        [*CLI, *args], cwd=cwd, capture_output=True, text=True, env=env, timeout=600
    )
    assert done.returncode == 0, done.stderr
    return done


# six readers of one program compared: each reader's lines are also checked on its own in
# tests/provenance/test_origins.py and tests/recording/test_trace.py
@pytest.mark.exhaustive
def test_every_reader_gives_the_marked_lines(tmp_path):
    expected = [
        ("line_origins.py", _marked("branch"), "created"),  # x: 8 -> 3 flips the branch
        ("line_origins.py", _marked("range"), "specialized"),  # n: 2 -> 3, range(n) unrolled
    ]
    scenario = tmp_path / "line_origins.yaml"
    scenario.write_text(SCENARIO)
    found = {}

    ran = json.loads(_cli("run", str(scenario), "-q", "-f", "json", cwd=tmp_path).stdout)
    (run,) = ran["runs"]
    found["run"] = _firsts([e for e in run["compile_events"] if e["recompile"]])

    explained = _cli(
        "explain", str(scenario), "--strategy", "dynamic_true", "-q", "-f", "json", cwd=tmp_path
    )
    (x,) = json.loads(explained.stdout)["explanations"]
    found["explain"] = _firsts(x["recompile_reasons"])

    out = tmp_path / "watch.json"
    _cli("watch", "-f", "json", "-o", str(out), "--", sys.executable, str(PROGRAM), cwd=tmp_path)
    found["watch"] = _firsts([e for e in json.loads(out.read_text())["events"] if e["recompile"]])

    trace = tmp_path / "trace"
    subprocess.run(
        [sys.executable, str(PROGRAM)],
        env={**os.environ, "TORCH_TRACE": str(trace)},
        check=True,
        capture_output=True,
    )
    summary = json.loads(_cli("summarize", str(trace), "-f", "json", cwd=tmp_path).stdout)
    found["summarize"] = _firsts([e for e in summary["events"] if e["recompile"]])

    dump = tmp_path / "record.json"
    subprocess.run(
        [sys.executable, str(PROGRAMS / "record_driver.py"), str(dump), str(PROGRAM)],
        check=True,
        capture_output=True,
        timeout=600,
    )
    recorded = json.loads(dump.read_text())
    assert recorded["error"] is None
    found["record"] = _firsts([e for e in recorded["events"] if e["recompile"]])

    assert found == {reader: expected for reader in found}
