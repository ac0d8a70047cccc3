"""The inductor backend, kept to one scenario: seconds per compile on CPU."""

from __future__ import annotations

import pytest

from recompile_probe import scenario as scenario_mod
from recompile_probe.session import run_scenario

pytestmark = pytest.mark.inductor


def test_inductor_scenario_counts_and_hint_override():
    scenario = scenario_mod.with_overrides(
        scenario_mod.load(scenario_mod.default_path().parent / "inductor.yaml"),
        strategies=["default", "mark_unbacked_hint8"])
    report = run_scenario(scenario)
    by = {r.strategy: r for r in report.runs}
    assert (by["default"].graphs, by["default"].compiles, by["default"].recompiles) == (2, 2, 1)
    assert (by["mark_unbacked_hint8"].graphs, by["mark_unbacked_hint8"].compiles) == (1, 1)
    assert all(r.outputs_match is True and r.backend == "inductor" for r in report.runs)
    # inductor's compile time is in the metrics, and dwarfs eager's tens of milliseconds
    assert by["default"].compile_time_ms > 100
