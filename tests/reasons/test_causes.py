"""Every failing guard of a recompile, grouped by root cause, on real Dynamo
runs: the raw lines against what Dynamo itself recorded for each guard failure
(``torch._dynamo.guards.guard_failures``, one reason string per rejecting cache entry) and
against its own ``recompiles_verbose`` log, read by a handler of our own."""

from __future__ import annotations

import importlib.util
import logging
import re
import sys
from pathlib import Path

import torch
import torch._dynamo.guards as dynamo_guards

import recompile_probe
from helpers import PROGRAMS
from recompile_probe.reasons.causes import group, primary
from recompile_probe.torch_compat.logs import (
    RECOMPILES_ARTIFACT,
    RECOMPILES_VERBOSE_ARTIFACT,
    RECOMPILES_VERBOSE_LOGGER,
)

PROGRAM = PROGRAMS / "static_cache_model.py"
_SIZE = re.compile(
    r"(?P<entry>\d+/\d+): tensor '(?P<name>.+?)' size mismatch at index "
    r"(?P<dim>\d+)\. expected (?P<before>\d+), actual (?P<after>\d+)"
)


def _program():
    spec = importlib.util.spec_from_file_location("static_cache_model", PROGRAM)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _size_changes(text: str) -> set[tuple]:
    return {
        (m["entry"], m["name"], int(m["dim"]), m["before"], m["after"])
        for m in _SIZE.finditer(text)
    }


def _dynamo_reasons(code) -> list[str]:
    """Dynamo's own record of each guard failure of this code object (one string per entry)."""
    return list(dynamo_guards.guard_failures.get(code, ()))


def test_every_failing_guard_kept_and_grouped_on_a_static_cache_model():
    torch._dynamo.reset()
    dynamo_guards.guard_failures.clear()
    program = _program()
    model = program.TinyDecoder().eval()
    compiled = torch.compile(model, backend="eager")
    with torch.no_grad(), recompile_probe.record() as rec:
        program.generate(compiled, batch=1, prompt_len=5, max_cache_len=16)
        program.generate(compiled, batch=2, prompt_len=5, max_cache_len=16)
        program.generate(compiled, batch=1, prompt_len=20, max_cache_len=32)
    recompiles = [e for e in rec.events if e.recompile]
    assert len(recompiles) == rec.recompiles == 5

    # Dynamo's own per-entry failure strings, all of this code object's recompiles together
    code = model.forward.__code__
    truth = "\n".join(_dynamo_reasons(code))
    assert truth, "Dynamo recorded no guard failure for the model's forward"
    ours = "\n".join(line for e in recompiles for line in e.failures)
    assert _size_changes(ours) == _size_changes(truth)
    assert ours.count("len(kwargs) ==") == truth.count("len(kwargs) ==")
    # reason keeps the first failing guard per entry: one line per entry Dynamo named
    for e in recompiles:
        entries = [line.split(":", 1)[0] for line in e.failures]
        assert [ln.split(":", 1)[0] for ln in e.reason.splitlines()] == list(dict.fromkeys(entries))

    # the per-function causes: the batch and the cache length cost the recompiles they caused,
    # len(kwargs) never ranked above a changed size
    (f,) = rec.by_function()
    costly = {c.label: c for c in f.causes if c.recompiles}
    batch = costly["size of dim 0 of kwargs['input_ids']: 1 → 2"]
    cache = costly["size of dim 2 of kwargs['past_key_values'].key_cache: 16 → 32"]
    assert batch.recompiles == 2 and cache.recompiles == 2
    # each is the recompile Dynamo's own text shows that change in
    for cause, (name, dim, before, after) in (
        (batch, ("kwargs['input_ids']", 0, "1", "2")),
        (cache, ("kwargs['past_key_values'].key_cache", 2, "16", "32")),
    ):
        expected = {
            e.compile_id
            for e in recompiles
            if any(
                c[1:] == (name, dim, before, after) for c in _size_changes("\n".join(e.failures))
            )
        }
        assert set(cause.compile_ids) <= expected
    assert f.causes[0].label == batch.label and f.causes[1].label == cache.label
    kwargs_cause = next(c for c in f.causes if c.what == "length")
    assert kwargs_cause.seen_in == 5 and kwargs_cause.kind == "arguments_changed"
    # incidental only while another guard failed beside it: the recompile where it fails alone
    # (prefill to decode with the cache preallocated) has it as its cause
    alone = [
        e for e in recompiles if all(ln.split(": ", 1)[1].startswith("len(") for ln in e.failures)
    ]
    assert kwargs_cause.incidental is (not alone)
    for e in recompiles:  # a recompile whose entries saw a size change names it first
        top = primary(e.failures)
        if _size_changes("\n".join(e.failures)):
            assert top.what == "size"
    # Dynamo's first line per recompile is len(kwargs) every time (all a first-line reader sees)
    assert {r.text.split(" ==")[0] for r in f.reasons} == {"len(kwargs)"}


