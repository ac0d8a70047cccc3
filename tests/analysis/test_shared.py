"""Shared code objects, on real compiles: the recorder's per-compile closures against Dynamo's own
cache entries and compilation metrics for the wrapper's one code object."""

from __future__ import annotations

import pytest
import torch
from torch._dynamo.eval_frame import _debug_get_cache_entry_list
from torch._dynamo.utils import get_compilation_metrics

from helpers import FIXTURES, import_file
from recompile_probe import record
from recompile_probe.analysis.functions import by_function
from recompile_probe.analysis.shared import shared_code
from recompile_probe.reasons.kinds import no_fix_why, remedy
from recompile_probe.recording.recorder import Recorder

pytestmark = pytest.mark.usefixtures("fresh_dynamo")


def _fixture():
    return import_file(FIXTURES / "shared_wrapper.py")


def _wrapper_records(code):
    return [
        m
        for m in get_compilation_metrics()
        if (m.co_name, m.co_firstlineno) == (code.co_name, code.co_firstlineno)
    ]


def test_a_wrapper_compiled_for_two_functions_is_one_shared_code_object():
    mod = _fixture()
    compiled = torch.compile(mod.Model(), backend="eager")
    with Recorder() as rec:
        compiled(torch.randn(3))
        compiled(torch.randn(3))
    code = mod.WRAPPER_CODE
    # Dynamo's truth: two entries on the wrapper's code, the second a recompile of it
    assert len(_debug_get_cache_entry_list(code)) == 2
    records = _wrapper_records(code)
    assert [m.cache_size for m in records] == [0, 1]
    assert "fn.__code__" in records[1].recompile_reason

    wrapper = [e for e in rec.events if (e.function, e.line) == ("wrapped", code.co_firstlineno)]
    assert [e.compile_id for e in wrapper] == [str(m.compile_id) for m in records]
    assert [f.name for e in wrapper for f in e.closure_functions] == ["Model.forward", "inner"]
    recompile = wrapper[1]
    assert recompile.reason_kind == "shared_code_object"
    assert recompile.reason_detail.function == "inner"
    assert recompile.reason_detail.compiled_for == ("Model.forward",)

    (found,) = shared_code(rec.events)
    assert found.functions == ("Model.forward", "inner")
    assert (found.compiles, found.recompiles) == (2, 1)
    (summary,) = [f for f in by_function(rec.events) if f.line == code.co_firstlineno]
    assert summary.shared_by == ("Model.forward", "inner")
    first = summary.causes[0]
    assert first.kind == "shared_code_object" and first.recompiles == 1
    assert first.label == "one code object shared by 2 functions: Model.forward, inner"
    # the remedy names isolate_recompiles exactly where this torch.compile takes it
    import inspect

    takes = "isolate_recompiles" in inspect.signature(torch.compile).parameters
    assert recompile.reason_detail.isolate_recompiles is takes
    for text in (
        no_fix_why("shared_code_object", recompile.reason_detail),
        remedy("shared_code_object", "", recompile.reason_detail),
    ):
        assert "per code object" in text or "recompile limit" in text
        assert ("isolate_recompiles" in text) is takes
        assert "__wrapped__" in text


def test_a_wrapper_recompiled_for_its_one_function_is_not_shared():
    mod = _fixture()
    compiled = torch.compile(mod.alone, backend="eager", dynamic=False)
    with Recorder() as rec:
        compiled(torch.randn(3))
        compiled(torch.randn(4))
    code = mod.WRAPPER_CODE
    assert len(_debug_get_cache_entry_list(code)) == 2  # Dynamo: a real recompile of it
    (recompile,) = [e for e in rec.events if e.recompile]
    assert recompile.reason_kind == "static_size_change"
    assert [f.name for f in recompile.closure_functions] == ["alone"]
    assert shared_code(rec.events) == ()
    assert all(not f.shared_by for f in by_function(rec.events))


