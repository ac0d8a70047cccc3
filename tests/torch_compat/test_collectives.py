"""Reading whether guard collectives are on, against torch's own setter."""

from __future__ import annotations

import pytest
import torch

from recompile_probe.torch_compat.collectives import guard_collectives_on

pytestmark = pytest.mark.skipif(
    not hasattr(torch.compiler, "set_enable_guard_collectives"),
    reason="this torch has no guard collectives",
)


def test_the_reader_follows_torchs_setter_and_leaves_it_as_it_was():
    assert guard_collectives_on() is False
    previous = torch.compiler.set_enable_guard_collectives(True)
    try:
        assert guard_collectives_on() is True
        assert guard_collectives_on() is True  # reading it did not switch it off
        # torch's setter reports what was on before: the reader left the hook in place
        assert torch.compiler.set_enable_guard_collectives(True) is True
    finally:
        torch.compiler.set_enable_guard_collectives(bool(previous))
    assert guard_collectives_on() is False
