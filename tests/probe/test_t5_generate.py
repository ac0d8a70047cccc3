"""An encoder-decoder's generate() loop (tests/programs/t5_generate: a tiny T5, random weights):
generate() runs the encoder and builds decoder_input_ids itself, and the cross-attention cache's
flags change between steps. The default run's compiles and failed compiles are the plain
program's (Dynamo's compilation metrics, a counting backend), and explain offers as a fix only
the strategy the same report measured with fewer compiles. Needs transformers (a dev dependency)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from helpers import PROGRAMS, ROOT

pytest.importorskip("transformers")
pytestmark = pytest.mark.slow

PROGRAM = PROGRAMS / "t5_generate"


def _env():
    return {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)}


def _cli(*args):
    done = subprocess.run(
        [sys.executable, "-m", "recompile_probe", *args],
        capture_output=True, text=True, env=_env(), timeout=900,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def test_t5_generate_counts_are_the_programs_and_the_fix_offered_is_one_measured_better(tmp_path):
    plain = subprocess.run(
        [sys.executable, str(PROGRAM / "model.py"), "--count"],
        capture_output=True, text=True, env=_env(), timeout=600,
    )  # fmt: skip
    assert plain.returncode == 0, plain.stderr[-3000:]
    truth = json.loads(plain.stdout.strip().splitlines()[-1])
    report = tmp_path / "report.json"
    # default: the program's counts; dynamic_true: the strategy explain offers
    _cli(
        "run",
        str(PROGRAM / "generate.yaml"),
        "-s",
        "default,dynamic_true",
        "-f",
        "json",
        "-o",
        str(report),
        "-q",
    )
    runs = {r["strategy"]: r for r in json.loads(report.read_text())["runs"]}
    default = runs["default"]
    assert (default["compiles"], default["failed_compiles"]) == (truth["compiles"], truth["failed"])
    assert default["graphs"] == truth["frames"]  # the counting backend's graphs
    assert truth["failed"] >= 1  # the program hits its recompile limit: a failed compile
    doc = json.loads(
        _cli(
            "explain",
            "--from-report",
            str(report),
            str(PROGRAM / "generate.yaml"),
            "-s",
            "default",
            "-f",
            "json",
        )  # fmt: skip
    )
    (explained,) = doc["explanations"]
    compiles = {name: r["compiles"] for name, r in runs.items()}
    offered = {f["strategy"] for r in explained["recompile_reasons"] for f in r["fixes"]}
    assert offered == {"dynamic_true"}, "dynamic_true removes the last prefill's recompiles"
    assert compiles["dynamic_true"] < compiles["default"], compiles
