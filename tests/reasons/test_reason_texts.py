"""Aliasing, user stacks, object ids and torch's own assertions: each produced by the installed
torch where it can produce it, and torch 2.15's texts (quoted from its torch/_dynamo/guards.py and
from its recompiles log, measured 2026-12-02 on 2.15.0) parsed from the literal strings."""

from __future__ import annotations

import dataclasses
import inspect

import pytest
import torch
from torch._dynamo.decorators import mark_unbacked
from torch._dynamo.testing import CompileCounter

from helpers import sample_run, torch_at_least
from recompile_probe.analysis.errors import explain_error
from recompile_probe.analysis.fixes import Recompile
from recompile_probe.analysis.functions import by_function
from recompile_probe.probe.failures import describe_error
from recompile_probe.provenance.origin import called_from, from_stack, with_stacks
from recompile_probe.reasons.causes import group
from recompile_probe.reasons.kinds import INTERNAL_WORDS, TABLE, no_fix_why, remedy
from recompile_probe.reasons.parse import classify, internal_error, parse_line
from recompile_probe.reasons.text import failure_lines, mask_ids, user_stacks
from recompile_probe.recording.recorder import Recorder
from recompile_probe.records.origin import Origin, StackFrame
from recompile_probe.records.report import run_from_dict
from recompile_probe.records.run import RunError
from recompile_probe.render.lines.explain import recompile_lines

# --- torch 2.15.0's texts, verbatim -------------------------------------------------------------

#: 2.15's recompiles log for add(x, x) then add(x, y): the aliasing guard now has a user stack
ALIASED_215 = (
    "Recompiling function f in /tmp/r215/alias.py:3\n"
    "    triggered by the following guard failure(s):\n"
    "    - 0/0: a is b                                              "
    "# return a + b  # alias.py:4 in f\n"
    "    - User stack trace:\n"
    '    -   File "/tmp/r215/alias.py", line 4, in f\n'
    "    -     return a + b"
)
#: recompilation_reason_for_no_tensor_aliasing_guard (2.15) joins its reasons with "; "
NO_ALIASING_215 = (
    '0/0: Duplicate tensors found: ["a", "b"]; NO_TENSOR_ALIASING guard source(s) no longer '
    "evaluate: data[0] (KeyError: 0)"
)
NO_ALIASING_FAILED_215 = "0/0: NO_TENSOR_ALIASING guard failed"
NO_LONGER_215 = "0/0: NO_TENSOR_ALIASING guard source(s) no longer evaluate: data[0] (KeyError: 0)"
#: CheckFunctionManager (2.13 and 2.15), raised while building the guards of a compile
SAME_FRAME = (
    "Guard failed on the same frame it was created. This is a bug - please create an issue."
    "Guard fail reason: 0/0: y.size()[0] == x.size()[0]  # (unknown source y.size()[0], please "
    "file a bug)"
)
#: get_guard_fail_reason_helper (2.13 and 2.15) when no guard explains a failed check
UNEXPECTED = (
    "0/0: Unexpected recompilation: runtime guards failed even though they passed during "
    "recompilation-reason analysis. Please open an issue with a minimal repro: "
    "https://github.com/pytorch/pytorch"
)


@pytest.mark.parametrize(
    "text, source",
    [
        ("0/0: a is b                    # return a + b  # alias.py:4 in f", "L['a']"),
        ('0/0: Duplicate tensors found: ["a", "b"]', "L['a']"),
        (NO_ALIASING_215, "L['a']"),
        (NO_ALIASING_FAILED_215, None),
        (NO_LONGER_215, None),
    ],
)
def test_every_aliasing_text_is_tensor_aliasing(text, source):
    detail = parse_line(text)
    assert (detail.kind, detail.what, detail.source) == ("tensor_aliasing", "aliasing", source)
    assert classify(text).kind == "tensor_aliasing"


def test_a_global_alias_is_not_two_arguments():
    # one module under two names (G['F'] is G['torch'].nn.functional): not tensor arguments
    assert parse_line("0/0: G['F'] is G['torch'].nn.functional").kind != "tensor_aliasing"


