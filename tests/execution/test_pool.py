"""--jobs N: a pool of reused worker processes gives --isolate process's report apart from the
timing fields, for every shipped config; a run in a reused worker equals the same run in a fresh
process; jobs come back in order; the flag's usage errors. Real torch, real subprocesses."""

from __future__ import annotations

import json
import os
import re
import runpy
import subprocess
import sys
from dataclasses import replace

import pytest

from comparable import TIMING_FIELDS, comparable, without_timings
from helpers import CONFIGS, FIXTURES
from recompile_probe.errors import EagerFailure, UsageError
from recompile_probe.execution.executor import Job, scenario_jobs
from recompile_probe.execution.session import open_pool, parse_jobs, run_jobs, run_scenario
from recompile_probe.records.report import to_json
from recompile_probe.scenario.load import load
from recompile_probe.scenario.overrides import with_overrides
from recompile_probe.strategies.model import Strategy

pytestmark = pytest.mark.slow

SHIPPED = sorted(p.name for p in CONFIGS.glob("*.yaml"))
#: the configs also run serially, one process per run, to compare with the pool: the seed op, a
#: driver over two symbols and a user callable, each on the strategies named (None: all of
#: them). A serial run costs a fresh interpreter per run (seconds of imports each); every
#: shipped config still goes through the pool below, and the reuse test further down puts five
#: strategies through one worker against fresh processes.
COMPARED = {
    "logprobs.yaml": ("default", "mark_unbacked"),
    "prefill_decode_generate.yaml": ("default", "mark_unbacked"),
    "user_callable.yaml": None,
}


def _data(report) -> dict:
    return comparable(json.loads(to_json(report)))


#: the timing fields as docs/run-and-ci.md lists them, written out here so that the mask under
#: test is not its own oracle
DOCUMENTED_TIMINGS = {
    "latency_us",
    "compile_time_ms",
    "guard_latency_us",
    "eager_us",
    "eager_min_us",
    "eager_noisy",
    "guard_check_us",
    "seconds",  # "coverage's `seconds`"
}


def _documented_timings_out(data: object) -> object:
    if isinstance(data, dict):
        return {
            k: _documented_timings_out(v)
            for k, v in data.items()
            if k not in DOCUMENTED_TIMINGS and not k.startswith("steady_state_")
        }
    if isinstance(data, list):
        return [_documented_timings_out(v) for v in data]
    return data


def test_timing_fields_are_what_differs_between_two_identical_runs():
    """The fields left out are the documented wall-clock figures and nothing else: two inline
    runs of the same scenario differ in no other field, the mask removes exactly those, and
    every one of them is in the JSON."""
    scenario = with_overrides(
        load(None), strategies=["default"], sequence=[1, 2, 8], cover="B=1..64"
    )
    first, second = (json.loads(to_json(run_scenario(scenario))) for _ in range(2))
    assert _documented_timings_out(first) == _documented_timings_out(second)
    assert without_timings(first) == _documented_timings_out(first)
    run = first["runs"][0]
    assert run["compiles"] >= 1 and run["recompiles"] >= 1 and run["graphs"] >= 1  # not vacuous
    present = set(run) | set(run["calls"][0]) | set(run["compile_events"][0]) | set(run["coverage"])
    assert TIMING_FIELDS <= present, TIMING_FIELDS - present


def test_addresses_are_what_differs_between_two_processes():
    """Two --isolate process runs of a target whose guards check object identity: their reports
    differ (Dynamo writes id() into the guard text) and are equal once comparable() masks it."""
    scenario = with_overrides(
        load(CONFIGS / "ci_budgets.yaml"), strategies=["default"], sequence=[1, 2]
    )
    first, second = (
        json.loads(to_json(run_scenario(scenario, isolate="process", timeout=300)))
        for _ in range(2)
    )
    texts = [g["text"] for r in first["runs"] for e in r["entries"] for g in e["guards"]]
    assert any(re.search(r"___check_obj_id\(G\['torch'\], \d+\)", t) for t in texts), texts
    assert comparable(first) == comparable(second)


