"""Every reason kind from a real torch recompile (not only from strings), and the fallback."""

from __future__ import annotations

import pytest
import torch

from helpers import ROOT
from recompile_probe.reasons.kinds import KINDS
from recompile_probe.reasons.parse import classify, parse_line, refine
from recompile_probe.reasons.text import failure_lines
from recompile_probe.recording.recorder import Recorder


def _kinds(fn, calls, **compile_kwargs):
    torch._dynamo.reset()
    compiled = torch.compile(fn, backend="eager", **compile_kwargs)
    with Recorder() as rec:
        for make in calls:
            args, ctx = make()
            with ctx:
                try:
                    compiled(*args)
                except Exception:  # noqa: BLE001
                    pass
    torch._dynamo.reset()
    return [(e.reason_kind, e.reason_detail) for e in rec.events if e.recompile]


def plain(*args):
    import contextlib

    return lambda: (args, contextlib.nullcontext())


def double(x):
    return x * 2


def scale(x, s):
    return x * s


def pair(x, v):
    return (x >= v).sum(-1)


def branch(x):
    if x.shape[0] > 4:
        return x + 1
    return x - 1


def call(x, m):
    return m(x)


class Settings:
    def __init__(self, mode):
        self.mode = mode


def settle(x, settings):
    # what a classifier does on its first call with labels: Dynamo guards on ``mode is None``
    if settings.mode is None:
        return x + 1
    return x - 1


CASES = [
    (
        "zero_one_specialization",
        double,
        [plain(torch.randn(1, 4)), plain(torch.randn(2, 4))],
        {},
        {"source": "L['x']", "what": "size", "dim": 0, "expected": "1", "actual": "2"},
    ),
    (
        "zero_one_specialization",
        double,
        [plain(torch.randn(3, 4)), plain(torch.randn(4, 4)), plain(torch.randn(1, 4))],
        {},
        {"what": "shape-env expression", "source": "L['x']", "dim": 0},
    ),
    (
        "static_size_change",
        double,
        [plain(torch.randn(2, 4)), plain(torch.randn(3, 4))],
        {"dynamic": False},
        {"what": "size", "expected": "2", "actual": "3"},
    ),
    (
        "dtype_change",
        double,
        [plain(torch.randn(2)), plain(torch.randn(2, dtype=torch.float64))],
        {},
        {"what": "dtype", "expected": "Float", "actual": "Double"},
    ),
    (
        "requires_grad_change",
        double,
        [plain(torch.randn(2)), plain(torch.randn(2, requires_grad=True))],
        {},
        {"what": "requires_grad", "expected": "False", "actual": "True"},
    ),
    (
        "stride_change",
        double,
        [plain(torch.randn(4, 6)), plain(torch.randn(6, 4).t())],
        {},
        {"what": "stride", "dim": 0},
    ),
    (
        "rank_change",
        double,
        [plain(torch.randn(2)), plain(torch.randn(2, 2))],
        {},
        {"what": "rank", "expected": "1", "actual": "2"},
    ),
    (
        "python_scalar_change",
        scale,
        [plain(torch.randn(2), 0.5), plain(torch.randn(2), 0.7)],
        {},
        {"what": "value", "source": "L['s']", "expected": "0.5"},
    ),
    (
        "global_or_config_change",
        double,
        [plain(torch.randn(2)), lambda: ((torch.randn(2),), torch.no_grad())],
        {},
        {"what": "global state", "source": "grad_mode"},
    ),
    (
        "shape_env_guard",
        branch,
        [plain(torch.randn(8, 2)), plain(torch.randn(3, 2))],
        {"dynamic": True},
        {"what": "shape-env expression", "source": "L['x']", "dim": 0},
    ),
    # v's and x's first dims were both 3 when the dynamic graph compiled: duck sizing equated them
    (
        "duck_sizing",
        pair,
        [
            plain(torch.randn(2, 8), torch.randn(2, 1)),
            plain(torch.randn(3, 8), torch.randn(3, 1)),
            plain(torch.randn(4, 8), torch.randn(1, 1)),
        ],
        {"dynamic": True},
        {
            "what": "shape-env expression",
            "source": "L['v']",
            "dim": 0,
            "text": "v.size()[0] == x.size()[0]",
        },
    ),
    (
        "type_or_id_change",
        double,
        [plain(torch.randn(2)), plain(3.0)],
        {},
        {"what": "type", "source": "L['x']"},
    ),
    (
        "type_or_id_change",
        call,
        [plain(torch.randn(2), torch.nn.ReLU()), plain(torch.randn(2), torch.nn.Tanh())],
        {},
        {"what": "type", "source": "L['m']"},
    ),
    (
        "object_state",
        settle,
        [plain(torch.randn(2), Settings(None)), plain(torch.randn(2), Settings("labels"))],
        {},
        {"what": "value", "source": "settings.mode", "expected": "is None"},
    ),
]