def test_row_named_after_what_the_user_compiled_with_call_site():
    torch._dynamo.reset()
    program = _program()
    model = program.TinyDecoder().eval()
    compiled = torch.compile(model, backend="eager")
    wrapper = "deprecate_kwarg.<locals>.wrapper.<locals>.wrapped_func"
    with torch.no_grad(), recompile_probe.record() as rec:
        program.generate(compiled, batch=1, prompt_len=5, max_cache_len=16, new_tokens=0)
    (f,) = rec.by_function()
    assert (f.function, f.code_name) == ("TinyDecoder.forward", wrapper)
    assert model.forward.__code__.co_qualname == wrapper  # what Dynamo compiled
    source = PROGRAM.read_text().splitlines()
    call = next(i for i, text in enumerate(source, 1) if "logits = model(" in text)
    assert f.call_site == f"{PROGRAM}:{call}"
    assert {e.function for e in rec.events} == {"wrapped_func"}  # events keep the code's name
    assert "compiled code " + wrapper in rec.explain()
    assert rec.to_dict()["functions"][0]["code_name"] == wrapper

    torch._dynamo.reset()

    @program.deprecate_kwarg("old", "new")
    def step(x, **kwargs):
        return x + 1

    step_compiled = torch.compile(step, backend="eager")
    with recompile_probe.record() as rec:
        line = sys._getframe().f_lineno + 1
        step_compiled(torch.ones(2))
    (f,) = rec.by_function()
    assert (f.function, f.code_name) == (step.__qualname__, wrapper)
    assert f.call_site == f"{__file__}:{line}"


def test_plain_function_rows_keep_their_name():
    torch._dynamo.reset()

    def plain(x):
        return x * 2

    compiled = torch.compile(plain, backend="eager")
    with recompile_probe.record() as rec:
        compiled(torch.ones(3))
    (f,) = rec.by_function()
    assert f.function == "plain" and f.code_name is None
    assert f.call_site is not None and f.call_site.startswith(__file__ + ":")


def test_verbose_artifact_is_on_only_while_recording_and_only_if_the_user_set_neither():
    state = torch._logging._internal.log_state
    before = set(state.artifact_names)
    verbose = logging.getLogger(RECOMPILES_VERBOSE_LOGGER)
    level, propagate = verbose.level, verbose.propagate
    with recompile_probe.record():
        assert RECOMPILES_VERBOSE_ARTIFACT in state.artifact_names
        assert RECOMPILES_ARTIFACT not in state.artifact_names - before
    assert set(state.artifact_names) == before
    assert (verbose.level, verbose.propagate) == (level, propagate)


