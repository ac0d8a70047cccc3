"""The first failing guard `watch` gives each recompile is the one Dynamo's own recompiles log
names for the program run without the tool, in the order the program recompiled (the log of a
plain run with TORCH_LOGS=recompiles is the oracle; compile ids repeat after a reset)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest

from helpers import PROGRAMS, ROOT

pytestmark = pytest.mark.slow

PROGRAM = PROGRAMS / "tensor_scalar_swap.py"
#: the message's compile id and its first "- N/M: guard" line
FIRST = re.compile(
    r"\[(\d+/\d+)\] \[__recompiles\] Recompiling function.*?\n.*?triggered by.*?\n"
    r".*?\[__recompiles\]\s+- (\d+/\d+: .*?)(?:\s+#.*)?$",
    re.M,
)


def _env(**extra):
    env = {k: v for k, v in os.environ.items() if k != "TORCH_LOGS"}
    return {**env, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT), **extra}


def test_each_recompiles_first_guard_is_the_one_the_plain_programs_log_names(tmp_path):
    plain = subprocess.run(
        [sys.executable, str(PROGRAM)],
        capture_output=True, text=True, env=_env(TORCH_LOGS="recompiles"), timeout=300,
    )  # fmt: skip
    assert plain.returncode == 0, plain.stderr[-3000:]
    logged = [(cid, re.sub(r"\d{6,}", "<id>", g.strip())) for cid, g in FIRST.findall(plain.stderr)]
    assert len(logged) == 6 and "check_type_id" in logged[-1][1], plain.stderr[-3000:]
    out = tmp_path / "watch.json"
    done = subprocess.run(
        [sys.executable, "-m", "recompile_probe", "watch", "-q", "-f", "json", "-o", str(out),
         "--", sys.executable, str(PROGRAM)],
        capture_output=True, text=True, env=_env(), timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout == plain.stdout
    data = json.loads(out.read_text())
    # the program's own CompileCounter frame counts, printed per setting
    counted = sum(int(line.split()[1]) for line in plain.stdout.splitlines())
    assert [f["compiles"] for f in data["functions"]] == [counted]
    events = data["events"]
    reported = [
        (
            e["compile_id"],
            re.sub(r"\d{6,}", "<id>", re.sub(r"\s+#.*", "", e["reason"].split("\n")[0]).strip()),
        )
        for e in events
        if e["recompile"]
    ]
    assert reported == logged
