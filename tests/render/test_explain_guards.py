"""`explain`'s cache-entry listing (render/lines/explain.py) on a real run: each guard under
its real kind, and a by-kind tally that adds up to the leaf-guard count printed beside it.
The truth is what Dynamo exported for the same compiles (guard_export_fn), by hand."""

from __future__ import annotations

import json
import re
import shutil

import torch
from typer.testing import CliRunner

from helpers import FIXTURES
from recompile_probe.cli import app

SCENARIO = """
target: aliasing_target.py:act
inputs: [{shape: [B, 4]}]
sequences: {s: [1, 2, 8]}
strategies: [default]
repeats: 2
"""


def _exported(act):
    """Per compile id: the code of Dynamo's SHAPE_ENV and DUPLICATE_INPUT guards."""
    torch._dynamo.reset()
    exported = []
    compiled = torch._dynamo.optimize(
        "eager", guard_export_fn=lambda guards: exported.append(list(guards))
    )(act)
    for n in (1, 2, 8):
        compiled(torch.ones(n, 4))
    torch._dynamo.reset()

    def code(guards, kind):
        return sorted(c for g in guards if g.create_fn_name() == kind for c in g.code_list or ())

    return {
        f"0/{i}": (code(g, "SHAPE_ENV"), code(g, "DUPLICATE_INPUT")) for i, g in enumerate(exported)
    }


def test_explain_labels_guards_by_their_real_kind_and_the_tally_adds_up(tmp_path, monkeypatch):
    shutil.copy(FIXTURES / "aliasing_target.py", tmp_path)
    (tmp_path / "al.yaml").write_text(SCENARIO)
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    import aliasing_target

    truth = _exported(aliasing_target.act)
    # a module global aliased by another name
    assert truth["0/0"] == ([], ["G['F'] is G['torch'].nn.functional"])
    assert truth["0/1"][0]  # the recompile made a symbolic guard

    result = CliRunner().invoke(app, ["explain", "al.yaml", "-f", "json", "-o", "x.json"])
    assert result.exit_code == 0, result.output
    (explanation,) = json.loads((tmp_path / "x.json").read_text())["explanations"]
    entries = {e["compile_id"]: e for e in explanation["entries"]}
    assert set(entries) == set(truth)
    for cid, (shape, aliasing) in truth.items():
        e = entries[cid]
        assert sorted(e["shape_env_guards"]) == shape, cid
        assert sorted(e["object_aliasing_guards"]) == aliasing, cid
        assert sum(e["leaf_guards_by_kind"].values()) == e["leaf_guard_count"], cid

    result = CliRunner().invoke(app, ["explain", "al.yaml"])
    assert result.exit_code == 0, result.output
    text = result.output
    heads = list(re.finditer(r"^  (0/\d)  .* (\d+) leaf guards \(tree\)$", text, re.M))
    assert [m.group(1) for m in heads] == ["0/0", "0/1"]
    for m, end in zip(heads, [*heads[1:], None]):
        block = text[m.end() : end.start() if end else text.index("Guard diff")]
        tally = re.search(r"leaf guards by kind: (.*?)\n      shape-env", block, re.S).group(1)
        counts = [int(n) for n in re.findall(r"\b[A-Z_]+ (\d+)", tally)]
        assert sum(counts) == int(m.group(2)), block
        shape, aliasing = truth[m.group(1)]
        assert f"shape-env guards: {'; '.join(shape) or 'none'}" in block
        assert "object-aliasing guards: G['F'] is G['torch'].nn.functional" in block
