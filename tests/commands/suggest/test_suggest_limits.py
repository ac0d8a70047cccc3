"""`suggest` stopped by --time-limit or --budget: the best measured so far, honestly labelled.

Nothing here asserts a duration. A time limit far below one candidate's cost stops the search after
its first candidate whatever the machine's speed; a stop at a chosen candidate uses a clock that
reads "over the limit" from that candidate on (``Bench.elapsed`` patched), so the phases after it
are cut short in the same place on every run.
"""

from __future__ import annotations

import json
import os
import pty
import select
import subprocess
import sys

import pytest

from helpers import ROOT
from recompile_probe.commands.suggest import bench
from recompile_probe.commands.suggest.run import suggest
from recompile_probe.scenario.load import load

#: the seed op's two varying dims: 3^2 markings + 5 whole-function strategies (shapes_spec the
#: fifth)
PLANNED = 14


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "recompile_probe", "suggest", *args],
        capture_output=True,
        text=True,
        env={**os.environ, "OMP_NUM_THREADS": "1"},
    )


@pytest.fixture(scope="module")
def untimed(tmp_path_factory):
    """The built-in scenario untimed: µs/call is n/a, so the ranking is the same on every run
    (timed, unbacked_sources may beat the marks on µs alone)."""
    path = tmp_path_factory.mktemp("limits") / "logprobs.yaml"
    path.write_text((ROOT / "configs" / "logprobs.yaml").read_text() + "repeats: 0\n")
    return path


def assert_only_measured_is_reported(data: dict) -> None:
    """What the JSON calls measured was measured; what a limit cut short is not shown."""
    names = [c["name"] for c in data["candidates"]]
    rec = data["recommendation"]
    assert rec is not None and rec["name"] == names[0]
    first = data["candidates"][0]
    for key in ("compiles", "guard_count", "shape_env_guard_count", "outputs_match"):
        assert rec[key] == first[key], key
    assert all(n["variant"] in names for n in data["necessity"])
    if "checks" in data["skipped"]:
        assert data["checks"] is None
        assert not any("torch._check" in line for line in data["change"]["code"])
    if "environment" in data["skipped"] and data["change"] and data["change"]["environment"]:
        assert data["change"]["environment_measured"] is None
        assert data["change"]["environment_note"].startswith("not measured")


@pytest.mark.slow
def test_a_tiny_time_limit_stops_after_the_first_candidate_and_says_so():
    out = _cli("--time-limit", "0.001", "-f", "json")
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)  # stdout is the report only
    assert data["optimal"] is False and data["complete"] is False
    assert data["stopped_by"] == "time_limit" and data["time_limit"] == 0.001
    assert data["planned"] == PLANNED and data["evaluations"] == 1
    assert data["skipped"][0] == "search"
    assert_only_measured_is_reported(data)
    notes = "\n".join(data["notes"])
    assert data["notes"][0].startswith("stopped by --time-limit 0.001 s")
    assert f"1 of {PLANNED} planned candidates measured" in notes
    assert f"not tried: {PLANNED - 1} of the {PLANNED} candidates" in notes
    assert "--time-limit 0 (no limit)" in notes
    # the finalists' µs/call was never measured: not "no figure could change their rank"
    assert "timing" in data["skipped"] and data["timed"] == []
    assert "could change their rank" not in notes
    assert "µs/call measured for 0 of the candidates tied for first: the search stopped" in notes
    # progress: a plain line per candidate on a stderr that is not a terminal, none on stdout
    assert f"[1/{PLANNED}] {data['recommendation']['name']}:" in out.stderr
    assert "[1/" not in out.stdout and "suggest:" not in out.stdout


