"""`suggest` times only the finalists: what the probe itself was asked to time (the scenario each
probe run received, seen by a wrapper around ``recompile_probe.probe.run.probe``), against the
figures of the candidates."""

from __future__ import annotations

import pytest

from recompile_probe.commands.suggest.run import suggest
from recompile_probe.execution import inline as probe_module
from recompile_probe.scenario.load import load


@pytest.mark.slow
def test_only_the_candidates_tied_for_first_are_timed(monkeypatch):
    seen: list[tuple[str, int]] = []
    real = probe_module.probe

    def counted(scenario, target, sequence_name, points, strategy, *args, **kwargs):
        seen.append((strategy.name, scenario.repeats))
        return real(scenario, target, sequence_name, points, strategy, *args, **kwargs)

    # patched where the prepared scenario calls it (execution/inline.py imports it)
    monkeypatch.setattr(probe_module, "probe", counted)
    scenario = load(None)
    assert scenario.repeats > 0
    result = suggest(scenario, sequence="rl")
    best = result.recommendation
    assert best is not None and result.timed and result.timed[0] == best.name

    def before_speed(c):
        return (c.status, c.outputs_match, c.compiles, c.guard_count, c.shape_env_guard_count)

    tied = {c.name for c in result.candidates if before_speed(c) == before_speed(best)}
    assert set(result.timed) == tied
    timed_probes = {name for name, repeats in seen if repeats == scenario.repeats}
    for c in result.candidates:
        if c.name in tied:
            assert c.name in timed_probes and c.steady_state_us is not None, c.name
        else:
            # probed, but never with timing: its µs/call is n/a
            assert (c.name, 0) in seen and c.name not in timed_probes, c.name
            assert c.steady_state_us is None, c.name
    assert any(n.startswith(f"µs/call measured for the {len(tied)} tied") for n in result.notes)
