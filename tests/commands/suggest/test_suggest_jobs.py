"""suggest --jobs: candidates measured on the worker pool give the figures of a serial search."""

from __future__ import annotations

import dataclasses

import pytest

from recompile_probe.commands.suggest.run import suggest
from recompile_probe.execution.session import open_pool
from recompile_probe.scenario.load import load


def _figures(result):
    return {
        c.name: (
            c.status,
            c.compiles,
            c.recompiles,
            c.graphs,
            c.guard_count,
            c.shape_env_guard_count,
            c.outputs_match,
            c.reasons,
        )
        for c in result.candidates
    }


@pytest.mark.slow
@pytest.mark.exhaustive
def test_pool_and_serial_measure_the_same_candidates():
    # untimed: the ranking then rests on counts alone, which both modes must measure alike (a
    # tie broken by µs/call would compare two noisy timings)
    loaded = dataclasses.replace(load(None), repeats=0)
    serial = suggest(loaded, sequence="rl")
    with open_pool(2) as pool:
        parallel = suggest(loaded, sequence="rl", pool=pool)
    # A candidate is cut where its compiles pass the leader's of the moment, and the pool's
    # leader is the one when its batch starts: a candidate cut in one mode has a lower bound
    # there that the other mode's count meets; every other figure is the same.
    ser, par = _figures(serial), _figures(parallel)
    assert ser.keys() == par.keys()
    for name in ser:
        a, b = ser[name], par[name]
        if "cut" in (a[0], b[0]):
            low, full = (a, b) if a[0] == "cut" else (b, a)
            assert full[0] == "cut" or full[1] >= low[1], (name, a, b)
        else:
            assert a == b, name
    assert parallel.recommendation.marks == serial.recommendation.marks
    assert [(n.mark, n.change) for n in parallel.necessity] == [
        (n.mark, n.change) for n in serial.necessity
    ]
    # 3^2 markings and 5 whole-function strategies (shapes_spec among them)
    assert parallel.optimal and parallel.evaluations == serial.evaluations == 9 + 5


@pytest.mark.slow
def test_a_time_limit_on_the_pool_stops_between_rounds_of_its_workers(monkeypatch):
    from recompile_probe.commands.suggest import bench

    # a clock past any limit once the first round (one candidate per worker) is measured
    monkeypatch.setattr(bench.Bench, "elapsed", lambda self: 1e9 if self.measured else 0.0)
    loaded = dataclasses.replace(load(None), repeats=0)
    with open_pool(2) as pool:
        result = suggest(loaded, sequence="rl", pool=pool, time_limit=60)
    assert result.stopped_by == "time_limit" and not result.complete and not result.optimal
    assert result.evaluations == 2 and result.skipped[0] == "search"
    assert result.recommendation.name in {c.name for c in result.candidates}
