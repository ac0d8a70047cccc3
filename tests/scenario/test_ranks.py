"""A distributed scenario's keys: `ranks:`, `distributed:`, a sequence's `by_rank:`, the
`ranks_agree` budget and the strategies only a process group can run, each with its error."""

from __future__ import annotations

import pytest

from recompile_probe.errors import ScenarioError
from recompile_probe.scenario.load import loads
from recompile_probe.scenario.overrides import with_overrides
from recompile_probe.sizes.points import Point
from recompile_probe.strategies.builtins import DEFAULT_STRATEGIES, RANK_BUILTINS

TARGET = "target: logprobs.count_greater_than\n"
RANKED = TARGET + "ranks: 2\n"


def batch(*sizes: int) -> tuple[Point, ...]:
    return tuple(Point.batch(b) for b in sizes)


def test_by_rank_gives_each_rank_its_sizes_and_a_plain_sequence_every_rank():
    s = loads(
        RANKED
        + "distributed: {backend: cpu:gloo, timeout_s: 12}\n"
        + "sequences:\n  ragged: {by_rank: {0: [8, 8, 8], 1: [8, 8, 3]}}\n  same: [4, 4]\n"
    )
    assert (s.ranks, s.distributed_backend, s.distributed_timeout_s) == (2, "cpu:gloo", 12.0)
    assert s.points["ragged"] == batch(8, 8, 8)  # rank 0's, for what reads one sequence
    assert s.for_rank(1).points == {"ragged": batch(8, 8, 3), "same": batch(4, 4)}
    assert s.for_rank(0).points == {"ragged": batch(8, 8, 8), "same": batch(4, 4)}
    # every built-in, then the two knobs only a process group can run
    assert s.strategies == (*DEFAULT_STRATEGIES, *RANK_BUILTINS)
    assert s.strategy("guard_collectives").guard_collectives


def test_defaults_and_a_single_process_scenario_unchanged():
    s = loads(RANKED + "sequences: {a: {by_rank: {'0': [1], '1': [2]}}}\n")
    assert (s.distributed_backend, s.distributed_timeout_s) == ("gloo", 60.0)
    assert s.for_rank(1).points == {"a": batch(2)}
    single = loads(TARGET + "sequences: [1, 2]\n")
    assert single.ranks is None and single.rank_points == {}
    assert single.strategies == tuple(DEFAULT_STRATEGIES)


def test_the_command_line_sequence_is_every_ranks():
    s = loads(RANKED + "sequences: {a: {by_rank: {0: [1], 1: [2]}}}\n")
    cli = with_overrides(s, sequence=[4, 5])
    assert cli.for_rank(1).points == {"cli": batch(4, 5)}


@pytest.mark.parametrize(
    "text, key, words",
    [
        (TARGET + "sequences: {a: {by_rank: {0: [1]}}}\n", "sequences.a.by_rank", "no `ranks:`"),
        (RANKED + "sequences: {a: {by_rank: {0: [1]}}}\n", "sequences.a.by_rank", "rank 1"),
        (
            RANKED + "sequences: {a: {by_rank: {0: [1], 1: [1], 2: [3]}}}\n",
            "sequences.a.by_rank.2",
            "0 to 1",
        ),
        (RANKED + "sequences: {a: {by_rank: {0: [1], x: [1]}}}\n", "sequences.a.by_rank.x", "x"),
        (
            RANKED + "sequences: {a: {by_rank: {0: [1], 1: [1]}, grid: {B: [1]}}}\n",
            "sequences.a.grid",
            "beside `by_rank:`",
        ),
        (
            RANKED + "sequences: {a: {by_rank: {0: [1], 1: [-1]}}}\n",
            "sequences.a.by_rank.1[0]",
            "negative",
        ),
        (TARGET + "ranks: 1\nsequences: [1]\n", "ranks", "2 or more"),
        (TARGET + "ranks: true\nsequences: [1]\n", "ranks", "a boolean"),
        (TARGET + "distributed: {backend: gloo}\nsequences: [1]\n", "distributed", "`ranks:`"),
        (
            RANKED + "distributed: {timeout: 3}\nsequences: [1]\n",
            "distributed.timeout",
            "timeout_s",
        ),
        (
            RANKED + "distributed: {timeout_s: 0}\nsequences: [1]\n",
            "distributed.timeout_s",
            "positive",
        ),
        (
            TARGET + "strategies: [guard_collectives]\nsequences: [1]\n",
            "strategies[0]",
            "distributed scenarios",
        ),
        (
            TARGET + "expect: {default: {ranks_agree: true}}\nsequences: [1]\n",
            "expect.default.ranks_agree",
            "no `ranks:`",
        ),
        (
            RANKED + "expect: {default: {ranks_agree: 1}}\nsequences: [1]\n",
            "ranks_agree",
            "true or false",
        ),
    ],
)
def test_mistakes_name_the_key_and_say_what_to_do(text, key, words):
    with pytest.raises(ScenarioError) as caught:
        loads(text, path="s.yaml")
    assert caught.value.key == key or key in caught.value.message
    assert words in str(caught.value)
    assert caught.value.line is not None
