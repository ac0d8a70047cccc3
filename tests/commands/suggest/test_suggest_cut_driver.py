"""suggest through a driver (configs/prefill_decode_generate.yaml: a generate() loop that builds
the prompt and the growing cache itself). A candidate cut once its compiles passed the leader's,
run to its end by hand through the same driver with its marks put on the block's arguments
before each call and a CompileCounter, compiles at least what the tool counted and more than
the answer, or fails later: it could not have ranked first."""

from __future__ import annotations

import dataclasses
import inspect

import pytest
import torch
from torch._dynamo.decorators import mark_unbacked
from torch._dynamo.testing import CompileCounter

from helpers import ROOT
from recompile_probe.commands.suggest.run import suggest
from recompile_probe.scenario.load import load

pytestmark = pytest.mark.slow

MARK = {"dynamic": torch._dynamo.mark_dynamic, "unbacked": mark_unbacked}


def _by_hand(marks, points) -> int | None:
    """Compiles of the plain generate loop with ``marks`` placed by hand; None if it failed."""
    from configs import prefill_decode

    names = list(inspect.signature(prefill_decode.block.forward).parameters)
    torch._dynamo.reset()
    counter = CompileCounter()
    compiled = torch.compile(prefill_decode.block, backend=counter)

    def marked(*args):
        by_name = dict(zip(names, args))
        for m in marks:
            value = args[m.argument] if isinstance(m.argument, int) else by_name[m.argument]
            MARK[m.kind](value, m.dim)
        return compiled(*args)

    try:
        for B, S in points:
            prefill_decode.generate(marked, B, S)
    except Exception:  # noqa: BLE001 - a mark that Dynamo refuses later on (a constraint)
        return None
    finally:
        torch._dynamo.reset()
    return counter.frame_count


def test_cut_candidates_through_a_driver_compile_more_than_the_answer_run_to_their_end():
    scenario = dataclasses.replace(
        load(ROOT / "configs" / "prefill_decode_generate.yaml"), repeats=0
    )
    result = suggest(scenario)
    best = result.recommendation
    points = [(p.get("B"), p.get("S")) for p in scenario.points["chat"]]
    assert _by_hand(best.marks, points) == best.compiles  # the answer, pasted, as claimed
    cut = [c for c in result.candidates if c.status == "cut" and c.whole_function is None]
    assert len(cut) >= 3, [(c.name, c.status) for c in result.candidates]
    finished = 0
    for c in cut:
        assert c.compiles > best.compiles, c.name
        hand = _by_hand(c.marks, points)
        if hand is not None:
            finished += 1
            assert hand >= c.compiles, (c.name, hand, c.compiles)
    assert finished  # not every cut one is a failure in disguise
