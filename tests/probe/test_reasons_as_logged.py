"""The reason of each recompile is the one Dynamo logs for the program run without the tool: a
tiny Qwen2's generate() loop (tests/programs/qwen2_generate), whose first cached entry fails on
two guards at once (the prompt length and the cache's is_initialized flag). Which one Dynamo
names depends on the guard tree's order, which the tool's own look at the entries must leave
alone. Needs transformers (a dev dependency: CI installs it)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest

from helpers import PROGRAMS, ROOT

pytest.importorskip("transformers")

PROGRAM = PROGRAMS / "qwen2_generate"
#: "[0/1] [__recompiles]     - 0/0: tensor 'kwargs['input_ids']' size mismatch ..." per guard
LOGGED = re.compile(r"\[(\d+/\d+)\] \[__recompiles\]\s+- (\d+/\d+: .*?)(?:\s+#.*)?$", re.M)


def _env(**extra):
    return {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT), **extra}


def test_each_recompile_names_the_guards_the_plain_programs_log_names(tmp_path):
    plain = subprocess.run(
        [sys.executable, str(PROGRAM / "model.py")],
        capture_output=True, text=True, env=_env(TORCH_LOGS="recompiles"), timeout=600,
    )  # fmt: skip
    assert plain.returncode == 0, plain.stderr[-3000:]
    logged: dict[str, list[str]] = {}
    for compile_id, failure in LOGGED.findall(plain.stderr):
        logged.setdefault(compile_id, []).append(failure.strip())
    assert len(logged) >= 3, plain.stderr[-2000:]
    out = tmp_path / "report.json"
    done = subprocess.run(
        [sys.executable, "-m", "recompile_probe", "run", str(PROGRAM / "generate.yaml"),
         "-f", "json", "-o", str(out), "-q"],
        capture_output=True, text=True, env=_env(), timeout=900,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    (run,) = json.loads(out.read_text())["runs"]
    reported = {
        e["compile_id"]: [re.sub(r"\s+#.*", "", ln).strip() for ln in e["reason"].split("\n")]
        for e in run["compile_events"]
        if e["recompile"]
    }
    assert reported == logged
    # the call where both guards fail: the program names the prompt length first
    assert logged["0/1"][0].startswith("0/0: tensor 'kwargs['input_ids']' size mismatch")
