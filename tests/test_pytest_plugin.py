"""The pytest plugin, driven through pytester like a user's own test suite."""

from __future__ import annotations

import json

import pytest

pytestmark = pytest.mark.slow

SAMPLER = """
import pytest
import torch

@torch.compile(backend="eager", dynamic=True)
def count_greater_than(x, values):
    return (x >= values).sum(-1)

def make_inputs(b):
    return torch.randn(b, 64), torch.randn(b, 1)

def marked(b):
    x, v = make_inputs(b)
    torch._dynamo.decorators.mark_unbacked(x, 0)
    torch._dynamo.decorators.mark_unbacked(v, 0)
    return x, v
"""


def test_marker_fails_a_recompiling_test_and_passes_a_clean_one(pytester):
    pytester.makepyfile(
        SAMPLER
        + """
@pytest.mark.max_recompiles(0, reset=True)
def test_vllm_before_the_fix():
    for b in (1, 2, 8):
        count_greater_than(*make_inputs(b))

@pytest.mark.max_recompiles(0, reset=True)
def test_vllm_after_the_fix():
    for b in (1, 2, 8):
        count_greater_than(*marked(b))

@pytest.mark.max_compiles(1, reset=True)
def test_max_compiles_holds():
    for b in (1, 2, 8):
        count_greater_than(*marked(b))
"""
    )
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(
        [
            "*test_vllm_before_the_fix*",
            "*torch.compile budget exceeded: max_recompiles(0): 1 recompiles*",
            "*tensor 'x' size mismatch at index 0. expected 1, actual 2*",
        ]
    )


def test_fixture_and_report(pytester, tmp_path):
    pytester.makepyfile(
        SAMPLER
        + """
def test_uses_fixture(recompile_recorder):
    torch._dynamo.reset()
    for b in (1, 2, 8):
        count_greater_than(*make_inputs(b))
    assert recompile_recorder.recompiles == 1
    assert recompile_recorder.compiles == 2
    assert recompile_recorder.graphs == 2
    (f,) = recompile_recorder.by_function()
    assert f.function == "count_greater_than"

def test_plain():
    assert True
"""
    )
    report = tmp_path / "recompiles.json"
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", f"--recompile-report={report}")
    result.assert_outcomes(passed=2)
    data = json.loads(report.read_text())
    by = {t["nodeid"].split("::")[1]: t for t in data["tests"]}
    assert by["test_uses_fixture"]["recompiles"] == 1
    (reason,) = by["test_uses_fixture"]["functions"][0]["reasons"]
    origin = reason.pop("origin")  # where x was first used: a static size has no creating line
    assert reason == {
        "kind": "zero_one_specialization",
        "count": 1,
        "text": "tensor 'x' size mismatch at index 0. expected 1, actual 2",
        "masked": False,  # no object id in a size guard's text
    }
    assert origin["role"] == "first_use" and origin["function"] == "count_greater_than"
    assert by["test_plain"]["compiles"] == 0


def test_bad_marker_argument_is_a_usage_error(pytester):
    pytester.makepyfile("""
import pytest

@pytest.mark.max_recompiles("zero")
def test_x():
    pass
""")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    assert result.ret != 0
    result.stderr.fnmatch_lines(["*takes one non-negative integer*"])


def test_fixture_and_marker_nested_both_see_every_compile(pytester, tmp_path):
    # Two recorders at once (the fixture's around the marker's): each sees the same compiles,
    # and Dynamo's own records (grouped by frame id) agree with both.
    pytester.makepyfile(
        SAMPLER
        + """
from torch._dynamo.utils import get_compilation_metrics

@pytest.mark.max_recompiles(0, reset=True)
def test_nested(recompile_recorder):
    before = len(get_compilation_metrics())
    for b in (1, 2, 8):
        count_greater_than(*make_inputs(b))
    records = get_compilation_metrics()[before:]
    assert recompile_recorder.compiles == len(records) == 2
    assert recompile_recorder.recompiles == sum((m.cache_size or 0) > 0 for m in records) == 1
"""
    )
    report = tmp_path / "figures.json"
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", f"--recompile-report={report}")
    result.assert_outcomes(failed=1)  # the marker's budget, not the body's asserts
    result.stdout.fnmatch_lines(["*max_recompiles(0): 1 recompiles*"])
    (test,) = json.loads(report.read_text())["tests"]
    assert (test["compiles"], test["recompiles"]) == (2, 1)


# --- scenario files as items ---------------------------------------------------------------------

GATE = """
name: gate
target: logprobs.count_greater_than
params: {vocab_size: 64}
sequences: {rl: [1, 2, 8]}
strategies: [mark_unbacked, default, as_is]
repeats: 3
expect:
  mark_unbacked: {max_recompiles: 0}
  default: {max_recompiles: 0}
"""