@pytest.fixture(scope="module")
def pooled_reports():
    """Every shipped config (eager) through ONE pool of 2 workers, config after config: workers
    are reused across scenarios, as `check --jobs 2 configs/` reuses them."""
    reports, costs = {}, None
    with open_pool(2, timeout=300) as pool:
        for name in SHIPPED:
            scenario = with_overrides(load(CONFIGS / name), backend="eager")
            reports[name] = run_scenario(scenario, pool=pool)
        costs, started = list(pool.costs), pool.started
    return reports, costs, started


@pytest.mark.exhaustive
@pytest.mark.parametrize("name", COMPARED)
def test_jobs_2_equals_isolate_process_for_three_configs(name, pooled_reports):
    """The JSON report, timing fields left out, equals `--jobs 1 --isolate process` (backend
    eager): the whole report where every strategy runs serially, else every run of the strategies
    that do. Full sequences: none is shortened."""
    reports, _, _ = pooled_reports
    pooled, strategies = reports[name], COMPARED[name]
    overrides = {"backend": "eager"} | ({"strategies": list(strategies)} if strategies else {})
    serial = run_scenario(
        with_overrides(load(CONFIGS / name), **overrides), isolate="process", timeout=300
    )
    assert serial.complete and pooled.complete
    assert {r.isolation for r in pooled.runs} == {"process"}
    if strategies is None:
        assert _data(pooled) == _data(serial)
        return
    chosen = [r for r in pooled.runs if r.strategy in strategies]
    assert [(r.strategy, r.sequence_name) for r in chosen] == [
        (r.strategy, r.sequence_name) for r in serial.runs
    ]
    for ran, fresh in zip(chosen, serial.runs, strict=True):
        assert _run_data(ran) == _run_data(fresh), (ran.strategy, ran.sequence_name)


@pytest.mark.exhaustive
def test_the_pool_reused_its_workers(pooled_reports):
    reports, costs, started = pooled_reports
    runs = sum(len(r.runs) for r in reports.values())
    assert all(r.status != "error" for rep in reports.values() for r in rep.runs)
    assert started == 2 and len(costs) == runs  # no run ended in error: no worker replaced
    assert len({c.worker for c in costs}) == 2
    assert sum(c.import_s is not None for c in costs) == 2  # one start per worker


# --- reuse: a run after other strategies in the same worker equals the run in a fresh process --

REUSE = """
    target: user_targets.py:project
    factory: user_targets.py:make_project_inputs
    batch_dims: {0: [0]}
    sequences: {s: [1, 2, 8, 3]}
    repeats: 3
    strategies: [default, mark_unbacked, unbacked_sources, eager_after, limit1]
    custom_strategies:
      eager_after: {extends: default, stance: eager_on_recompile}
      limit1: {extends: default, config: {torch._dynamo.config.recompile_limit: 1}}
"""


@pytest.mark.exhaustive
def test_a_run_in_a_reused_worker_equals_the_run_in_a_fresh_process(write_scenario, tmp_path):
    """One worker runs every strategy (a mark, a config patch, a stance, a recompile limit, on a
    target with a module-level nn.Linear), then all of them again in reverse order, so each
    strategy's second run comes after every other strategy in that process. Both rounds must
    equal the same run in a fresh process (--isolate process: one process per strategy): counts,
    statuses, reasons, cache entries and guards, every field but the timings."""
    (tmp_path / "user_targets.py").write_text(
        (tmp_path / "user_targets.py").read_text()
        + "\n\ndef make_project_inputs(b):\n    return (torch.randn(b, 16),)\n"
    )
    scenario = load(write_scenario(REUSE))
    fresh = {r.strategy: r for r in run_scenario(scenario, isolate="process", timeout=300).runs}
    jobs = scenario_jobs(scenario)
    jobs = jobs + jobs[::-1]
    with open_pool(1) as pool:
        runs = list(run_jobs(jobs, pool=pool))
        assert pool.started == 1 and len({c.worker for c in pool.costs}) == 1
    assert [r.strategy for r in runs] == [j.strategy for j in jobs]
    # ok, or unsupported where this torch lacks a knob (e.g. 2.9's unbacked_sources): the same
    # in the fresh process, which the comparison below checks run by run
    assert "ok" in {r.status for r in runs} and {r.status for r in runs} <= {"ok", "unsupported"}
    assert any(r.recompiles for r in runs) and any(r.entries for r in runs)  # not vacuous
    for run in runs:
        assert _run_data(run) == _run_data(fresh[run.strategy]), run.strategy