def test_the_aliasing_guard_with_its_215_user_stack():
    (line,) = [ln.strip()[2:] for ln in ALIASED_215.splitlines() if ln.strip().startswith("- 0/")]
    assert parse_line(line).kind == "tensor_aliasing"
    stacks = user_stacks(ALIASED_215)
    assert stacks == {
        ("0/0", "a is b"): (StackFrame("/tmp/r215/alias.py", 4, "f", "return a + b"),)
    }


def test_internal_assertions_have_their_own_kind_and_words():
    detail = internal_error("AssertionError", SAME_FRAME)
    assert detail is not None and detail.kind == "torch_internal_error"
    assert internal_error("AssertionError", "x is not defined") is None
    assert internal_error(None, SAME_FRAME) is None
    # as a recompile reason, the text is what a rank whose guards passed says when guard
    # collectives made it recompile for another rank (measured on gloo: tests/reasons/test_parse.py)
    assert classify(UNEXPECTED).kind == "peer_rank_recompiled"
    assert INTERNAL_WORDS in no_fix_why("torch_internal_error")
    assert INTERNAL_WORDS in remedy("torch_internal_error", "")
    assert TABLE["tensor_aliasing"].remedy and "clone" in remedy("tensor_aliasing", "a is b")


def test_ids_are_masked_and_nothing_else():
    backend = (
        "BACKEND_MATCH failure: torch.compile detected different backend callables. Cached "
        "backend: _TorchCompileWrapper(compiler='b', dynamic=None) (id=0x7f19e10d9850). New "
        "backend: _TorchCompileWrapper(compiler='b', dynamic=None) (id=0x7f19e11437d0)."
    )
    other = backend.replace("0x7f19e10d9850", "0x7f00aa").replace("0x7f19e11437d0", "0x7f00bb")
    assert mask_ids(backend) == mask_ids(other) and "0x" not in mask_ids(backend)
    assert (
        mask_ids("___check_obj_id(fn, 139715853130448), type=<class 'builtin_function_or_method'>")
        == "___check_obj_id(fn, …), type=<class 'builtin_function_or_method'>"
    )
    assert mask_ids("___check_type_id(o, 94280355659792)") == "___check_type_id(o, …)"
    assert mask_ids("n == 139715853130448") == "n == 139715853130448"
    # three recompiles' lines of three new backends: one cause
    assert len(group([f"0/0: {backend}", f"0/1: {other}"])) == 1


def test_with_stacks_keeps_the_rules_line_and_adds_the_stack():
    frames = (
        StackFrame("/p/f.py", 16, "outer", "return helper(y, n)"),
        StackFrame("/p/f.py", 14, "helper", "return y * n"),
    )
    stacked = from_stack(frames)
    ruled = Origin("/p/f.py", 14, "helper", "return y * n", "first_use")
    merged = with_stacks((ruled, None), (stacked, stacked))
    assert merged[0] is not None and merged[1] is not None
    assert merged[0].role == "first_use" and merged[0].stack == frames
    assert merged[1].line == 14 and merged[1].role == "created"
    assert with_stacks((ruled,), None) == (ruled,)
    assert called_from(merged[0]) == ["called from f.py:16 in outer `return helper(y, n)`"]


# --- the installed torch ------------------------------------------------------------------------


def add(a, b):
    return a + b


def helper(y, n):
    return y * n


def outer(y, n):
    return helper(y, n)


def step(x):
    return x + 1


def _recorded(calls):
    torch._dynamo.reset()
    counter = CompileCounter()
    with Recorder() as rec:
        calls(counter)
    torch._dynamo.reset()
    return rec.events, counter