@pytest.mark.slow
def test_a_stopped_search_in_the_table_says_what_was_not_tried():
    out = _cli("--time-limit", "0.001", "-q")
    assert out.returncode == 0, out.stderr
    assert out.stderr == ""
    # the header wraps where the config's path makes it long: compare words, not line breaks
    first = " ".join(" ".join(out.stdout.splitlines()[:3]).split())
    assert f"1 of {PLANNED} candidates measured" in first
    assert "stopped by --time-limit 0.001 s" in first
    assert "not tried:" in out.stdout and "--time-limit 0 (no limit)" in out.stdout
    # the recompiles left are not claimed to be beyond every marking: most were never tried
    assert "What marking does not fix" not in out.stdout
    assert "the search was stopped" in out.stdout


@pytest.mark.slow
def test_the_default_time_limit_is_the_documented_600_s():
    from typer.testing import CliRunner

    from recompile_probe.cli import app

    shown = CliRunner().invoke(app, ["suggest", "--help"], env={"COLUMNS": "200"})
    assert shown.exit_code == 0, shown.output
    assert "[default: 600" in shown.output


def test_no_time_limit_runs_the_whole_search_to_the_seed_ops_optimum(untimed):
    """--time-limit 0: no limit, the whole search, and the answer the vLLM fix is (the default
    limit's own run of this search is in test_a_time_limit_after_the_search_... below)."""
    unlimited = _cli(str(untimed), "-f", "json", "-q", "--time-limit", "0")
    assert unlimited.returncode == 0, unlimited.stderr
    b = json.loads(unlimited.stdout)
    assert b["time_limit"] is None
    assert b["optimal"] is True and b["complete"] is True
    assert b["stopped_by"] is None and b["skipped"] == []
    assert b["evaluations"] == b["planned"] == PLANNED
    assert not any(n.startswith("stopped by") for n in b["notes"])
    assert {(m["argument"], m["dim"], m["kind"]) for m in b["recommendation"]["marks"]} == {
        (0, 0, "unbacked"),
        (1, 0, "unbacked"),
    }


@pytest.mark.slow
def test_progress_is_a_bar_on_a_terminal_stderr_and_never_on_stdout():
    master, slave = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "recompile_probe", "suggest", "-f", "json", "--time-limit", "0.001"],
        stdout=subprocess.PIPE,
        stderr=slave,
        env={**os.environ, "OMP_NUM_THREADS": "1", "COLUMNS": "120"},
    )
    os.close(slave)
    err = b""
    while True:
        ready, _, _ = select.select([master], [], [], 0.5)
        if ready:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # the child closed its end
                break
            if not chunk:
                break
            err += chunk
        elif proc.poll() is not None:
            break
    out = proc.stdout.read()
    proc.wait()
    os.close(master)
    assert proc.returncode == 0
    data = json.loads(out)
    assert data["evaluations"] == 1
    text = err.decode("utf-8", "replace")
    assert f"1/{PLANNED} candidates" in text  # the bar: measured of planned
    assert "suggest: 1 candidate measured in" in text  # what stays once the bar is gone
    assert "[1/" not in text  # no plain lines on a terminal


def _stop_from(n: int, monkeypatch) -> None:
    """The clock reads past any limit once ``n`` candidates are measured."""
    monkeypatch.setattr(
        bench.Bench, "elapsed", lambda self: 1e9 if len(self.measured) >= n else 0.0
    )


@pytest.mark.slow
def test_a_time_limit_after_the_search_leaves_the_forms_unmeasured(untimed, monkeypatch):
    from recompile_probe.records.suggestion import to_json

    _stop_from(PLANNED, monkeypatch)  # the search ends; its environment form, checks do not
    result = suggest(load(untimed), time_limit=60)
    assert result.stopped_by == "time_limit" and result.complete is False
    assert result.optimal is False  # the minimal answer is not shown in full
    assert result.evaluations == PLANNED and "search" not in result.skipped
    assert {"environment", "checks"} <= set(result.skipped)
    assert result.checks_with is None and result.checks_without is None
    rec = result.recommendation
    assert {(m.argument, m.dim, m.kind) for m in rec.marks} == {
        (0, 0, "unbacked"),
        (1, 0, "unbacked"),
    }
    assert rec.form == "marks"  # its environment form was never measured: no µs from it
    assert len(result.necessity) == 4  # every variant was measured by the search itself
    data = json.loads(to_json(result))
    assert_only_measured_is_reported(data)
    notes = "\n".join(data["notes"])
    assert "not measured: the torch._check lines" in notes
    assert "not measured: the environment form" in notes
    assert "not tried" not in notes
    assert "µs/call not measured: the scenario has repeats: 0" in notes


