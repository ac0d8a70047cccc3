"""Sources as Dynamo names them: the loader's frame arguments against the guards of real cache
entries, and strategies that name sources taking effect (or saying they matched nothing)."""

from __future__ import annotations

import re

import pytest
import torch
from torch._dynamo.eval_frame import _debug_get_cache_entry_list
from torch._dynamo.testing import CompileCounterWithBackend

from helpers import FIXTURES, import_file
from recompile_probe.analysis.verdicts import eligible, no_effect
from recompile_probe.execution.session import run_scenario
from recompile_probe.scenario.load import load
from recompile_probe.scenario.overrides import with_overrides
from recompile_probe.sizes.paths import frame_source, parse_path
from recompile_probe.targets.loader import frame_args

wrapped = import_file(FIXTURES / "wrapped_targets.py")


def _guarded_sources(code) -> set[str]:
    """Every L[...] source the guards of the code's cache entries name (Dynamo's own words)."""
    text = "\n".join(str(e.guard_manager) for e in _debug_get_cache_entry_list(code))
    return set(re.findall(r"L\['\w+'\](?:\[(?:'\w+'|\d+)\])?", text))


@pytest.mark.parametrize(
    "target, code",
    [
        (wrapped.forward, wrapped.Model.forward.__code__),
        (wrapped.model, wrapped.Model.forward.__code__),
        (wrapped.function, wrapped.function.__code__),
        (wrapped.Plain(), wrapped.Plain.forward.__code__),
        (wrapped.Plain().forward, wrapped.Plain.forward.__code__),
    ],
    ids=["wrapped-method", "wrapped-module", "wrapped-function", "module", "method"],
)
def test_frame_sources_are_the_ones_dynamos_guards_name(target, code):
    torch._dynamo.reset()
    torch.compile(target, backend="eager")(torch.randn(2, 4), scale=torch.ones(4))
    guarded = _guarded_sources(code)
    frame = frame_args(target)
    assert frame is not None
    for path in (parse_path("k", 0), parse_path("k", "scale")):
        assert frame_source(path, frame) in guarded, (path, guarded)


def _hand_graphs(sources: str) -> int:
    """unbacked_sources set by hand over batch sizes 1, 2, 3, counted by a CompileCounter."""
    torch._dynamo.reset()
    counter = CompileCounterWithBackend("eager")
    compiled = torch.compile(wrapped.forward, backend=counter)
    with torch.compiler.config.patch(unbacked_sources=sources):
        for b in (1, 2, 3):
            compiled(**wrapped.keyword_inputs(b))
    return counter.frame_count


def test_unbacked_sources_name_the_wrappers_kwargs_and_take_effect(write_scenario):
    path = write_scenario(f"""
        target: {FIXTURES / "wrapped_targets.py"}:forward
        factory: {FIXTURES / "wrapped_targets.py"}:keyword_inputs
        dims: {{B: {{x: [0]}}}}
        sequences: {{s: [1, 2, 3]}}
        strategies: [default, unbacked_sources]
        custom_strategies:
          wrong_sources:
            config: {{torch.compiler.config.unbacked_sources: "L['x']:0"}}
        repeats: 0
        """)
    scenario = with_overrides(
        load(path), strategies=["default", "unbacked_sources", "wrong_sources"]
    )
    runs = {r.strategy: r for r in run_scenario(scenario).runs}
    right = _hand_graphs("L['kwargs']['x']:0")
    if right == _hand_graphs("L['x']:0"):  # a torch that ignores per-dim sources (2.9)
        assert runs["unbacked_sources"].status == "unsupported"
        pytest.skip("this torch ignores per-dim unbacked_sources: the tool refuses the strategy")
    assert right < _hand_graphs("L['x']:0")  # the name matters: only Dynamo's takes effect
    assert runs["unbacked_sources"].graphs == right
    assert runs["unbacked_sources"].no_effect is None
    # the signature's name matches nothing in the wrapper's frame: said, and never a winner
    idle = runs["wrong_sources"]
    assert idle.no_effect and "matched no source: L['x']" in idle.no_effect
    assert idle.graphs == runs["default"].graphs
    assert idle.no_effect in idle.notes
    # its figures equal the real default run's too, so the claim stands across runs
    assert no_effect(idle, list(runs.values())) == idle.no_effect
    assert not eligible(idle, list(runs.values()))
