"""A whole scenario: ordering, environment and interrupts."""

from __future__ import annotations

import pytest

from recompile_probe import scenario as scenario_mod
from recompile_probe.session import run_scenario


def test_runs_come_back_sequence_major_in_scenario_order():
    scenario = scenario_mod.with_overrides(scenario_mod.load(None),
                                           strategies=["mark_unbacked", "default"])
    seen = []
    report = run_scenario(scenario, on_run=lambda r: seen.append((r.strategy, r.sequence_name)))
    assert seen[0] == ("mark_unbacked", "rl")  # arrival order: strategy by strategy
    assert [(r.sequence_name, r.strategy) for r in report.runs] == [
        ("rl", "mark_unbacked"), ("rl", "default"), ("chat", "mark_unbacked"),
        ("chat", "default")]
    assert report.environment.torch.startswith("2.")
    assert report.scenario.name == "logprobs" and report.complete


def test_interrupt_keeps_the_finished_runs():
    scenario = scenario_mod.with_overrides(scenario_mod.load(None),
                                           strategies=["default", "static"])

    def stop_after_first(run):
        raise KeyboardInterrupt

    report = run_scenario(scenario, on_run=stop_after_first)
    assert report.complete is False
    assert len(report.runs) == 1 and report.runs[0].status == "ok"


def test_process_mode_needs_a_file():
    from recompile_probe.errors import UsageError

    scenario = scenario_mod.loads("target: logprobs.count_greater_than\nsequences: [1]\n")
    with pytest.raises(UsageError):
        run_scenario(scenario, isolate="process")