def test_scenario_items_pass_fail_and_skip_with_check_s_verdicts(pytester, tmp_path):
    import torch

    from helpers import hand_count
    from recompile_probe.targets.logprobs import count_greater_than

    pytester.makefile(".yaml", recompile_gate=GATE)  # collected by its name alone
    report = tmp_path / "items.json"
    result = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "-rs", f"--recompile-report={report}"
    )
    result.assert_outcomes(passed=1, failed=1, skipped=1)
    result.stdout.fnmatch_lines(
        [
            "*_ gate[[]rl-default[]] _*",
            "Budget violations",
            "*gate*rl*default*max_recompiles*≤ 0*1*call 1 (B 1 → 2): 0/0: tensor 'x' size mismatch "
            "at index 0. expected 1, actual 2*",
            "*1 budgets checked: 1 violated*",
            "SKIPPED [[]1[]] recompile_gate.yaml*as_is is unsupported in this torch: the target is "
            "not torch.compile'd*",
        ]
    )
    assert "Captured log" not in result.stdout.str()
    tests = {t["strategy"]: t for t in json.loads(report.read_text())["tests"]}
    assert {s: t["verdict"] for s, t in tests.items()} == {
        "mark_unbacked": "passed",
        "default": "failed",
        "as_is": "skipped",
    }
    # the figures are Dynamo's: an independent CompileCounter over the same op and sequence
    make = lambda b: (torch.randn(b, 64), torch.randn(b, 1))  # noqa: E731
    graphs, _ = hand_count(count_greater_than, make, (1, 2, 8))
    assert tests["default"]["run"]["compiles"] == graphs == 2
    assert tests["default"]["run"]["recompiles"] == graphs - 1
    marked, _ = hand_count(
        count_greater_than,
        make,
        (1, 2, 8),
        batch_dims={0: [0], 1: [0]},
        mark=torch._dynamo.decorators.mark_unbacked,
    )
    assert tests["mark_unbacked"]["run"]["compiles"] == marked == 1
    assert tests["default"]["run"]["violations"][0]["budget"] == "max_recompiles"


def test_scenario_items_markers_ini_patterns_and_explicit_paths(pytester):
    pytester.makefile(".yaml", recompile_gate=GATE)
    pytester.mkdir("ci").joinpath("gate2.yaml").write_text(
        GATE.replace("name: gate", "name: gate2")
    )
    r = pytester.runpytest_subprocess(
        "-p",
        "no:cacheprovider",
        "--collect-only",
        "-q",
        "-m",
        "recompile_probe and default",
        "--strict-markers",
    )
    r.stdout.fnmatch_lines(["recompile_gate.yaml::gate[[]rl-default[]]", "*1/3 tests*"])
    r = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "--collect-only", "-q", "--recompile-scenarios", "ci"
    )
    r.stdout.fnmatch_lines(["*6 tests collected*"])
    assert "ci/gate2.yaml::gate2[rl-as_is]" in r.stdout.str()
    pytester.makeini("[pytest]\nrecompile_scenarios = ci/*.yaml\n")
    r = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--collect-only", "-q")
    r.stdout.fnmatch_lines(["*3 tests collected*"])
    assert "gate2" in r.stdout.str() and "recompile_gate" not in r.stdout.str()
    pytester.path.joinpath("recompile_bad.yaml").write_text("target: nope.nothing\n")
    pytester.makeini("[pytest]\n")
    r = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--collect-only", "-q")
    assert r.ret != 0
    r.stdout.fnmatch_lines(["*recompile_bad.yaml*"])
    assert "Traceback" not in r.stdout.str()


