"""A broken max_compiles says what each counted compile was: the first compiles of every frame,
the recompiles with their reasons and the failed attempts, one line each, on a real run whose
count Dynamo's compilation metrics make (a graph break: two frames; a recompile limit of 1: a
failed attempt)."""

from __future__ import annotations

import torch

from helpers import FIXTURES, import_file
from recompile_probe.analysis.budgets import evaluate
from recompile_probe.execution.session import run_scenario
from recompile_probe.scenario.budgets import Budget
from recompile_probe.scenario.load import loads

SCENARIO = """
name: limited
target: {here}/user_targets.py:with_graph_break
inputs:
  - {{shape: [B, 4]}}
sequences:
  s: [1, 2, 3]
strategies: [default]
compile: {{recompile_limit: 1}}
repeats: 0
"""


def _truth() -> list:
    """The same program outside the tool: Dynamo's compilation metrics."""
    from torch._dynamo.utils import get_compilation_metrics

    torch._dynamo.reset()
    fn = import_file(FIXTURES / "user_targets.py", "user_targets_truth").with_graph_break
    compiled = torch.compile(fn, backend="eager", recompile_limit=1)
    before = len(get_compilation_metrics())
    for b in (1, 2, 3):
        compiled(torch.randn(b, 4))
    metrics = get_compilation_metrics()[before:]
    torch._dynamo.reset()
    return metrics


def test_a_broken_max_compiles_names_every_compile_it_counts():
    truth = _truth()
    scenario = loads(SCENARIO.format(here=FIXTURES), path=str(FIXTURES / "limited.yaml"))
    (run,) = run_scenario(scenario).runs
    assert run.compiles == len(truth) and run.failed_compiles == sum(
        m.fail_type is not None for m in truth
    )
    (broken,) = evaluate(run, [Budget("*", "*", "max_compiles", 1, "limited.yaml:9")])
    assert broken.actual == len(truth)
    assert len(broken.reasons) == len(truth)  # one line per compile counted
    failed = [r for r in broken.reasons if " failed (" in r]
    assert len(failed) == run.failed_compiles >= 1
    firsts = [r for r in broken.reasons if r.endswith("first compile")]
    assert len(firsts) == len({str(m.compile_id).split("/")[0] for m in truth})  # every frame


def test_a_sampled_answer_judges_a_part_of_its_range_on_its_samples():
    """docs/coverage.md: one decided only on samples passes where no sample missed (and says it
    was sampled); a sampled miss inside the budget's part breaks it, with that said."""
    from recompile_probe.analysis.budgets import uncovered
    from recompile_probe.records.coverage import Coverage, Unserved

    sampled = Coverage(
        ranges={"B": (1, 64)},
        method="sampled",
        scope="every frame",
        proved=False,
        served=({"B": (2, 2)}, {"B": (64, 64)}),
        unserved=(
            Unserved(
                sizes={"B": (1, 1)}, outcome="recompile", guard=None, reason_kind=None, origin=None
            ),
        ),
        counterexample={"B": 1},
        complete=False,
    )
    assert uncovered(sampled, {"B": (2, 64)}) is None
    verdict, why = uncovered(sampled, {"B": (1, 64)})
    assert verdict == "B = 1 recompiles" and "checked on samples only (method sampled)" in why