def test_run_and_explain_name_the_shared_code_object(tmp_path):
    import json

    from typer.testing import CliRunner

    from recompile_probe.cli import app

    path = tmp_path / "shared.yaml"
    path.write_text(
        f"target: {FIXTURES / 'shared_wrapper.py'}:forward\ninputs: [{{shape: [B]}}]\n"
        "sequences: {s: [3, 3]}\nstrategies: [default]\nrepeats: 0\n"
    )
    result = CliRunner().invoke(
        app, ["explain", str(path), "--strategy", "default", "-q", "-f", "json"]
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    (run,) = data["report"]["runs"]
    code = _fixture().WRAPPER_CODE
    (found,) = run["shared_code"]
    assert (found["function"], found["line"]) == ("wrapped", code.co_firstlineno)
    assert found["functions"] == ["Model.forward", "inner"]
    wrapper = [e for e in run["compile_events"] if e["function"] == "wrapped"]
    # as Dynamo recorded it (the first test reads its records): compiled twice, then a recompile
    assert [e["recompile"] for e in wrapper] == [False, True]
    assert wrapper[1]["reason_kind"] == "shared_code_object"
    text = CliRunner().invoke(app, ["explain", str(path), "--strategy", "default", "-q"]).stdout
    assert "one code object shared by 2 functions: Model.forward, inner" in text


def test_tiny_llama_shares_transformers_deprecate_kwarg_wrapper():
    transformers = pytest.importorskip("transformers")
    from transformers import masking_utils

    config = transformers.LlamaConfig(
        vocab_size=64,
        hidden_size=16,
        intermediate_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        num_key_value_heads=2,
        max_position_embeddings=64,
    )
    torch.manual_seed(0)
    model = transformers.LlamaForCausalLM(config).eval()
    wrapped = (
        transformers.LlamaForCausalLM.forward,
        transformers.LlamaModel.forward,
        masking_utils.create_causal_mask,
    )
    code = wrapped[0].__code__
    if any(fn.__code__ is not code for fn in wrapped):
        pytest.skip("this transformers does not wrap the three in one decorator")
    expected = [fn.__wrapped__.__qualname__ for fn in wrapped]
    ids = torch.randint(1, 64, (1, 6))
    # an unbacked sequence length makes data-dependent graph breaks: Dynamo then enters the
    # wrapper as its own frame for the model's forward and for the mask function
    torch._dynamo.decorators.mark_unbacked(ids, 1)
    compiled = torch.compile(model.forward, backend="eager")
    with Recorder() as rec, torch.no_grad():
        compiled(input_ids=ids, attention_mask=torch.ones_like(ids), use_cache=False)
    # Dynamo's truth: one entry per function on the one code object, each after the first a
    # recompile of it
    assert len(_debug_get_cache_entry_list(code)) == 3
    assert [m.cache_size for m in _wrapper_records(code)] == [0, 1, 2]
    ((found, summary),) = [
        (s, f)
        for s in shared_code(rec.events)
        for f in by_function(rec.events)
        if (s.filename, s.line) == (code.co_filename, code.co_firstlineno)
        and (f.filename, f.line) == (code.co_filename, code.co_firstlineno)
    ]
    assert list(found.functions) == expected
    assert (found.compiles, found.recompiles) == (3, 2)
    assert summary.causes[0].label == (
        "one code object shared by 3 functions: "
        "LlamaForCausalLM.forward, LlamaModel.forward, create_causal_mask"
    )
    assert all(c.kind != "type_or_id_change" for c in summary.causes if c.recompiles)
    # as record() and watch name it: the code object's own name, whatever else it served
    torch._dynamo.reset()
    with record() as rec, torch.no_grad():
        torch._dynamo.decorators.mark_unbacked(ids, 1)
        compiled(input_ids=ids, attention_mask=torch.ones_like(ids), use_cache=False)
    rows = {(f.function, f.filename, f.line) for f in rec.by_function()}
    assert (code.co_qualname, code.co_filename, code.co_firstlineno) in rows, rows
    (row,) = [
        f
        for f in rec.by_function()
        if (f.filename, f.line) == (code.co_filename, code.co_firstlineno)
    ]
    assert row.function == code.co_qualname and row.code_name is None


def test_a_wrapper_is_named_after_what_it_served_only_while_it_served_one_function():
    """One model through transformers' decorator: the row is that model's forward; two models
    through it: the code object's own name (which names neither), listed with both."""
    transformers = pytest.importorskip("transformers")

    def tiny(config_cls, model_cls):
        config = config_cls(
            vocab_size=64, hidden_size=16, intermediate_size=32, num_hidden_layers=1,
            num_attention_heads=2, num_key_value_heads=2, max_position_embeddings=64,
        )  # fmt: skip
        torch.manual_seed(0)
        return model_cls(config).eval()

    llama = tiny(transformers.LlamaConfig, transformers.LlamaForCausalLM)
    mistral = tiny(transformers.MistralConfig, transformers.MistralForCausalLM)
    code = transformers.LlamaForCausalLM.forward.__code__
    if transformers.MistralForCausalLM.forward.__code__ is not code:
        pytest.skip("this transformers does not wrap both forwards in one decorator")
    ids = torch.randint(1, 64, (1, 6))

    def rows(models):
        torch._dynamo.reset()
        with record() as rec, torch.no_grad():
            for model in models:
                torch.compile(model.forward, backend="eager")(input_ids=ids, use_cache=False)
        return [
            f
            for f in rec.by_function()
            if (f.filename, f.line) == (code.co_filename, code.co_firstlineno)
        ]

    (one,) = rows([llama])
    assert (one.function, one.code_name) == ("LlamaForCausalLM.forward", code.co_qualname)
    (both,) = rows([llama, mistral])
    assert both.function == code.co_qualname
    assert both.shared_by == ("LlamaForCausalLM.forward", "MistralForCausalLM.forward")
    assert both.compiles == 2  # Dynamo's: one entry per model on the one code object
    assert len(_debug_get_cache_entry_list(code)) == 2