def _run_data(run) -> dict:
    import dataclasses

    return comparable(json.loads(json.dumps(dataclasses.asdict(run))))


# --- the library API ----------------------------------------------------------------------------


def test_run_jobs_yields_in_order_across_scenarios_and_candidate_strategies():
    """What `suggest` does: strategies the scenario file does not have (a candidate built in
    code), and jobs of two scenarios in one list. Runs come back in the jobs' order, on_run sees
    each once, and the figures equal an inline run of the same scenario."""
    base = load(None)
    candidate = Strategy(
        "hint8",
        "mark_unbacked with hint_override=8",
        mark="unbacked",
        mark_options={"hint_override": 8},
    )
    with_candidate = replace(
        base,
        custom_strategies={**base.custom_strategies, "hint8": candidate},
        strategies=("hint8", "default"),
    )
    other = with_overrides(load(CONFIGS / "non_batch_dim.yaml"), strategies=["mark_unbacked"])
    jobs = [
        Job(with_candidate, "hint8", "chat"),
        Job(other, "mark_unbacked", "rl"),
        Job(with_candidate, "default", "rl"),
        Job(with_candidate, "hint8", "rl"),
    ]
    seen = []
    runs = list(run_jobs(jobs, 2, on_run=lambda r: seen.append((r.strategy, r.sequence_name))))
    assert [(r.strategy, r.sequence_name) for r in runs] == [(j.strategy, j.sequence) for j in jobs]
    assert sorted(seen) == sorted((j.strategy, j.sequence) for j in jobs)
    inline = {
        (r.strategy, r.sequence_name): r
        for r in run_scenario(with_candidate).runs + run_scenario(other).runs
    }
    for run in runs:
        expected = replace(inline[(run.strategy, run.sequence_name)], isolation="process")
        assert _run_data(run) == _run_data(expected)


def test_a_crashing_run_becomes_an_error_and_the_next_run_gets_a_fresh_worker(write_scenario):
    path = write_scenario("""
        target: user_targets.py:crashes_when_compiled
        inputs: [{shape: [B, 4]}]
        sequences: {s: [1, 2], t: [3]}
        strategies: [default, static]
    """)
    with open_pool(2, timeout=120) as pool:
        report = run_scenario(load(path), pool=pool)
        started = pool.started
    assert [r.status for r in report.runs] == ["error"] * 4
    crash_exit = runpy.run_path(str(FIXTURES / "user_targets.py"))["CRASH_EXIT"]
    for r in report.runs:
        assert r.error.type == "WorkerCrashed"
        assert re.match(rf"worker exited with {crash_exit}\b", r.error.message), r.error.message
    assert started == 4  # each crash took its worker with it


def test_a_worker_whose_run_errored_is_replaced(write_scenario):
    """A Python branch on an unbacked batch size under fullgraph raises: that run is status
    error, the worker is not trusted with the next run (a fresh one takes it), and both runs
    equal the same runs inline (marked as process runs; inline against --isolate process is
    the exhaustive tier's test_process.py::test_inline_and_process_produce_identical_counts)."""
    path = write_scenario("""
        target: user_targets.py:branch_on_batch
        inputs: [{shape: [B, 4]}]
        sequences: {s: [1, 2]}
        compile: {fullgraph: true}
        strategies: [mark_unbacked, default]
    """)
    scenario = load(path)
    with open_pool(1) as pool:
        report = run_scenario(scenario, pool=pool)
        assert pool.started == 2 and len({c.worker for c in pool.costs}) == 2
    assert [r.status for r in report.runs] == ["error", "ok"]
    inline = run_scenario(scenario)
    assert [_run_data(r) for r in report.runs] == [
        _run_data(replace(r, isolation="process")) for r in inline.runs
    ]