def test_aliasing_recompiles_from_the_installed_torch():
    # measured on 2.13: (x, x) then (x, y) fails `a is b`; (x, y) then (x, x) fails
    # `Duplicate tensors found: ["a", "b"]`
    x, y = torch.randn(3), torch.randn(3)
    found = []
    for first, second in (((x, x), (x, y)), ((x, y), (x, x))):

        def calls(counter, first=first, second=second):
            compiled = torch.compile(add, backend=counter)
            compiled(*first)
            compiled(*second)

        events, counter = _recorded(calls)
        assert counter.frame_count == 2  # Dynamo compiled twice: one recompile
        (recompile,) = [e for e in events if e.recompile]
        found.append((recompile.reason_kind, recompile.reason))
    assert [k for k, _ in found] == ["tensor_aliasing", "tensor_aliasing"]
    assert "a is b" in found[0][1] and "Duplicate tensors found" in found[1][1]


def test_an_inlined_helpers_guard_names_its_callers_line():
    x = torch.randn(3)

    def calls(counter):
        compiled = torch.compile(outer, backend=counter)
        compiled(x, 3)
        compiled(x, 4)

    events, counter = _recorded(calls)
    assert counter.frame_count == 2
    (recompile,) = [e for e in events if e.recompile]
    said = torch._dynamo.utils.get_compilation_metrics()[-1].recompile_reason or ""
    if "User stack trace:" not in said:
        pytest.skip("this torch writes no user stack under an int guard")
    origin = recompile.reason_origins[0]
    caller, inner = origin.stack
    # the stack is outermost first, and names the lines of this file
    assert (caller.function, caller.code) == ("outer", "return helper(y, n)")
    assert caller.line == outer.__code__.co_firstlineno + 1
    assert (inner.function, inner.line) == ("helper", helper.__code__.co_firstlineno + 1)
    assert (origin.function, origin.line) == ("helper", inner.line)
    # explain shows the caller under the guard's line
    r = Recompile(
        1,
        3,
        4,
        recompile.compile_id,
        recompile.reason,
        recompile.reason_kind,
        recompile.reason_detail,
        (),
        None,
        reason_origins=recompile.reason_origins,
    )
    text = "\n".join(recompile_lines(r))
    assert "called from test_reason_texts.py:" in text and "`return helper(y, n)`" in text
    # watch's grouping keeps it
    (summary,) = by_function(events)
    assert summary.reasons[0].origin.stack[0].code == "return helper(y, n)"


@pytest.mark.skipif(
    not torch_at_least("2.15"), reason="aliasing guards carry a user stack from torch 2.15"
)
def test_the_aliasing_guard_has_a_stack_where_torch_writes_one():
    x, y = torch.randn(3), torch.randn(3)

    def calls(counter):
        compiled = torch.compile(add, backend=counter)
        compiled(x, x)
        compiled(x, y)

    events, _ = _recorded(calls)
    (recompile,) = [e for e in events if e.recompile]
    assert recompile.reason_kind == "tensor_aliasing"
    assert recompile.reason_origins[0]["stack"][-1]["code"] == "return a + b"


def test_new_backend_callables_are_one_reason_counted():
    x = torch.randn(3)
    metrics_before = len(torch._dynamo.utils.get_compilation_metrics())

    def calls(counter):
        def make_backend():
            def backend(gm, example_inputs):
                counter.frame_count += 1
                return gm.forward

            return backend

        for _ in range(4):
            torch.compile(step, backend=make_backend())(x)

    events, counter = _recorded(calls)
    assert counter.frame_count == 4
    said = [
        m.recompile_reason
        for m in list(torch._dynamo.utils.get_compilation_metrics())[metrics_before:]
        if m.recompile_reason
    ]
    assert len(said) == 3
    if not any("BACKEND_MATCH" in s for s in said):
        pytest.skip(f"this torch names no guard for a backend change ({said[0]!r}; torch 2.9)")
    assert all("BACKEND_MATCH" in s for s in said)
    assert len(set(said)) == 3  # the texts differ: by their ids (2.13 on), by the entry (2.11)
    (summary,) = by_function(events)
    (reason,) = summary.reasons
    # masked where the texts carry the backends' ids (2.13 on; 2.11's differ only by entry)
    has_ids = any("id=0x" in s for s in said)
    assert (reason.kind, reason.count, reason.masked) == ("backend_change", 3, has_ids)
    assert "0x" not in reason.text
    assert ("(id=…)" in reason.text) is has_ids
    assert [c.recompiles for c in summary.causes] == [3]