@pytest.mark.parametrize(
    "kind, fn, calls, kwargs, detail", CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)]
)
def test_each_kind_from_a_real_recompile(kind, fn, calls, kwargs, detail):
    found = _kinds(fn, calls, **kwargs)
    assert found, "expected a recompile"
    got_kind, got_detail = found[-1]
    assert got_kind == kind, got_detail
    for key, value in detail.items():
        assert getattr(got_detail, key) == value, (key, got_detail)


def test_backend_change_from_a_real_recompile():
    torch._dynamo.reset()
    with Recorder() as rec:
        torch.compile(double, backend="eager")(torch.randn(2))
        torch.compile(double, backend="aot_eager")(torch.randn(2))
    dynamo_says = torch._dynamo.utils.get_compilation_metrics()[-1].recompile_reason
    torch._dynamo.reset()
    (event,) = [e for e in rec.events if e.recompile]
    if dynamo_says.strip() == "0/0:":  # torch 2.9 names no guard for it: neither does the tool
        assert event.reason == "0/0:" and event.reason_kind == "other"
        return
    assert event.reason_kind == "backend_change" and event.reason_detail.what == "backend"
    assert event.reason_detail.text.startswith("BACKEND_MATCH")


def test_every_kind_is_documented():
    text = (ROOT / "docs" / "explain.md").read_text()
    assert len(set(KINDS)) == len(KINDS)
    assert [k for k in KINDS if f"`{k}`" not in text] == []


def test_an_objects_state_and_the_set_of_arguments_have_their_own_kinds():
    state = parse_line("0/3: kwargs['cache'].layers[0].is_initialized == False")
    assert (state.kind, state.expected) == ("object_state", "False")
    assert parse_line("0/0: L['self'].training == True").kind == "object_state"
    assert parse_line("0/1: len(kwargs) == 6").kind == "arguments_changed"
    assert parse_line("0/1: len(L['args']) == 1").kind == "arguments_changed"
    # a user's list and a plain value keep theirs
    assert parse_line("0/0: len(L['xs']) == 3").kind == "python_scalar_change"
    assert parse_line("0/0: L['n'] == 3").kind == "python_scalar_change"
    # a model's config field is the model's state; a module-level config is a global
    unset = parse_line("0/0: self.config.problem_type is None")
    assert (unset.kind, unset.source, unset.expected) == (
        "object_state",
        "self.config.problem_type",
        "is None",
    )
    assert parse_line("0/0: L['self'].config.use_cache == True").kind == "object_state"
    assert parse_line("0/0: G['CONFIG'].mode is not None").kind == "global_or_config_change"
    # two sources that must stay one object are aliasing, not a value
    assert parse_line("0/0: L['a'] is L['b']").kind == "tensor_aliasing"


def test_refine_only_turns_specialized_origins_into_user_specialization():
    detail = parse_line("0/0: n == 3  # for _ in range(n):  # f.py:3 in f")
    assert detail.kind == "python_scalar_change"
    assert refine(detail, "specialized").kind == "user_specialization"
    assert refine(detail, "first_use").kind == "python_scalar_change"
    assert refine(detail, None) is detail
    dtype = parse_line("0/0: tensor 'x' dtype mismatch. expected Float, actual Double")
    assert refine(dtype, "specialized") is dtype


def test_recompile_limit_hit_from_a_real_run():
    with torch._dynamo.config.patch(recompile_limit=1):
        found = _kinds(double, [plain(torch.randn(n, 2)) for n in (2, 3)], dynamic=False)
    assert found[-1][0] == "recompile_limit_hit"


def test_unknown_text_falls_back_to_other_with_the_raw_text():
    detail = classify("0/0: something Dynamo will say in 2027 (x, y)")
    assert detail.kind == "other" and detail.what == "unknown"
    assert detail.text == "something Dynamo will say in 2027 (x, y)"
    free = classify("not even the usual format")
    assert free.kind == "other" and free.text == "not even the usual format"
    assert classify(None) is None and classify("") is None


def test_stack_trace_lines_are_not_reasons():
    text = (
        '0/0: s == 0.5  # comment\nUser stack trace:\n  File "x.py", line 1, in f\n'
        "0/1: tensor 'x' size mismatch at index 0. expected 1, actual 2"
    )
    assert failure_lines(text) == [
        "0/0: s == 0.5  # comment",
        "0/1: tensor 'x' size mismatch at index 0. expected 1, actual 2",
    ]


