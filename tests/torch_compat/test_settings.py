"""Changed torch configs are found (and only those), and put back at their defaults."""

from __future__ import annotations

import torch

from recompile_probe.torch_compat.settings import changed_config, defaults_restored


def test_a_changed_config_is_found_and_restored():
    assert "torch._dynamo.config.recompile_limit" not in changed_config()
    with torch._dynamo.config.patch(recompile_limit=3):
        changed = changed_config()
        assert changed["torch._dynamo.config.recompile_limit"] == "3"
        assert "torch._dynamo.config.cache_size_limit" not in changed  # an alias: told once
        with defaults_restored():
            assert torch._dynamo.config.recompile_limit != 3
            assert "torch._dynamo.config.recompile_limit" not in changed_config()
        assert torch._dynamo.config.recompile_limit == 3
    assert "torch._dynamo.config.recompile_limit" not in changed_config()
