"""The `watch` table (render/lines/functions.py, shared by every format) on real programs,
against counts read independently in a plain run of the same program: Dynamo's graph_break
counter, torch._dynamo.explain's graph breaks, and get_compilation_metrics() via
tests/programs/reference.py (which never imports recompile_probe)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from helpers import PROGRAMS

pytestmark = pytest.mark.slow

CLI = [sys.executable, "-m", "recompile_probe"]


def _watch(tmp_path, program, fmt):
    out = tmp_path / f"{program}.{fmt}"
    done = subprocess.run(
        [*CLI, "watch", "-f", fmt, "-o", str(out), "--", "python", str(PROGRAMS / program)],
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert done.returncode == 0, done.stderr
    return out.read_text()


def _render(saved, fmt):
    """`render` of a saved watch report (no torch, no program run)."""
    done = subprocess.run(
        [*CLI, "render", str(saved), "-f", fmt], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def _table(text):
    """The function table as {"function where": {header: cell}}, headers joined over their
    lines."""
    lines = text.splitlines()
    rule = next(i for i, line in enumerate(lines) if set(line) == {"─"})
    head = lines[1:rule]
    rows = []
    for line in lines[rule + 1 :]:
        if not line.strip() or not line[0].isalpha() or "  " not in line:
            break
        rows.append(line)
    # every column but the first two is right-aligned: a column ends where its cells end
    ends = sorted({m for r in rows for m in _ends(r)})
    names = []
    start = 0
    for end in ends:
        names.append(" ".join(h[start:end].strip() for h in head if h[start:end].strip()))
        start = end
    return {
        " ".join(r.split()[:2]): dict(
            zip(names, (r[a:b].strip() for a, b in zip([0, *ends], ends)))
        )
        for r in rows
    }


def _ends(row):
    ends, inside = [], False
    for i, ch in enumerate(row + " "):
        if ch != " " and not inside:
            inside = True
        elif ch == " " and inside and (row[i : i + 2] == "  " or i == len(row)):
            inside = False
            ends.append(i)
    return ends


def test_graph_breaks_are_counted_as_dynamo_counts_them_and_as_they_are_seen(tmp_path):
    truth = json.loads(
        subprocess.run(
            [sys.executable, str(PROGRAMS / "data_dependent_break.py"), "--truth"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.split("TRUTH ", 1)[1]
    )
    # the program is what its docstring says: a break the counter leaves out, one it counts
    assert truth == {
        "branchy": {"counter": 0, "explain": 1},
        "explicit": {"counter": 2, "explain": 2},
    }
    report = json.loads(_watch(tmp_path, "data_dependent_break.py", "json"))
    by = {f["function"]: f for f in report["functions"]}
    for name, want in truth.items():
        assert by[name]["dynamo_graph_breaks"] == want["counter"], name
        assert by[name]["graph_breaks"] == want["explain"], name
        # the listing below the table never contradicts the seen count
        assert sum(b["count"] for b in by[name]["graph_break_origins"]) == want["explain"]

    text = _render(tmp_path / "data_dependent_break.py.json", "table")
    table = _table(text)
    for name, want in truth.items():
        (cells,) = [c for key, c in table.items() if key.split()[0] == name]
        assert cells["graph breaks seen"] == str(want["explain"]), cells
        assert cells["graph breaks (Dynamo)"] == str(want["counter"]), cells
    assert "failed" not in next(iter(table.values()))  # nothing failed: no column of zeros
    assert "graph_break counter" in text  # the legend says why the two differ
    assert "graph break at data_dependent_break.py:19" in text


def test_failed_column_shows_when_a_compile_failed(tmp_path):
    out = tmp_path / "reference.json"
    subprocess.run(
        [
            sys.executable,
            str(PROGRAMS / "reference.py"),
            str(out),
            str(PROGRAMS / "limit_then_same_name.py"),
        ],
        capture_output=True,
        check=True,
        timeout=240,
    )
    records = json.loads(out.read_text())["records"]
    failed_truth = sum(1 for m in records if m["fail_type"] is not None)
    assert failed_truth >= 1
    text = _watch(tmp_path, "limit_then_same_name.py", "table")
    table = _table(text)
    assert all("failed" in cells for cells in table.values())
    assert sum(int(cells["failed"]) for cells in table.values()) == failed_truth
    # a saved report re-renders as watch printed it: the same table from the JSON, without
    # running the program again (every other format from it too: markdown below)
    _watch(tmp_path, "limit_then_same_name.py", "json")
    assert _render(tmp_path / "limit_then_same_name.py.json", "table") == text
    markdown = _render(tmp_path / "limit_then_same_name.py.json", "markdown")
    assert "| recompiles | failed |" in markdown
