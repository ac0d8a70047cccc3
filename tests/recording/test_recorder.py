"""The Recorder on the records that break naive attribution, checked against Dynamo's own records.

The reference in each test is independent of the recorder: ``get_compilation_metrics()`` grouped
by frame id (as tlparse groups compiles), a ``CompileCounter``, or the error Dynamo raised.
"""

from __future__ import annotations

import json
import logging
import subprocess
import sys
import textwrap

import pytest
import torch
from torch._dynamo.testing import CompileCounterWithBackend
from torch._dynamo.utils import get_compilation_metrics

from helpers import FIXTURES
from recompile_probe.reasons.text import failure_lines
from recompile_probe.recording.recorder import Recorder

pytestmark = pytest.mark.usefixtures("fresh_dynamo")


def by_frame(records) -> dict[str, list]:
    """Dynamo's records grouped by frame id, the reference every test compares with."""
    out: dict[str, list] = {}
    for m in records:
        out.setdefault(str(m.compile_id).split("/")[0], []).append(m)
    return out


def step(x):
    return x * 2


def test_recompile_limit_hit_then_same_name_recompile_gets_its_own_reason():
    # Two different functions named `step`: the first hits its limit (a record with
    # co_name=None), the second recompiles on a dtype change afterwards.
    import importlib.util

    path = FIXTURES / "other_step.py"
    spec = importlib.util.spec_from_file_location("other_step", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    other = torch.compile(module.step, backend="eager")
    limited = torch.compile(step, backend="eager", dynamic=False)
    with torch._dynamo.config.patch(recompile_limit=2), Recorder() as rec:
        for n in (1, 2, 3, 4):
            limited(torch.ones(n))
        other(torch.ones(3))
        other(torch.ones(3, dtype=torch.float64))
    records = get_compilation_metrics()
    frames = by_frame(records)
    assert [e.compile_id for e in rec.events] == [str(m.compile_id) for m in records]
    first, second = frames["0"], frames["1"]
    mine = [e for e in rec.events if e.compile_id.startswith("0/")]
    assert len(mine) == len(first) == 3
    # Every event of frame 0, the limit hit included, is under `step` of this file.
    assert {(e.function, e.filename) for e in mine} == {("step", __file__)}
    limit = mine[-1]
    assert first[-1].co_name is None and first[-1].fail_type is not None
    assert limit.failed and limit.recompile and limit.reason_kind == "recompile_limit_hit"
    assert limit.reason.splitlines()[0] == first[-1].recompile_reason.splitlines()[0]
    theirs = [e for e in rec.events if e.compile_id.startswith("1/")]
    assert [e.function for e in theirs] == ["step", "step"]
    assert theirs[0].filename == str(path)
    assert theirs[1].recompile and theirs[1].reason_kind == "dtype_change"
    assert theirs[1].reason.splitlines()[0] == second[1].recompile_reason.splitlines()[0]
    assert sum(e.recompile for e in rec.events) == sum(
        1 for m in records if (m.cache_size or 0) > 0 or m.fail_type is not None
    )


def test_error_on_recompile_is_a_failed_recompile_of_its_function():
    compiled = torch.compile(step, backend="eager", dynamic=False)
    with Recorder() as rec:
        compiled(torch.ones(1))
        with torch._dynamo.config.patch(error_on_recompile=True):
            with pytest.raises(Exception) as raised:
                compiled(torch.ones(2))
    failed = get_compilation_metrics()[-1]
    assert failed.co_name is None and failed.fail_type == type(raised.value).__name__
    event = rec.events[-1]
    assert (event.function, event.filename) == ("step", __file__)
    assert event.recompile and event.failed and event.fail_type == failed.fail_type
    expected = [
        ln.strip()[2:] for ln in str(raised.value).splitlines() if ln.strip().startswith("- ")
    ]
    assert event.reason.splitlines() == expected
    assert event.reason_kind == "zero_one_specialization"


def test_fail_on_recompile_stance_is_recorded_though_dynamo_writes_no_record():
    compiled = torch.compile(step, backend="eager", dynamic=False)
    with Recorder() as rec:
        compiled(torch.ones(1))
        with torch.compiler.set_stance("fail_on_recompile"):
            with pytest.raises(RuntimeError) as raised:
                compiled(torch.ones(2))
        compiled(torch.ones(1))  # still served by the first entry
    assert len(get_compilation_metrics()) == 1  # Dynamo's own record of the refusal: none
    if not rec.sees_stance_rejections:
        # This torch raises without asking for the guard failures: nothing to observe, and the
        # recorder says so instead of inventing an event.
        assert len(rec.events) == 1 and "fail_on_recompile" in str(raised.value)
        return
    assert len(rec.events) == 2
    event = rec.events[-1]
    assert (event.function, event.filename) == ("step", __file__)
    assert event.recompile and event.failed and event.compile_id is None
    expected = [
        ln.strip()[2:] for ln in str(raised.value).splitlines() if ln.strip().startswith("- ")
    ]
    if not expected:  # 2.9's refusal names no guard: Dynamo's own log of the real recompile does
        with Recorder() as again:
            compiled(torch.ones(2))
        (real,) = again.events
        assert real.recompile and not real.failed
        expected = real.reason.splitlines()
    assert event.reason.splitlines() == expected
    assert event.reason_kind == "zero_one_specialization"
    # Observing left the stance machinery as it was.
    import torch._dynamo.convert_frame as dynamo_convert_frame
    import torch._dynamo.guards as dynamo_guards

    assert not hasattr(dynamo_guards.get_and_maybe_log_recompilation_reasons, "__wrapped__")
    assert not hasattr(dynamo_convert_frame.has_tensor_in_frame, "__wrapped__")


def test_a_metrics_log_in_an_unknown_shape_falls_back_to_dynamos_deque(monkeypatch):
    # A torch that logs the record as text: the handler sees nothing it knows, the deque holds
    # every record, and the counts must be Dynamo's, not 0.
    import torch._dynamo.utils as dynamo_utils

    text_log = logging.getLogger("torch._utils_internal")
    monkeypatch.setattr(
        dynamo_utils,
        "log_compilation_event",
        lambda m: text_log.info("%s", json.dumps({"id": str(m.compile_id)})),
    )
    counter = CompileCounterWithBackend("eager")
    compiled = torch.compile(step, backend=counter, dynamic=False)
    with Recorder() as rec:
        for n in (1, 2, 3):
            compiled(torch.ones(n))
    assert len(rec.events) == len(get_compilation_metrics()) == counter.frame_count == 3
    assert [e.recompile for e in rec.events] == [False, True, True]
    assert rec.complete


def test_without_a_metrics_stream_a_full_deque_loses_nothing(monkeypatch):
    # No log_compilation_event (an older torch): the recorder reads the deque, which keeps 64
    # records by default. 70 compiles between two reads must all be counted.
    import torch._utils_internal as internal

    monkeypatch.delattr(internal, "log_compilation_event")
    counter = CompileCounterWithBackend("eager")
    compiled = torch.compile(step, backend=counter, dynamic=False)
    with torch._dynamo.config.patch(recompile_limit=100), Recorder() as rec:
        for n in range(1, 71):
            compiled(torch.ones(n))
    assert counter.frame_count == 70
    assert len(rec.events) == 70 and rec.complete
    assert sum(e.recompile for e in rec.events) == 69
    assert get_compilation_metrics().__class__.__name__ == "list"  # the limit was put back
    assert torch._dynamo.utils._compilation_metrics.maxlen == 64


def test_user_logging_and_stance_machinery_are_left_as_they_were():
    plain = logging.getLogger("torch._dynamo.guards.__recompiles")
    verbose = logging.getLogger("torch._dynamo.guards.__recompiles_verbose")
    before = [(lg.level, lg.propagate, list(lg.handlers)) for lg in (plain, verbose)]
    from torch._logging._internal import log_state

    artifacts = set(log_state.artifact_names)
    with Recorder():
        torch.compile(step, backend="eager")(torch.ones(2))
    assert [(lg.level, lg.propagate, list(lg.handlers)) for lg in (plain, verbose)] == before
    assert set(log_state.artifact_names) == artifacts


def test_nested_recorders_each_see_every_compile():
    compiled = torch.compile(step, backend="eager", dynamic=False)
    with Recorder() as outer:
        compiled(torch.ones(1))
        with Recorder() as inner:
            compiled(torch.ones(2))
        compiled(torch.ones(3))
    assert [e.compile_id for e in outer.events] == ["0/0", "0/1", "0/2"]
    assert [e.compile_id for e in inner.events] == ["0/1"]
    assert inner.events[0].reason == outer.events[1].reason
    assert (
        inner.events[0].reason.splitlines()[0]
        == get_compilation_metrics()[1].recompile_reason.splitlines()[0]
    )


PROGRAM = textwrap.dedent("""
    import json, sys, torch
    import recompile_probe

    def step(x):
        return x * 2

    compiled = torch.compile(step, backend="eager", dynamic=False)
    with recompile_probe.record() as rec:
        for n in (1, 2, 3):
            compiled(torch.ones(n))
    from torch._dynamo.utils import get_compilation_metrics
    print(json.dumps({"reasons": [e.reason for e in rec.events],
                      "dynamo": [m.recompile_reason for m in get_compilation_metrics()]}))
""")


@pytest.mark.slow
@pytest.mark.parametrize("torch_logs", ["recompiles_verbose", "recompiles", ""])
def test_torch_logs_set_by_the_user(tmp_path, torch_logs):
    # With recompiles_verbose Dynamo logs to the verbose artifact only; the recorder must still
    # get every entry's first failing guard, as without TORCH_LOGS.
    program = tmp_path / "prog.py"
    program.write_text(PROGRAM)
    env = {k: v for k, v in __import__("os").environ.items() if k != "TORCH_LOGS"}
    if torch_logs:  # an empty TORCH_LOGS breaks `import torch` itself
        env["TORCH_LOGS"] = torch_logs
    out = subprocess.run(
        [sys.executable, str(program)], capture_output=True, text=True, env=env, timeout=120
    )
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout.strip().splitlines()[-1])
    ours, dynamo = data["reasons"], data["dynamo"]
    assert ours[0] is None and dynamo[0] in (None, "")
    # Dynamo's record keeps the first failing guard of the most recent entry; we keep one line
    # per rejecting entry, most recent first: the first lines agree, and call 2 has two entries.
    assert [r.splitlines()[0] for r in ours[1:]] == [d.splitlines()[0] for d in dynamo[1:]]
    assert len(ours[2].splitlines()) == 2
    assert all(failure_lines(r) for r in ours[1:])
    if torch_logs:  # the user's own logging still reaches stderr
        assert "Recompiling function step" in out.stderr
    else:
        assert "Recompiling function step" not in out.stderr
