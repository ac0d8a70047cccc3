"""Real programs (tests/programs/) under `watch` and `record()`, each against an independent
reference read in its own fresh process: `get_compilation_metrics()` grouped by frame id plus the
`recompiles` log (tests/programs/reference.py, which never imports recompile_probe), and tlparse
on the program's own TORCH_TRACE. Issue 8's "Done when": per function the same compiles,
recompiles, failed compiles and reason texts, and the same compile ids as tlparse.

Every program runs three times (reference with TORCH_TRACE, watch, record), two at a time.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from helpers import PROGRAMS

pytestmark = pytest.mark.slow

TIMEOUT = 240
TLPARSE = shutil.which("tlparse") or shutil.which("tlparse", path=str(Path(sys.executable).parent))

#: program -> extra environment (the user's own settings)
CASES = {
    "limit_then_same_name": {},
    "error_on_recompile": {},
    "fail_on_recompile": {},
    "dataloader_workers": {},
    "verbose_logs": {"TORCH_LOGS": "recompiles_verbose"},
    "graph_break_resume": {},
    "kwargs_model": {},
    "kwargs_transformers": {},
}
#: programs that need a package the project does not depend on
NEEDS = {"kwargs_transformers": "transformers"}
#: programs also run under record() (each run is a fresh interpreter: seconds). record() is the
#: recorder watch installs in its child, entered from Python instead; these cover a limit hit, a
#: resumed graph break and keyword sources, and the rest run under watch only.
RECORDED = {"limit_then_same_name", "graph_break_resume", "kwargs_model", "kwargs_transformers"}
#: programs whose children compile too: only the parent's figures are compared
WITH_CHILDREN = {"dataloader_workers"}
PARENT_ONLY = (
    "the watch report has no per-process sections yet, so the parent's "
    "figures cannot be told apart from its DataLoader workers'"
)


def _programs(names=CASES) -> list:
    return [
        pytest.param(
            name,
            marks=pytest.mark.skipif(
                name in NEEDS and importlib.util.find_spec(NEEDS[name]) is None,
                reason=f"{NEEDS.get(name)} is not installed",
            ),
        )
        for name in names
    ]


_COMMENT = re.compile(r"\s+#.*$")
_COMPILE_ID = re.compile(r"!?\d+/\d+")
_GLOG_PID = re.compile(r"^[VIWEC]\d{4} [\d:.]+\s+(\d+) ")


# --- running the programs ----------------------------------------------------------------------


class Runs:
    """Every (program, kind) run, started two at a time on first use, awaited per test."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._pool = ThreadPoolExecutor(max_workers=2)
        self._futures: dict = {}
        self._lock = threading.Lock()

    def start(self, programs: list[str]) -> None:
        with self._lock:
            for program in programs:
                kinds = (
                    ("reference", "watch", "record")
                    if program in RECORDED
                    else ("reference", "watch")
                )
                for kind in kinds:
                    if (program, kind) not in self._futures:
                        self._futures[program, kind] = self._pool.submit(self._run, program, kind)

    def get(self, program: str, kind: str) -> dict:
        self.start([program])
        return self._futures[program, kind].result()

    def close(self) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)

    def _run(self, program: str, kind: str) -> dict:
        path = PROGRAMS / f"{program}.py"
        work = self.root / f"{program}-{kind}"
        work.mkdir()
        out = work / "out.json"
        env = {
            k: v
            for k, v in os.environ.items()
            if k not in ("TORCH_LOGS", "TORCH_TRACE", "PROGRAM_CAUGHT_OUT")
        }
        env.update(OMP_NUM_THREADS="1", **CASES[program])
        if kind == "reference":
            env["TORCH_TRACE"] = str(work / "trace")
            cmd = [sys.executable, str(PROGRAMS / "reference.py"), str(out), str(path)]
        elif kind == "watch":
            cmd = [
                sys.executable,
                "-m",
                "recompile_probe",
                "watch",
                "--format",
                "json",
                "--output",
                str(out),
                "--",
                "python",
                str(path),
            ]
        else:
            cmd = [sys.executable, str(PROGRAMS / "record_driver.py"), str(out), str(path)]
        began = time.perf_counter()
        proc = subprocess.run(
            cmd, env=env, cwd=work, capture_output=True, text=True, timeout=TIMEOUT
        )
        seconds = time.perf_counter() - began
        if not out.exists():
            raise AssertionError(
                f"{kind} of {program} wrote no report (exit {proc.returncode})"
                f":\n{proc.stderr[-3000:]}"
            )
        data = json.loads(out.read_text())
        data.update(
            _returncode=proc.returncode, _stderr=proc.stderr, _dir=work, _seconds=round(seconds, 1)
        )
        return data