@pytest.mark.slow
def test_budget_stops_the_same_way_and_says_how_to_go_on(untimed):
    from recompile_probe.records.suggestion import to_json

    result = suggest(load(untimed), budget=5)
    data = json.loads(to_json(result))
    assert data["stopped_by"] == "budget" and data["budget"] == 5
    assert data["optimal"] is False and data["complete"] is False
    assert data["evaluations"] == 5 and data["skipped"][0] == "search"
    assert_only_measured_is_reported(data)
    assert data["notes"][0].startswith("stopped by --budget 5 after ")
    assert f"5 of {PLANNED} planned candidates measured" in data["notes"][0]
    assert any("larger --budget" in n for n in data["notes"])


def test_a_budget_of_six_measures_the_unmarked_candidate_and_every_whole_function_strategy(
    untimed,
):
    """The whole-function strategies come first after the unmarked baseline, so a search cut
    short has them (what a limit leaves out is markings)."""
    from recompile_probe.commands.suggest.search import WHOLE_FUNCTION

    result = suggest(load(str(untimed)), budget=1 + len(WHOLE_FUNCTION))
    assert result.complete is False and result.stopped_by == "budget"
    assert result.evaluations == 1 + len(WHOLE_FUNCTION)
    # each measured, with a status (unsupported where this torch lacks the knob): none was cut
    assert sorted(c.name for c in result.candidates) == sorted(("no marks", *WHOLE_FUNCTION))
    assert {c.whole_function for c in result.candidates} == {None, *WHOLE_FUNCTION}


ONE_SEQUENCE = """
name: one-sequence
target: logprobs.count_greater_than
sequences: {rl: [1, 2, 8, 3]}
strategies: [default]
repeats: 0
"""


def test_a_whole_function_candidates_change_is_code_that_does_what_it_measured(tmp_path):
    """Each whole-function candidate's "the change", pasted into the plain program (a process
    of its own each, tests/programs/apply_change.py), compiles as often as the candidate
    measured: code, not a comment naming the strategy."""
    from helpers import PROGRAMS
    from recompile_probe.commands.suggest.forms import code_for
    from recompile_probe.commands.suggest.search import WHOLE_FUNCTION
    from recompile_probe.strategies.model import symbol_ranges

    path = tmp_path / "one.yaml"
    path.write_text(ONE_SEQUENCE)
    scenario = load(str(path))
    result = suggest(scenario, budget=1 + len(WHOLE_FUNCTION))
    checked = [c for c in result.candidates if c.whole_function and c.status == "ok"]
    changes = []
    for c in checked:
        lines = code_for(
            c,
            "count_greater_than",
            (),
            ["x", "values"],
            result.locations,
            symbol_ranges(scenario.points),
        )
        assert any(not line.startswith("#") for line in lines), lines
        changes.append(json.dumps({"lines": list(lines), "sizes": [1, 2, 8, 3]}))
    done = subprocess.run(
        [sys.executable, str(PROGRAMS / "apply_change.py"), *changes],
        capture_output=True, text=True, timeout=300,
        env={**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)},
    )  # fmt: skip
    assert done.returncode == 0, (changes, done.stderr[-2000:])
    counted = [int(line) for line in done.stdout.split()]
    assert counted == [c.compiles for c in checked], [(c.name, c.compiles) for c in checked]
    assert len(checked) >= 4  # dynamic_true, unbacked_sources, backed_size_oblivious, auto_unbacked