def test_a_shape_guard_failure_gets_its_creating_line_in_explain():
    torch._dynamo.reset()

    def branchy(x):
        if x.shape[0] > 4:  # the guard's line
            return x + 1
        return x - 1

    compiled = torch.compile(branchy, backend="eager", dynamic=True)
    with recompile_probe.record() as rec:
        compiled(torch.ones(8))
        compiled(torch.ones(3))
    (event,) = [e for e in rec.events if e.recompile]
    line = next(
        i
        for i, text in enumerate(Path(__file__).read_text().splitlines(), 1)
        if "# the guard's line" in text
    )
    origins = [o for o in event.reason_origins if o]
    assert origins and origins[0].line == line and origins[0].file == __file__
    assert f"at test_causes.py:{line} `if x.shape[0] > 4:  # the guard's line`" in rec.explain()


def test_group_ranks_a_value_change_over_a_container_length():
    lines = [
        "0/1: len(kwargs) == 3  # f(**kwargs)  # a.py:3 in f",
        "0/0: n == 2",
        "0/0: len(kwargs) == 3",
    ]
    found = group(lines)
    assert [c.what for c in found] == ["value", "length"]
    assert found[1].entries == ("0/1", "0/0") and found[1].incidental


def test_a_comment_holding_a_semicolon_stays_one_guard():
    """Dynamo's first-use comment holds "; " ("... in the framework; to avoid specialization
    try ...mark_unbacked(tensor, dim))"), and recompiles_verbose joins parts with "; "."""
    torch._dynamo.reset()
    spec = importlib.util.spec_from_file_location("line_origins", PROGRAMS / "line_origins.py")
    program = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(program)
    compiled = torch.compile(program.f, backend="eager", dynamic=True)
    with recompile_probe.record() as rec:
        compiled(torch.ones(8), 2)
        compiled(torch.ones(3), 2)
        compiled(torch.ones(9), 3)
    last = [e for e in rec.events if e.recompile and e.function == "f"][-1]
    # Dynamo's own strings for this frame, one per rejecting entry, verbose: "0/1: a; b"
    truth = [r for r in _dynamo_reasons(program.f.__code__) if r.startswith(("0/1:", "0/0:"))]
    assert any("mark_unbacked(tensor, dim)" in r for r in truth)
    joined = [line for line in last.failures if "mark_unbacked(tensor, dim))" in line]
    assert len(joined) == 1 and joined[0].startswith("0/1: 2 <= x.size()[0] <= 4")
    # every part Dynamo wrote is in exactly one of our lines, in its order
    assert "; ".join(
        ln.split(": ", 1)[1] for ln in last.failures if ln.startswith("0/1:")
    ) in "\n".join(truth)
    (f,) = [s for s in rec.by_function() if s.function.endswith("f") and s.recompiles]
    n_cause = next(c for c in f.causes if c.what == "value")
    assert n_cause.seen_in == 1 and set(n_cause.compile_ids) == {last.compile_id}
    line = next(
        i
        for i, t in enumerate((PROGRAMS / "line_origins.py").read_text().splitlines(), 1)
        if t.rstrip().endswith("# LINE:range")
    )
    assert n_cause.origin is not None and n_cause.origin.line == line


def test_a_local_module_class_keeps_its_forward_name():
    torch._dynamo.reset()

    class Local(torch.nn.Module):
        def forward(self, x):
            return x + 1

    compiled = torch.compile(Local(), backend="eager")
    with recompile_probe.record() as rec:
        compiled(torch.ones(2))
    (f,) = rec.by_function()
    assert (f.function, f.code_name) == ("forward", None)
    assert f.call_site is not None


def test_one_plain_cause_is_not_repeated_as_a_cause():
    torch._dynamo.reset()

    def double(x):
        return x * 2

    compiled = torch.compile(double, backend="eager", dynamic=False)
    with recompile_probe.record() as rec:
        compiled(torch.ones(2))
        compiled(torch.ones(3))
    (f,) = rec.by_function()
    (cause,) = f.causes
    assert (cause.what, cause.dim, cause.before, cause.after) == ("size", 0, "2", "3")
    assert "causes (" not in rec.explain() and "size mismatch at index 0" in rec.explain()