def total(x, y):
    return x.sum() + y.sum()


def _raise_internal():
    """torch 2.13 and 2.15: two tensors marked unbacked with one shape_id, sizes 3 and 5, make
    Dynamo's own guards reject the frame they were built for. (Whole-tensor unbacked_sources,
    also reported to do it, compiled cleanly here: a 1-d and a 2-d tensor, with and without a
    branch on the size.)"""
    from torch._dynamo.decorators import mark_unbacked

    a, b = torch.randn(3), torch.randn(5)
    mark_unbacked(a, 0, shape_id="batch")
    mark_unbacked(b, 0, shape_id="batch")
    torch._dynamo.reset()
    try:
        torch.compile(total, backend="eager")(a, b)
    finally:
        torch._dynamo.reset()


@pytest.mark.skipif(
    "shape_id" not in inspect.signature(mark_unbacked).parameters,
    reason="mark_unbacked takes no shape_id here (the assertion needs two tensors sharing one)",
)
def test_torchs_own_assertion_is_a_run_error_of_its_own_kind():
    with pytest.raises(AssertionError) as raised:
        _raise_internal()
    error = describe_error(raised.value, 0)
    assert error.kind == "torch_internal_error"
    assert error.message.startswith(INTERNAL_WORDS)
    assert "Guard failed on the same frame it was created" in error.message
    other = describe_error(ValueError("bad input"), 0)
    assert other.kind is None and other.message == "bad input"
    run = dataclasses.replace(sample_run("mark_unbacked", 1, 1, 1.0, "error"), error=error)
    why = explain_error(run)
    assert why is not None and why.kind == "torch_internal_error"
    assert INTERNAL_WORDS in why.why


def test_stack_lines_stay_out_of_the_failure_lines():
    message = (
        "0/0: n == 3   # return y * n  # f.py:14 in helper\nUser stack trace:\n"
        '  File "/p/f.py", line 16, in outer\n    return helper(y, n)\n'
        '  File "/p/f.py", line 14, in helper\n    return y * n'
    )
    assert failure_lines(message) == ["0/0: n == 3   # return y * n  # f.py:14 in helper"]
    ((key, frames),) = user_stacks(message).items()
    assert key == ("0/0", "n == 3") and [f.line for f in frames] == [16, 14]
    assert user_stacks("0/0: n == 3") == {} and user_stacks(None) == {}


def test_run_error_kind_round_trips():
    error = RunError("AssertionError", f"{INTERNAL_WORDS}: ...", 0, "torch_internal_error")
    run = dataclasses.replace(sample_run("x", 1, 1, 1.0, "error"), error=error)
    assert run_from_dict(dataclasses.asdict(run)).error == error


def _is_square(x):
    # what a vision model does before interpolating its position embeddings
    if x.shape[2] == x.shape[3]:
        return x.sum()
    return x.mean()


def test_an_equality_between_sizes_gets_equality_advice_not_min_max():
    """H == W on square images, then a wide one: the shape-env guard Dynamo names is an equality,
    which no mark or range removes."""
    torch._dynamo.reset()
    compiled = torch.compile(_is_square, backend="eager", dynamic=True)
    # duck sizing off: the equality is the user's branch, not two sizes that coincided
    with torch.fx.experimental._config.patch(use_duck_shape=False), Recorder() as rec:
        compiled(torch.randn(1, 3, 4, 4))
        compiled(torch.randn(1, 3, 4, 6))
    torch._dynamo.reset()
    (event,) = [e for e in rec.events if e.recompile]
    assert event.reason_kind == "shape_env_guard", event.reason
    assert "x.size()[3] == x.size()[2]" in event.reason
    advice = remedy(event.reason_kind, event.reason, event.reason_detail)
    assert "equality guard" in advice and "min/max" in advice and "pad" in advice
    assert not advice.startswith("no measured marking removed this size change")
    # a bound is not an equality: it keeps the size advice
    assert remedy("shape_env_guard", "0/0: 2 <= L['x'].size()[0]").startswith("no measured")