@pytest.mark.slow
@pytest.mark.exhaustive
def test_xdist_items_equal_serial_items_and_check_for_two_shipped_configs(pytester, monkeypatch):
    """The seed op's config (three of its strategies: every run is made three times here; each
    of its strategies is counted against a CompileCounter in tests/test_configs.py) and the
    budgets config (runs that pass and runs that violate): serial pytest, `pytest -n 2` and
    `check` agree on every run's counts, status, reasons and violations (timings and
    per-process ids excluded: tests/comparable.py). Sequences are not shortened."""
    import subprocess
    import sys

    from helpers import copy_configs
    from recompile_probe.commands import shard
    from recompile_probe.commands.check import load_all
    from recompile_probe.records.report import reports_from_json, run_from_dict

    pytest.importorskip("xdist")
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    configs = copy_configs(
        pytester.path / "configs",
        {"logprobs.yaml", "ci_budgets.yaml"},
        "[default, mark_dynamic, mark_unbacked]",
    )
    outcomes, runs = {}, {}
    for mode, extra in (("serial", []), ("xdist", ["-n", "2"])):
        out = pytester.path / f"{mode}.json"
        r = pytester.runpytest_subprocess(
            "-p",
            "no:cacheprovider",
            *extra,
            "--recompile-scenarios",
            "configs",
            f"--recompile-report={out}",
        )
        outcomes[mode] = r.parseoutcomes()
        tests = json.loads(out.read_text())["tests"]
        runs[mode] = [
            (t["nodeid"], t["verdict"], _comparable(run_from_dict(t["run"]))) for t in tests
        ]
    assert outcomes["serial"] == {
        k: v for k, v in outcomes["xdist"].items() if k in outcomes["serial"]
    }
    assert runs["serial"] == runs["xdist"]
    assert len(runs["serial"]) == len(shard.plan(load_all([configs], None, None)))
    live = subprocess.run(
        [sys.executable, "-m", "recompile_probe", "check", "configs", "-q", "--json", "live.json"],
        cwd=pytester.path,
        capture_output=True,
        text=True,
    )
    checked = [
        _comparable(run)
        for rep in reports_from_json((pytester.path / "live.json").read_text())
        for run in rep.runs
    ]
    assert [c for _, _, c in runs["serial"]] == checked
    assert [v for _, v, _ in runs["serial"]].count("failed") == sum(
        bool(c["violations"]) for c in checked
    )
    assert live.returncode == (1 if any(c["violations"] for c in checked) else 0)


def _comparable(run):
    from dataclasses import asdict

    from comparable import comparable

    return comparable(asdict(run))


def test_rank_divergence_marker_fails_a_distributed_test(pytester, tmp_path):
    """Ranks started by torch.multiprocessing.spawn (no RANK variable: told by their process
    group) from a subprocess of the test; each rank's figures against its own metrics."""
    from helpers import PROGRAMS

    program = PROGRAMS / "ranks.py"
    pytester.makepyfile(
        f"""
import subprocess, sys
import pytest

@pytest.mark.fail_on_rank_divergence
def test_two_ranks():
    subprocess.run([sys.executable, {str(program)!r}, "spawn", {str(tmp_path)!r}], check=True)

@pytest.mark.fail_on_rank_divergence
def test_not_distributed():
    assert True
"""
    )
    report, junit = tmp_path / "recompiles.json", tmp_path / "junit.xml"
    result = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", f"--recompile-report={report}", f"--junitxml={junit}"
    )
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        [
            "*fail_on_rank_divergence: Ranks that compiled differently: 2 functions differ*",
            "*first parting: rank 1*static_size_change*",
            "*risk: rank 1 recompiled `step`*",
        ]
    )
    tests = {t["nodeid"].split("::")[1]: t for t in json.loads(report.read_text())["tests"]}
    assert tests["test_not_distributed"]["rank_divergence"] is None
    divs = {d["function"]: d for d in tests["test_two_ranks"]["rank_divergence"]}
    assert set(divs) == {"step", "limited"}
    for rank in (0, 1):
        truth = json.loads((tmp_path / f"truth_rank_{rank}.json").read_text())
        for name, d in divs.items():
            fig = d["by_rank"][str(rank)]
            assert (fig["compiles"], fig["failed"]) == (
                truth[name]["compiles"],
                truth[name]["failed"],
            )
            assert fig["recompile_limit_hit"] == (truth[name]["limit_hit"] > 0)
    xml = junit.read_text()
    assert 'name="rank_divergence"' in xml and "rank 1 recompiled `step`" in xml


def test_the_report_keeps_the_final_collection_order(pytester, tmp_path):
    """Another plugin reorders and deselects after collection: the report lists the tests in
    the order that ran them, as the conftest itself saw it, deselected ones absent."""
    pytester.makeconftest(
        """
import json, pytest

@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config, items):
    items.reverse()

def pytest_collection_finish(session):
    with open("seen.json", "w") as f:
        json.dump([i.nodeid for i in session.items], f)
"""
    )
    pytester.makepyfile(
        "\n".join(f"def test_{name}():\n    pass\n" for name in ("a", "b", "c", "d"))
    )
    out = tmp_path / "report.json"
    result = pytester.runpytest(
        "-p", "no:cacheprovider", "-k", "not test_c", f"--recompile-report={out}"
    )
    result.assert_outcomes(passed=3, deselected=1)
    seen = json.loads((pytester.path / "seen.json").read_text())
    reported = [t["nodeid"] for t in json.loads(out.read_text())["tests"]]
    assert reported == seen and len(seen) == 3 and seen[0].endswith("test_d")
