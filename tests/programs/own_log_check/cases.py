"""A suite that checks its own recompiles the way transformers' compile tests do: it switches
recompiles_verbose on with set_logs, reads what the ``torch._dynamo.guards`` logger propagates
into a handler of its own, and switches torch's logging off again (copied as test_own_log.py by
tests/commands/test_watch_own_log_check.py)."""

import io
import logging

import torch


def _compiled():
    torch._dynamo.reset()
    return torch.compile(lambda x: x.sin() * 2, backend="eager", dynamic=False)


def _captured(f, size):
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


def test_sees_its_own_recompile():
    f = _compiled()
    f(torch.ones(2))
    assert "Recompiling" in _captured(f, 3)


def test_sees_none_when_nothing_recompiles():
    f = _compiled()
    f(torch.ones(2))
    assert "Recompiling" not in _captured(f, 2)


def test_a_later_test_still_sees_its_recompile():
    f = _compiled()
    f(torch.ones(5))
    f(torch.ones(6))  # a recompile with the program's logging off: nobody's handler sees it
    assert "Recompiling" in _captured(f, 7)


def test_debug_records_of_its_own():
    # what pytest's log capture shows for this test is compared with a plain run
    logging.getLogger("own_log_check").debug("a record of the suite's own")
    f = _compiled()
    f(torch.ones(2))
    f(torch.ones(3))
