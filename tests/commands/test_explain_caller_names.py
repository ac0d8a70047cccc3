"""explain's marks go before the call, so they name what the caller passes: a target that takes
``**kwargs`` gets ``mark_unbacked(input_ids, 0)``, not the frame's ``kwargs['input_ids']``; the
lines, pasted before each call of the plain program, compile as often as explain says."""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap

import pytest
import torch
from torch._dynamo.testing import CompileCounter

from recompile_probe.strategies.advice import caller_name

pytestmark = pytest.mark.slow

PROGRAM = """
import torch


class TinyLM(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = torch.nn.Embedding(32, 8)
        self.head = torch.nn.Linear(8, 32)

    def forward(self, input_ids=None, attention_mask=None, **kwargs):
        return self.head(self.embed(input_ids) * attention_mask.unsqueeze(-1))


torch.manual_seed(0)
MODEL = TinyLM().eval()


def step(**kwargs):
    return MODEL(**kwargs).argmax(-1)


def inputs(B):
    return {"input_ids": torch.zeros(B, 5, dtype=torch.long), "attention_mask": torch.ones(B, 5)}
"""

SCENARIO = """
name: kw
target: kw.py:step
factory: kw.py:inputs
dims: {B: {input_ids: [0], attention_mask: [0]}}
sequences: {rl: [1, 2, 8]}
strategies: [default, mark_unbacked]
repeats: 0
"""


def test_the_var_keyword_dict_is_named_by_its_keywords_and_a_dict_parameter_keeps_its_path():
    assert caller_name("L['kwargs']['input_ids']", []) == "input_ids"
    assert caller_name("L['kw']['cache'].keys[0]", ["x"]) == "cache.keys[0]"
    assert caller_name("L['cfg']['scale']", ["cfg"]) == "cfg['scale']"
    assert caller_name("L['x']", ["x"]) == "x"


def test_explains_marks_name_the_callers_keywords_and_work_when_pasted(tmp_path):
    (tmp_path / "kw.py").write_text(PROGRAM)
    (tmp_path / "kw.yaml").write_text(SCENARIO)
    done = subprocess.run(
        [sys.executable, "-m", "recompile_probe", "explain", str(tmp_path / "kw.yaml")],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    fix = done.stdout.split("mark_unbacked (", 1)[1]
    claimed = int(re.match(r"(\d+) compile", fix).group(1))
    marks = re.findall(r"^\s+(torch\._dynamo\.decorators\.mark_unbacked\(.*\))$", fix, re.M)[:2]
    assert sorted(marks) == [
        "torch._dynamo.decorators.mark_unbacked(attention_mask, 0)",
        "torch._dynamo.decorators.mark_unbacked(input_ids, 0)",
    ]
    # the plain program, the lines pasted before each call
    scope: dict = {}
    exec(compile(PROGRAM, str(tmp_path / "kw.py"), "exec"), scope)
    torch._dynamo.reset()
    counter = CompileCounter()
    step = torch.compile(scope["step"], backend=counter)
    for b in (1, 2, 8):
        call = scope["inputs"](b)
        local = {"torch": torch, **call}
        exec(textwrap.dedent("\n".join(marks)), local)
        step(input_ids=local["input_ids"], attention_mask=local["attention_mask"])
    assert counter.frame_count == claimed == 1
    torch._dynamo.reset()