@pytest.fixture(scope="module")
def runs(request, tmp_path_factory):
    runner = Runs(tmp_path_factory.mktemp("real_programs"))
    # start every program the session selected from this file, in test order, two at a time
    selected = [
        item.callspec.params["program"]
        for item in request.session.items
        if item.module is request.module
        and hasattr(item, "callspec")
        and "program" in item.callspec.params
        and not any(m.args and m.args[0] for m in item.iter_markers("skipif"))
    ]
    runner.start(list(dict.fromkeys(selected)))
    yield runner
    runner.close()


# --- figures, per function ---------------------------------------------------------------------


def _reason_lines(text: str | None) -> list[str]:
    """Dynamo's guard-failure lines ("0/1: tensor 'x' ..."), trailing '  # ...' comments off."""
    lines = []
    for line in (text or "").splitlines():
        line = line.strip()
        if line.startswith("- "):
            line = line[2:]
        if _COMPILE_ID.match(line.split(":", 1)[0]) and ": " in line:
            lines.append(_COMMENT.sub("", line))
    return lines


def _name(function: str | None) -> str | None:
    """co_name from the tool's qualified name ("TinyLM.forward", "step [other_step.py:6]")."""
    return None if function is None else function.split(" [")[0].split(".")[-1]


def reference_figures(ref: dict) -> dict:
    assert not ref["unattributed"], f"the reference could not place: {ref['unattributed']}"
    figures = {}
    for frame in ref["frames"].values():
        key = (frame["function"], frame["filename"], frame["line"])
        assert key not in figures, f"two frames share {key}: the reference cannot tell them apart"
        figures[key] = {
            "compiles": frame["compiles"],
            "recompiles": frame["recompiles"],
            "failed": frame["failed"],
            "reasons": sorted(_COMMENT.sub("", r) for r in frame["reasons"]),
        }
    return figures


def tool_figures(functions: list[dict], events: list[dict]) -> dict:
    """Counts from the tool's per-function summary, reason lines from its compile events."""
    figures: dict = {}

    def entry(key):
        return figures.setdefault(key, {"compiles": 0, "recompiles": 0, "failed": 0, "reasons": []})

    for f in functions:
        # keyed by code object, as the reference is: a library wrapper the tool names after
        # what the user compiled keeps its own name in code_name
        e = entry((_name(f.get("code_name") or f["function"]), f["filename"], f["line"]))
        e["compiles"] += f["compiles"]
        e["recompiles"] += f["recompiles"]
        e["failed"] += f["failed"]
    for ev in events:
        entry((ev["function"], ev["filename"], ev["line"]))["reasons"] += _reason_lines(
            ev["reason"]
        )
    for e in figures.values():
        e["reasons"].sort()
    return figures


def refusals_named_by_ref(ref: dict, events: list[dict]) -> list[dict]:
    """The tool's events, less the reasons of stance refusals the reference cannot see.

    2.9's fail_on_recompile error names no guard (2.13's lists them), so the reference has no
    reason for the refusal. The tool reads it from Dynamo's guard check: each such reason must be
    one Dynamo logged for the same frame (its real recompile after the stance), then is left out.
    """
    if not ref.get("caught") or any(
        ln.strip().startswith("- ") for c in ref["caught"] for ln in c["message"].splitlines()
    ):
        return events
    logged = {
        (f["function"], f["filename"], f["line"]): {_COMMENT.sub("", r) for r in f["reasons"]}
        for f in ref["frames"].values()
    }
    kept = []
    for ev in events:
        if ev["failed"] and ev["compile_id"] is None and ev["reason"]:
            lines = _reason_lines(ev["reason"])
            assert lines and set(lines) <= logged.get(
                (ev["function"], ev["filename"], ev["line"]), set()
            ), ev
            ev = {**ev, "reason": None}
        kept.append(ev)
    return kept


def assert_same(got: dict, expected: dict, what: str) -> None:
    diffs = []
    for key in sorted(set(got) | set(expected), key=str):
        g, x = got.get(key), expected.get(key)
        if g != x:
            diffs.append(f"  {key}:\n    expected {x}\n    got      {g}")
    assert not diffs, f"{what} differs from the reference:\n" + "\n".join(diffs)


def parent_section(report: dict) -> dict:
    """The watched program's own (parent) process: functions and events."""
    processes = report.get("processes")
    if isinstance(processes, list) and processes:
        marked = [
            p
            for p in processes
            if p.get("main") or p.get("parent") or p.get("is_parent") or p.get("role") == "parent"
        ]
        return (marked or processes)[0]  # README: the parent first
    pid = report.get("pid")
    if pid is not None and report.get("events") and "pid" in report["events"][0]:
        events = [e for e in report["events"] if e.get("pid") == pid]
        return {
            "functions": [f for f in report["functions"] if f.get("pid", pid) == pid],
            "events": events,
        }
    pytest.xfail(PARENT_ONLY)


def watch_section(program: str, report: dict) -> dict:
    return parent_section(report) if program in WITH_CHILDREN else report


