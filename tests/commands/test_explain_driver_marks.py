"""A target a driver calls (a generate() loop) gets its marks as a wrapper the driver is handed
in the target's place: the driver builds the tensors, so "right before each call" is not code the
user can write. The wrapper, pasted into the plain program, compiles as often as explain says,
whether the driver passes the tensors by position or by keyword; and the fixes the user can make
without a wrapper (a config line) are listed before it."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest
import torch
from torch._dynamo.testing import CompileCounter

from recompile_probe.strategies.advice import Arguments, bound_name, code
from recompile_probe.strategies.builtins import BUILTINS

pytestmark = pytest.mark.slow

#: a model whose forward takes **kwargs and a driver that passes everything by keyword, as
#: transformers' generate() calls model.forward(**model_inputs)
PROGRAM = """
import torch


class Tiny(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = torch.nn.Linear(8, 8)

    def forward(self, **kwargs):
        x = kwargs["hidden"]
        return self.proj(x) * kwargs["scale"].unsqueeze(-1)


torch.manual_seed(0)
MODEL = Tiny().eval()


def forward(**kwargs):
    return MODEL(**kwargs)


def generate(fn, B):
    out = None
    for step in range(2):
        out = fn(hidden=torch.ones(B, 3, 8) * step, scale=torch.ones(B, 3))
    return out
"""

SCENARIO = """
name: driven
target: drv.py:forward
driver: drv.py:generate
dims: {B: {hidden: [0], scale: [0]}}
sequences: {rl: [1, 2, 8]}
strategies: [default, mark_unbacked, unbacked_sources]
repeats: 0
"""


def _explained(path) -> dict:
    done = subprocess.run(
        [sys.executable, "-m", "recompile_probe", "explain", str(path), "-s", "default",
         "--format", "json"],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout)


def _wrapper_counts(fix: dict, fn, driver, points) -> int:
    """The fix's lines run as the user would paste them, with fn the plain target; the compile
    call gets a counting backend, which is the only change made to them."""
    text = "\n".join(fix["change"]).replace(
        "torch.compile(fn)", "torch.compile(fn, backend=counter)"
    )
    assert "torch.compile(fn, backend=counter)" in text
    torch._dynamo.reset()
    counter = CompileCounter()
    scope = {"torch": torch, "functools": __import__("functools"),
             "inspect": __import__("inspect"), "fn": fn, "counter": counter}  # fmt: skip
    exec(textwrap.dedent(text), scope)  # noqa: S102
    for point in points:
        driver(scope["marked"], **point)
    torch._dynamo.reset()
    return counter.frame_count


def test_a_keyword_driver_gets_a_wrapper_that_compiles_as_claimed(tmp_path):
    (tmp_path / "drv.py").write_text(PROGRAM)
    (tmp_path / "drv.yaml").write_text(SCENARIO)
    doc = _explained(tmp_path / "drv.yaml")
    (explained,) = doc["explanations"]
    reasons = explained["recompile_reasons"]
    assert reasons, "the default run recompiled at B 1 -> 2"
    fixes = reasons[0]["fixes"]
    names = [f["strategy"] for f in fixes]
    # the config line needs no wrapper: it comes first, whatever the timings
    assert names.index("unbacked_sources") < names.index("mark_unbacked")
    fix = fixes[names.index("mark_unbacked")]
    assert "def marked(*args, **kwargs):" in fix["change"]
    assert not any("right before each call" in line for line in fix["change"])
    scope: dict = {}
    exec(compile(PROGRAM, str(tmp_path / "drv.py"), "exec"), scope)  # noqa: S102
    got = _wrapper_counts(fix, scope["forward"], scope["generate"], [{"B": b} for b in (1, 2, 8)])
    assert got == fix["compiles"]
    # the plain program without the wrapper recompiles: the wrapper is what removed it
    torch._dynamo.reset()
    counter = CompileCounter()
    plain = torch.compile(scope["forward"], backend=counter)
    for b in (1, 2, 8):
        scope["generate"](plain, b)
    torch._dynamo.reset()
    assert counter.frame_count > got


def test_a_positional_driver_gets_a_wrapper_that_compiles_as_claimed():
    from configs import prefill_decode

    doc = _explained("configs/prefill_decode_generate.yaml")
    (explained,) = doc["explanations"]
    fix = next(
        f
        for r in explained["recompile_reasons"]
        for f in r["fixes"]
        if f["strategy"] == "mark_unbacked"
    )
    points = [{"B": p["B"], "S": p["S"]} for p in explained["points"]]
    got = _wrapper_counts(fix, prefill_decode.block, prefill_decode.generate, points)
    assert got == fix["compiles"] == 2


def test_names_in_the_wrapper():
    assert bound_name("input_ids") == "a['input_ids']"
    assert bound_name("cache.keys[0]") == "a['cache'].keys[0]"
    assert bound_name("args[2]") == "args[2]"
    args = Arguments((("L['kwargs']['hidden']", 0, "B"),), (), driver="drv.py:generate")
    lines = code(BUILTINS["mark_unbacked"], args, ("B",))
    assert "    torch._dynamo.decorators.mark_unbacked(a['hidden'], 0)" in lines
    without = code(BUILTINS["mark_unbacked"], Arguments(args.dims, ()), ("B",))
    assert "torch._dynamo.decorators.mark_unbacked(hidden, 0)" in without


def test_the_wrapper_compiles_once_with_the_strategys_own_keywords():
    """A strategy with marks and torch.compile keywords of its own (dynamic=False, a compile
    option): the wrapper's one compile line carries them, none is printed beside it."""
    import dataclasses

    strategy = dataclasses.replace(
        BUILTINS["mark_unbacked"], dynamic=False, compile={"recompile_limit": 2}
    )
    args = Arguments((("L['kwargs']['hidden']", 0, "B"),), (), driver="drv.py:generate")
    lines = code(strategy, args, ("B",))
    compiles = [line for line in lines if "torch.compile(" in line]
    assert compiles == ["compiled = torch.compile(fn, dynamic=False, recompile_limit=2)"]
    plain = code(strategy, Arguments(args.dims, ()), ("B",))
    assert "torch.compile(fn, dynamic=False)" in plain
    assert "torch.compile(fn, recompile_limit=2)" in plain
