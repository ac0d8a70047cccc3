"""A strategy's effect judged from everything its run did: a ViT over growing resolutions under
unbacked_sources fails to compile frames (data-dependent guards on the unbacked sizes) and leaves
no cache entry naming the sources, and that is an effect, not "Dynamo ignored them". Checked
against the same program run outside the tool with the same config (its compilation metrics).
Needs transformers (a dev dependency: CI installs it)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from helpers import PROGRAMS, ROOT

pytest.importorskip("transformers")

PROGRAM = PROGRAMS / "vit_resize"
#: the dims of resize.yaml as torch.compiler.config.unbacked_sources writes them, by hand
SOURCES = ",".join(f"L['kwargs']['pixel_values']:{d}" for d in (0, 2, 3))


def _env(**extra):
    return {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT), **extra}


def _plain(*args):
    done = subprocess.run(
        [sys.executable, str(PROGRAM / "model.py"), *args],
        capture_output=True, text=True, env=_env(), timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    path = tmp_path_factory.mktemp("vit") / "report.json"
    done = subprocess.run(
        [sys.executable, "-m", "recompile_probe", "run", str(PROGRAM / "resize.yaml"),
         "-f", "json", "-o", str(path), "-q"],
        capture_output=True, text=True, env=_env(), timeout=900,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    return {run["strategy"]: run for run in json.loads(path.read_text())["runs"]}


def test_failed_compiles_are_an_effect_and_counted_as_the_program_counts_them(runs):
    plain, unbacked = _plain(), _plain(SOURCES)
    assert unbacked["failed"] > 0 and plain["failed"] == 0  # the sources did change the compile
    assert runs["default"]["compiles"] == plain["compiles"]
    run = runs["unbacked_sources"]
    assert (run["compiles"], run["failed_compiles"]) == (unbacked["compiles"], unbacked["failed"])
    assert (
        sorted({e["fail_type"] for e in run["compile_events"] if e["failed"]})
        == (unbacked["fail_types"])
    )
    assert run["no_effect"] is None
    assert not any("no effect" in n for n in run["notes"])


def test_guards_are_na_with_the_reason_where_the_targets_own_frame_never_compiled(runs):
    unbacked = _plain(SOURCES)
    frame_0 = unbacked["frame_0"]
    assert frame_0["compiles"] == frame_0["failed"] >= 1  # the program's own frame 0: all failed
    run = runs["unbacked_sources"]
    assert run["guard_count"] is None and run["shape_env_guard_count"] is None
    (note,) = [n for n in run["notes"] if n.startswith("guards n/a")]
    assert f"never compiled: {frame_0['failed']} attempt(s) failed" in note
    # where the own frame compiled, the figure is there and no such note
    assert runs["default"]["guard_count"] is not None
    assert not any(n.startswith("guards n/a") for n in runs["default"]["notes"])
