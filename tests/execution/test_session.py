"""A whole scenario: ordering, environment and interrupts."""

from __future__ import annotations

from recompile_probe.execution.session import run_scenario
from recompile_probe.scenario.load import load, loads
from recompile_probe.scenario.overrides import with_overrides


def test_runs_come_back_sequence_major_in_scenario_order():
    scenario = with_overrides(load(None), strategies=["mark_unbacked", "default"])
    seen = []
    report = run_scenario(scenario, on_run=lambda r: seen.append((r.strategy, r.sequence_name)))
    assert seen[0] == ("mark_unbacked", "rl")  # arrival order: strategy by strategy
    assert [(r.sequence_name, r.strategy) for r in report.runs] == [
        ("rl", "mark_unbacked"),
        ("rl", "default"),
        ("chat", "mark_unbacked"),
        ("chat", "default"),
    ]
    assert report.environment.torch.startswith("2.")
    assert report.scenario.name == "logprobs" and report.complete


def test_interrupt_keeps_the_finished_runs():
    scenario = with_overrides(load(None), strategies=["default", "static"])

    def stop_after_first(run):
        raise KeyboardInterrupt

    report = run_scenario(scenario, on_run=stop_after_first)
    assert report.complete is False
    assert len(report.runs) == 1 and report.runs[0].status == "ok"


def test_a_scenario_changed_in_code_runs_as_it_is_in_a_worker_process():
    """The Scenario object travels to the worker (not its file's path): a sequence and a
    strategy set made in code run there, as inline."""
    from dataclasses import replace

    from comparable import comparable
    from recompile_probe.records.report import to_dict
    from recompile_probe.sizes.points import Point

    scenario = replace(
        with_overrides(load(None), strategies=["default", "mark_unbacked"]),
        points={"made_in_code": tuple(Point.batch(b) for b in (3, 1, 5))},
        repeats=0,
    )
    process = run_scenario(scenario, isolate="process")
    inline = run_scenario(scenario)
    assert [(r.sequence_name, r.strategy, r.sequence) for r in process.runs] == [
        ("made_in_code", "default", (3, 1, 5)),
        ("made_in_code", "mark_unbacked", (3, 1, 5)),
    ]
    assert {r.isolation for r in process.runs} == {"process"}
    data = [comparable(to_dict(report)) for report in (process, inline)]
    for report in data:
        for run in report["runs"]:
            run.pop("isolation")
    assert data[0]["runs"] == data[1]["runs"]


def test_a_scenario_built_in_code_needs_no_file_to_run_in_a_worker():
    scenario = loads(
        "target: logprobs.count_greater_than\nsequences: [1, 2]\nrepeats: 0\n"
        "strategies: [default]\n"
    )
    assert scenario.path is None
    (run,) = run_scenario(scenario, isolate="process").runs
    assert run.status == "ok" and run.compiles == 2 and run.isolation == "process"