# --- the tests ---------------------------------------------------------------------------------


@pytest.mark.parametrize("program", _programs())
def test_watch_matches_reference(runs, program):
    ref, report = runs.get(program, "reference"), runs.get(program, "watch")
    assert report["exit_code"] == ref["exit"] == 0, report["_stderr"][-3000:]
    section = watch_section(program, report)
    assert_same(
        tool_figures(section["functions"], refusals_named_by_ref(ref, section["events"])),
        reference_figures(ref),
        f"watch on {program}",
    )


@pytest.mark.parametrize("program", _programs(sorted(RECORDED)))
def test_record_matches_reference(runs, program):
    ref, rec = runs.get(program, "reference"), runs.get(program, "record")
    assert rec["error"] is None and ref["exit"] == 0, rec["_stderr"][-3000:]
    events = refusals_named_by_ref(ref, rec["events"])
    assert_same(
        tool_figures(rec["summary"]["functions"], events),
        reference_figures(ref),
        f"record() on {program}",
    )


def _glog_pid(log: Path) -> int | None:
    with log.open(encoding="utf-8") as handle:
        match = _GLOG_PID.match(handle.readline())
    return int(match.group(1)) if match else None


def _tlparse_ids(log: Path, out: Path) -> list[str]:
    """Compile ids tlparse lists for one trace file. A restarted attempt ("[0/0_1]") belongs to
    compile 0/0; "[-/-]" holds what belongs to no compile."""
    subprocess.run(
        [TLPARSE, str(log), "-o", str(out), "--no-browser"],
        check=True,
        capture_output=True,
        timeout=TIMEOUT,
    )
    directory = json.loads((out / "compile_directory.json").read_text())
    return sorted({_COMPILE_ID.search(k).group(0) for k in directory if _COMPILE_ID.search(k)})


def _ids(events: list[dict]) -> list[str]:
    """The events' compile ids; a pid qualifier, if the tool adds one, is not part of the id."""
    return sorted(
        {
            _COMPILE_ID.search(e["compile_id"]).group(0)
            for e in events
            if e["compile_id"] is not None
        }
    )


@pytest.mark.skipif(TLPARSE is None, reason="tlparse is not installed (pip install -e .[dev])")
@pytest.mark.parametrize("program", _programs())
def test_compile_ids_match_tlparse(runs, program):
    ref = runs.get(program, "reference")
    logs = sorted((ref["_dir"] / "trace").glob("*.log"))
    mine = [log for log in logs if _glog_pid(log) == ref["pid"]]
    assert len(mine) == 1, f"expected one trace file of pid {ref['pid']} among {logs}"
    ids = _tlparse_ids(mine[0], ref["_dir"] / "tl")
    assert ids, "tlparse found no compile in the program's trace"
    # the harness itself first: metrics records and tlparse agree, or the reference is wrong
    assert sorted(set(ref["compile_ids"])) == ids
    report = runs.get(program, "watch")
    got = {"watch": _ids(watch_section(program, report)["events"])}
    if program in RECORDED:
        got["record()"] = _ids(runs.get(program, "record")["events"])
    assert got == dict.fromkeys(got, ids), f"tlparse lists {ids}"
    if program in WITH_CHILDREN:  # each worker's ids as tlparse reads that worker's own trace
        children = sorted(
            _tlparse_ids(log, ref["_dir"] / f"tl-{i}")
            for i, log in enumerate(logs)
            if log not in mine
        )
        assert len(children) == 2 and all(children), "the workers compiled nothing"
        parent = watch_section(program, report)
        assert sorted(_ids(p["events"]) for p in report["processes"] if p is not parent) == children


@pytest.mark.parametrize("program", _programs(["kwargs_model", "kwargs_transformers"]))
def test_quoted_source_reason_is_classified(runs, program):
    """`tensor 'kwargs['input_ids']' size mismatch at index 0. expected 1, actual 2`: the batch
    of 1 was specialized (README's zero_one_specialization), never `other`."""
    for kind, events in (
        ("watch", runs.get(program, "watch")["events"]),
        ("record()", runs.get(program, "record")["events"]),
    ):
        recompiles = [e for e in events if e["recompile"]]
        assert recompiles, f"{kind}: no recompile recorded"
        for e in recompiles:
            assert "size mismatch at index 0. expected 1, actual 2" in e["reason"]
            assert e["reason_kind"] == "zero_one_specialization", (
                kind,
                e["reason_kind"],
                e["reason"],
            )
            # Dynamo's text names `kwargs['input_ids']`; the tool writes sources as Dynamo's
            # Source names (README: tensor 'x' -> L['x'])
            assert (e["reason_detail"] or {}).get("source") in (
                "kwargs['input_ids']",
                "L['kwargs']['input_ids']",
            ), (kind, e["reason_detail"])
