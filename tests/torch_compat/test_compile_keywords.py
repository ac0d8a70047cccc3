"""The one reader of torch.compile's keywords, against torch's own signature."""

from __future__ import annotations

import inspect
import json
import subprocess
import sys
import textwrap

import torch

from recompile_probe.torch_compat import knobs
from recompile_probe.torch_compat.compile_keywords import compile_accepts, compile_keywords
from recompile_probe.torch_compat.stance import set_stance_missing

SIGNATURE = frozenset(inspect.signature(torch.compile).parameters)


def test_the_keywords_are_the_signatures():
    assert compile_keywords() == SIGNATURE
    assert all(compile_accepts(k) for k in SIGNATURE)
    assert not compile_accepts("no_such_keyword")


def test_read_from_source_without_importing_torch():
    """The scenario loader checks ``compile:`` keys before torch is imported: the keywords read
    from torch/__init__.py must be the signature torch itself reports once imported."""
    script = textwrap.dedent("""
        import json, sys
        from recompile_probe.torch_compat.compile_keywords import compile_keywords
        read = compile_keywords()
        imported = "torch" in sys.modules
        import inspect, torch
        print(json.dumps({"read": sorted(read or ()), "imported": imported,
                          "signature": sorted(inspect.signature(torch.compile).parameters)}))
    """)
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=True
    )
    seen = json.loads(out.stdout.strip().splitlines()[-1])
    assert not seen["imported"]
    assert seen["read"] and seen["read"] == seen["signature"]


def test_recompile_limit_moves_to_config_only_where_compile_lacks_it(monkeypatch):
    kwargs = {"recompile_limit": 3, "fullgraph": False}
    if "recompile_limit" in SIGNATURE:
        assert knobs.recompile_limit_as_config(kwargs) == {}
        assert kwargs == {"recompile_limit": 3, "fullgraph": False}
    monkeypatch.setattr(knobs, "compile_accepts", lambda name: False)
    (dotted, value), *_ = knobs.recompile_limit_as_config(kwargs).items()
    assert kwargs == {"fullgraph": False} and value == 3
    module, _, name = dotted.rpartition(".")
    assert module == "torch._dynamo.config" and hasattr(torch._dynamo.config, name)


def test_a_missing_keyword_names_its_release(monkeypatch):
    assert knobs.compile_keyword_missing("dynamic") is None
    monkeypatch.setattr(knobs, "compile_keywords", lambda: frozenset({"dynamic"}))
    why = knobs.compile_keyword_missing("isolate_recompiles")
    assert why is not None and "isolate_recompiles=" in why and "torch 2.13" in why
    monkeypatch.setattr(knobs, "compile_keywords", lambda: None)  # unreadable: torch decides
    assert knobs.compile_keyword_missing("isolate_recompiles") is None


def test_a_torch_without_set_stance_says_so(monkeypatch):
    assert set_stance_missing() is None
    monkeypatch.delattr(torch.compiler, "set_stance")
    assert set_stance_missing() == "torch.compiler.set_stance does not exist in this torch"