def test_kinds_reach_the_json_and_the_run_table():
    from helpers import render_report
    from recompile_probe.execution.session import run_scenario
    from recompile_probe.records.report import to_dict
    from recompile_probe.scenario.load import load
    from recompile_probe.scenario.overrides import with_overrides

    report = run_scenario(with_overrides(load(None), strategies=["default"], sequence=[1, 2, 8]))
    event = to_dict(report)["runs"][0]["compile_events"][1]
    assert event["reason_kind"] == "zero_one_specialization"
    assert event["reason_detail"]["source"] == "L['x']"
    assert "zero_one_specialization" in render_report(report, "table")


class KwargsModel(torch.nn.Module):
    """A Hugging Face-style forward: every tensor arrives as a keyword argument."""

    def forward(self, **kwargs):
        return kwargs["input_ids"].float().sum(-1) + kwargs["attention_mask"].sum(-1)


@pytest.mark.parametrize(
    "sizes, kind", [((1, 2), "zero_one_specialization"), ((2, 3, 4), "static_size_change")]
)
def test_sources_with_quotes_inside_are_classified(sizes, kind):
    model = KwargsModel()

    torch._dynamo.reset()
    compiled = torch.compile(model, backend="eager", dynamic=False)
    with Recorder() as rec:
        for b in sizes:
            ids = torch.ones(b, 5, dtype=torch.long)
            compiled(input_ids=ids, attention_mask=torch.ones_like(ids))
    torch._dynamo.reset()
    last = [e for e in rec.events if e.recompile][-1]
    assert "kwargs['input_ids']" in last.reason  # Dynamo's own text, quotes inside the name
    assert last.reason_kind == kind
    detail = last.reason_detail
    assert (detail.source, detail.dim, detail.actual) == (
        "L['kwargs']['input_ids']",
        0,
        str(sizes[-1]),
    )


def test_a_recompile_another_rank_forced_has_its_own_kind():
    # Dynamo's text on the rank whose guards passed, when guard collectives made it recompile
    # (measured with two gloo ranks: tests/execution/test_ranks.py)
    line = (
        "0/0: Unexpected recompilation: runtime guards failed even though they passed during "
        "recompilation-reason analysis. Please open an issue with a minimal repro: "
        "https://github.com/pytorch/pytorch"
    )
    assert parse_line(line).kind == "peer_rank_recompiled"
    assert parse_line("0/0: tensor 'x' size mismatch at index 0. expected 8, actual 3").kind == (
        "static_size_change"
    )


def test_torch_2_9_words_the_recompile_another_rank_forced_without_a_reason():
    # 2.9 finds no failing guard on the re-check and writes only this (the truth: the two-rank
    # test in tests/execution/test_ranks.py, run on 2.9.1 by the compat run)
    assert classify("Unable to find recompilation reasons").kind == "peer_rank_recompiled"
    assert classify("something else entirely").kind == "other"


def test_a_recompile_naming_no_guard_is_another_ranks_only_under_guard_collectives():
    # 2.9 writes only the entry when every guard passes on the re-check (tests/execution/
    # test_ranks.py on 2.9.1 is the two-rank truth); the recorder reads the hook at the time
    from recompile_probe.reasons.parse import with_guard_collectives

    empty = classify("0/0:")
    assert empty.kind == "other"
    assert with_guard_collectives(empty, True).kind == "peer_rank_recompiled"
    assert with_guard_collectives(empty, True).entry == "0/0"
    named = classify("0/0: tensor 'x' size mismatch at index 0. expected 8, actual 3")
    assert with_guard_collectives(named, True) == named
    assert with_guard_collectives(None, True) is None


def test_an_unexplained_recompile_without_guard_collectives_is_torchs_bug():
    # no peer can have forced it; torch's source: "Unexpected recompilation - points to a bug"
    from recompile_probe.reasons.parse import with_guard_collectives

    peer = classify("Unable to find recompilation reasons")
    assert with_guard_collectives(peer, False).kind == "torch_internal_error"
    named = classify("0/0: tensor 'x' size mismatch at index 0. expected 8, actual 3")
    assert with_guard_collectives(named, False) == named
    assert with_guard_collectives(None, False) is None


def test_torch_2_11_words_the_peer_recompile_as_a_backend_match_naming_no_backend():
    # measured on 2.11.0 with two gloo ranks, in the tool and in a plain program
    # (tests/programs/ranks_truth.py): one backend throughout, yet this text on the rank whose
    # guards passed
    from recompile_probe.reasons.parse import with_guard_collectives

    text = (
        "0/0: BACKEND_MATCH failure: torch.compile detected different backend callables. If this "
        "is unexpected, wrap your backend in functools.partial (or reuse the same cached backend)"
    )
    assert classify(text).kind == "backend_change"  # without guard collectives: what it says
    assert with_guard_collectives(classify(text), True).kind == "peer_rank_recompiled"
    named = classify(text + ". Cached backend: backend (id=0x1). New backend: backend (id=0x2).")
    assert with_guard_collectives(named, True).kind == "backend_change"  # 2.13 on: a real change
