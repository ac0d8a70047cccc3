"""The recompiles artifact the recorder switches on never reaches the program's output."""

from __future__ import annotations

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
