"""Coverage on a model held in a module global: a tiny GPT-2 (random weights, built from a config)
under dynamic=True and mark_unbacked, warmed at B = 4 -> 8, against the plain program's own
recompile log.

Its guards read the model through the frame's globals (``G['model']...wpe.weight``'s size,
``...drop.p == 0.1``): the sizes are read there too, so the range is proved, not sampled; and the
guard an unserved size names is the one Dynamo logs at that size. The cache entry's lambda
guard lists parts that read globals before the 0/1 shape guard; they hold, so they are not the
failing guard. Under mark_unbacked the graph breaks and B = 1 is a real call the fail-on-recompile
stance refuses in transformers' shared wrapper: the guard it names is the size guard Dynamo logs,
not the argument count of an entry compiled for another function. Needs transformers (a dev
dependency)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap

import pytest

from recompile_probe.execution.session import run_scenario
from recompile_probe.scenario.load import loads

pytest.importorskip("transformers")

PROGRAM = """
import sys
import torch
from transformers import GPT2Config, GPT2LMHeadModel

torch.manual_seed(0)
config = GPT2Config(n_layer=1, n_head=2, n_embd=16, vocab_size=64, n_positions=32,
                    bos_token_id=0, eos_token_id=0)
model = GPT2LMHeadModel(config).eval()


def forward(input_ids):
    with torch.no_grad():
        return model(input_ids=input_ids, use_cache=False).logits


def make_inputs(batch_size):
    return (torch.randint(0, 64, (batch_size, 8)),)


if __name__ == "__main__":  # the plain program: warm at 4 -> 8, sizes the tool calls served, then 1
    compiled = torch.compile(forward, backend="eager", dynamic=True)
    for b in (4, 8, 2, 3, 16, 1):
        print(b, file=sys.stderr, flush=True)
        compiled(*make_inputs(b))
    # the vLLM fix's marks, on every call: warm at 4 -> 8, then 1
    print("mark_unbacked", file=sys.stderr, flush=True)
    torch._dynamo.reset()
    compiled = torch.compile(forward, backend="eager")
    for b in (4, 8, 1):
        print(b, file=sys.stderr, flush=True)
        (ids,) = make_inputs(b)
        torch._dynamo.decorators.mark_unbacked(ids, 0)
        compiled(ids)
"""
#: "[0/1] [__recompiles]     - 0/0: 2 <= input_ids.size()[0]  # ..." : a failing guard
FAILURE = re.compile(r"\[__recompiles\]\s+- \d+/\d+: (.*?)(?:\s+#.*)?$", re.M)


def test_a_global_models_range_is_proved_and_its_unserved_guard_is_the_one_dynamo_logs(tmp_path):
    (tmp_path / "tiny_gpt2.py").write_text(PROGRAM)
    plain = subprocess.run(
        [sys.executable, str(tmp_path / "tiny_gpt2.py")],
        capture_output=True, text=True, timeout=300,
        env={**os.environ, "OMP_NUM_THREADS": "1", "TORCH_LOGS": "recompiles"},
    )  # fmt: skip
    assert plain.returncode == 0, plain.stderr[-3000:]
    dynamic, marked = plain.stderr.split("\nmark_unbacked\n")
    logged = FAILURE.findall(dynamic)
    # one recompile, at B = 1: 2, 3 and 16 were served by the warm-up's entries
    at, recompiled_at = None, []
    for line in dynamic.splitlines():
        if line.strip().isdigit():
            at = int(line)
        elif "Recompiling function" in line:
            recompiled_at.append(at)
    assert recompiled_at == [1] and logged, plain.stderr[-3000:]
    scenario = loads(
        textwrap.dedent(
            f"""\
            target: {tmp_path / "tiny_gpt2.py"}:forward
            factory: {tmp_path / "tiny_gpt2.py"}:make_inputs
            batch_dims: {{0: [0]}}
            sequences: {{warm: [4, 8]}}
            strategies: [dynamic_true, mark_unbacked]
            repeats: 0
            coverage: {{B: [1, 16]}}
            """
        )
    )
    run, unbacked = run_scenario(scenario).runs
    coverage = run.coverage
    assert coverage.method == "proved" and coverage.scope == "every frame", coverage.notes
    assert coverage.served == ({"B": (2, 16)},)
    (miss,) = coverage.unserved
    assert miss.sizes == {"B": (1, 1)}
    # Dynamo logs the source as the user's name (input_ids), the cache entry as L['input_ids']
    assert re.sub(r"L\['(\w+)'\]", r"\1", miss.guard) == logged[0]
    assert miss.reason_kind == "zero_one_specialization"

    # mark_unbacked: graph breaks, so B = 1 is a real call the stance refuses, in transformers'
    # shared wrapper. Its first logged failure is an entry compiled for another function the
    # wrapper decorates (an argument count); the size guard of this function's entry is the one
    # that fails at B = 1 and not at the sizes served
    at_one = FAILURE.findall(marked.split("\n1\n")[1])
    assert at_one and not re.search(r"size", at_one[0]), at_one
    assert unbacked.coverage.method == "sampled"
    miss = unbacked.coverage.unserved[0]
    assert miss.sizes == {"B": (1, 1)} and miss.decided_by == "stance"
    sized = [g for g in at_one if ".size()" in g]
    assert re.sub(r"L\['(\w+)'\]", r"\1", miss.guard) == sized[0], (miss.guard, at_one)
    assert miss.reason_kind == "zero_one_specialization"
