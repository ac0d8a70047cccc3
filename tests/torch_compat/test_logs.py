"""The recompiles artifact the recorder switches on never reaches the program's output."""

from __future__ import annotations

import re

import torch

from recompile_probe.torch_compat.logs import recompiles_stream


def test_messages_are_read_and_not_printed_even_after_torch_logging_is_reinitialized(capfd):
    torch._dynamo.reset()
    messages: list[str] = []
    with recompiles_stream(messages.append) as streaming:
        assert streaming
        f = torch.compile(lambda x: x + 1, backend="eager", dynamic=False)
        f(torch.ones(1))
        # what a program (or a test framework) may do: torch then gives every enabled
        # artifact a stderr handler
        torch._logging._internal._init_logs()
        f(torch.ones(2))
        f(torch.ones(3))
    out, err = capfd.readouterr()
    assert len(messages) == 2 and all("size mismatch" in m for m in messages)
    assert "recompiles" not in err and "size mismatch" not in err + out
    torch._dynamo.reset()


def _guards_capture(f, size):
    """transformers' pattern: switch recompiles_verbose on, read what ``torch._dynamo.guards``
    propagates into a handler of one's own, switch torch's logging back off."""
    import io
    import logging

    buf = io.StringIO()
    handler = logging.StreamHandler(buf)
    guards = logging.getLogger("torch._dynamo.guards")
    try:
        torch._logging.set_logs(recompiles_verbose=True)
        guards.addHandler(handler)
        f(torch.ones(size))
    finally:
        guards.removeHandler(handler)
        torch._logging.set_logs()
    return buf.getvalue()


def _logger_states():
    import logging

    from torch._logging._internal import log_state

    names = ("torch._dynamo.guards.__recompiles", "torch._dynamo.guards.__recompiles_verbose")
    return [(logging.getLogger(n).level, logging.getLogger(n).propagate) for n in names], set(
        log_state.artifact_names
    )


def test_a_program_that_captures_its_own_recompiles_log_sees_it_and_so_does_the_stream(capfd):
    # the oracle: the same program with no stream
    torch._dynamo.reset()
    f = torch.compile(lambda x: x * 2, backend="eager", dynamic=False)
    f(torch.ones(2))
    plain = _guards_capture(f, 3)
    plain_states = _logger_states()
    capfd.readouterr()

    torch._dynamo.reset()
    messages: list[str] = []
    with recompiles_stream(messages.append):
        f = torch.compile(lambda x: x * 2, backend="eager", dynamic=False)
        f(torch.ones(2))
        watched = _guards_capture(f, 3)
        f(torch.ones(4))  # after the program switched torch's logging off again
    out, err = capfd.readouterr()
    assert "Recompiling function" in plain
    assert watched.count("Recompiling function") == plain.count("Recompiling function") == 1
    assert len(messages) == 2 and "expected 2, actual 3" in messages[0]
    assert "expected 3, actual 4" in messages[1]  # still listening after set_logs()
    assert "actual 4" not in err + out  # the tool's own message stays unprinted
    assert _logger_states() == plain_states
    torch._dynamo.reset()


def test_nested_streams_both_hear_and_the_outer_state_comes_back():
    before = _logger_states()
    outer: list[str] = []
    inner: list[str] = []
    torch._dynamo.reset()
    f = torch.compile(lambda x: x - 1, backend="eager", dynamic=False)
    with recompiles_stream(outer.append):
        f(torch.ones(1))
        with recompiles_stream(inner.append):
            f(torch.ones(2))
        f(torch.ones(3))
    assert len(outer) == 2 and len(inner) == 1
    assert _logger_states() == before
    torch._dynamo.reset()


def _with_torchs_test_settings(f, size):
    """PyTorch's own test utility: TORCH_LOGS patched and a fresh log state swapped in, then
    what ``torch._dynamo.guards`` propagates read by a handler of the test's."""
    import io
    import logging

    from torch.testing._internal.logging_utils import log_settings

    buf = io.StringIO()
    handler = logging.StreamHandler(buf)
    guards = logging.getLogger("torch._dynamo.guards")
    with log_settings("recompiles"):
        guards.addHandler(handler)
        try:
            f(torch.ones(size))
        finally:
            guards.removeHandler(handler)
    return buf.getvalue()


def test_a_log_state_swapped_in_by_pytorchs_test_utilities_gets_its_records(capfd):
    torch._dynamo.reset()
    f = torch.compile(lambda x: x / 2, backend="eager", dynamic=False)
    f(torch.ones(2))
    plain = _with_torchs_test_settings(f, 3)
    plain_states = _logger_states()
    capfd.readouterr()

    torch._dynamo.reset()
    messages: list[str] = []
    with recompiles_stream(messages.append):
        f = torch.compile(lambda x: x / 2, backend="eager", dynamic=False)
        f(torch.ones(2))
        watched = _with_torchs_test_settings(f, 3)
        f(torch.ones(4))
    out, err = capfd.readouterr()
    assert plain.count("Recompiling function") == 1
    # the same record, word for word (the two lambdas' lines masked)
    assert re.sub(r"py:\d+", "py:N", watched) == re.sub(r"py:\d+", "py:N", plain)
    assert len(messages) == 2 and "expected 3, actual 4" in messages[1]
    assert "actual 4" not in err + out
    assert _logger_states() == plain_states
    torch._dynamo.reset()