def test_a_fatal_error_raises_as_in_process_mode(write_scenario):
    path = write_scenario("""
        target: user_targets.py:eager_fails
        inputs: [{shape: [B, 4]}]
        sequences: {s: [1]}
        strategies: [default, static]
    """)
    with pytest.raises(EagerFailure, match="bad target"):
        run_scenario(load(path), jobs=2)


ONLINE_CPUS = "/sys/devices/system/cpu/online"


@pytest.mark.parametrize("value", ["0", "-2", "two", "", "1.5"])
def test_parse_jobs_refuses(value):
    with pytest.raises(UsageError, match="--jobs"):
        parse_jobs(value)


@pytest.mark.skipif(not os.path.exists(ONLINE_CPUS), reason="Linux's list of online CPUs")
def test_parse_jobs_auto_is_the_core_count():
    """`--jobs auto` is documented as one worker per core: the machine's online CPUs, read here
    from the kernel's own list ("0-3,6")."""
    cores = 0
    for part in open(ONLINE_CPUS).read().strip().split(","):
        first, _, last = part.partition("-")
        cores += int(last or first) - int(first) + 1
    assert parse_jobs("auto") == cores
    assert parse_jobs("3") == 3


# --- the command line ---------------------------------------------------------------------------


@pytest.mark.parametrize("command", ["run", "explain", "check"])
@pytest.mark.parametrize("value", ["0", "x"])
def test_cli_jobs_usage_errors(command, value, tmp_path):
    target = [str(CONFIGS / "logprobs.yaml")]
    done = subprocess.run(
        [sys.executable, "-m", "recompile_probe", command, *target, "--jobs", value],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2, done.stderr
    assert "--jobs" in done.stderr and "Traceback" not in done.stderr, done.stderr


@pytest.mark.exhaustive
def test_cli_run_jobs_2_writes_the_process_report(tmp_path):
    """`run --jobs 2 -o` ends with the report in scenario order, equal to --isolate process."""
    args = [str(CONFIGS / "user_callable.yaml"), "-q", "-f", "json", "--sequence", "1,2,8"]
    args += ["-s", "default,mark_unbacked,dynamic_true"]  # three runs: two per worker
    out_jobs, out_proc = tmp_path / "jobs.json", tmp_path / "proc.json"
    for extra, out in ((["--jobs", "2"], out_jobs), (["--isolate", "process"], out_proc)):
        done = subprocess.run(
            [sys.executable, "-m", "recompile_probe", "run", *args, *extra, "-o", str(out)],
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert done.returncode == 0, done.stderr
    jobs, proc = json.loads(out_jobs.read_text()), json.loads(out_proc.read_text())
    assert jobs["complete"] is True
    assert comparable(jobs) == comparable(proc)


@pytest.mark.exhaustive
def test_cli_check_jobs_2_gives_the_serial_verdicts(tmp_path):
    """`check --jobs 2` on two scenarios (one worker pool for both): same exit code, violations
    and counts as the serial check."""
    results = {}
    for jobs in ("1", "2"):
        out = tmp_path / f"check{jobs}.json"
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "recompile_probe",
                "check",
                str(CONFIGS / "ci_budgets.yaml"),
                str(CONFIGS / "logprobs.yaml"),
                "-s",
                "default,mark_unbacked",
                "--max-recompiles",
                "0",
                "--jobs",
                jobs,
                "--json",
                str(out),
                "-q",
            ],
            capture_output=True,
            text=True,
            timeout=300,
        )
        reports = json.loads(out.read_text())["reports"]
        results[jobs] = (
            done.returncode,
            [
                [
                    (
                        r["sequence_name"],
                        r["strategy"],
                        r["status"],
                        r["compiles"],
                        r["recompiles"],
                        r["violations"],
                    )
                    for r in rep["runs"]
                ]
                for rep in reports
            ],
        )
    assert results["1"] == results["2"]
    assert results["1"][0] == 1  # default recompiles: --max-recompiles 0 is broken (not vacuous)
