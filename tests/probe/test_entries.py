"""Cache entries read from a real compile (probe/entries.py), against what Dynamo itself exported
for each compile (guard_export_fn: every guard with the builder that made it and its code) and
against the guard tree counted here by object identity."""

from __future__ import annotations

import torch

from helpers import FIXTURES, import_file
from recompile_probe.probe import entries as entries_mod
from recompile_probe.probe.entries import inspect_entry
from recompile_probe.reasons.text import strip_comment
from recompile_probe.records.run import OBJECT_ALIASING, SHAPE_ENV
from recompile_probe.targets.frames import frame_code, frame_locals


def _target():
    return import_file(FIXTURES / "aliasing_target.py").act


def _distinct_leaves(root) -> int:
    """Leaf guards of the tree, epilogue included, a guard hung under several managers (a
    relational one) once: counted by identity, not by what it prints. The wrappers are kept
    alive, so one C++ guard reached twice is the same Python object, never a reused id."""
    alive, stack = list(root.get_epilogue_lambda_guards()), [root]
    while stack:
        manager = stack.pop()
        alive += manager.get_leaf_guards()
        stack.extend(manager.get_child_managers())
    return len({id(g) for g in alive})


def test_guards_are_labelled_by_the_kind_dynamo_built_them_as():
    act = _target()
    torch._dynamo.reset()
    exported = []
    compiled = torch._dynamo.optimize(
        "eager", guard_export_fn=lambda guards: exported.append(list(guards))
    )(act)
    for n in (1, 2, 8):  # 1 → 2 recompiles with a dynamic dim: a shape-env guard appears
        compiled(torch.ones(n, 4))
    entries = torch._dynamo.eval_frame._debug_get_cache_entry_list(act.__code__)
    try:
        assert len(entries) == len(exported) == 2
        for entry in entries:
            info = inspect_entry(act.__code__, entry)
            guards = exported[int(info.compile_id.split("/")[1])]

            def code(kind, guards=guards):
                return sorted(
                    c for g in guards if g.create_fn_name() == kind for c in g.code_list or ()
                )

            shape = sorted(g.text for g in info.guards if g.kind == SHAPE_ENV)
            aliasing = sorted(g.text for g in info.guards if g.kind == OBJECT_ALIASING)
            assert shape == sorted(strip_comment(c) for c in code("SHAPE_ENV")), info.compile_id
            assert aliasing == code("DUPLICATE_INPUT") == ["G['F'] is G['torch'].nn.functional"]
            # the tally adds up, to the tree's own leaf count
            assert sum(info.leaf_kinds.values()) == info.leaf_guard_count
            assert info.leaf_guard_count == _distinct_leaves(entry.guard_manager.root)
        # the first entry (static sizes) has no symbolic guard at all, only the aliasing one
        first = inspect_entry(act.__code__, entries[-1])
        assert first.compile_id == "0/0" and SHAPE_ENV not in first.leaf_kinds
        assert first.leaf_kinds[OBJECT_ALIASING] == 1
    finally:
        torch._dynamo.reset()


def test_a_wrapped_bound_forwards_frame_locals_pass_its_own_guards():
    """A decorator's wrapped_func(*args, **kwargs) around a bound forward: its frame holds self
    in args[0]; rebuilt that way, the entry Dynamo made accepts the call it was made for."""
    wrapped = import_file(FIXTURES / "wrapped_targets.py")
    torch._dynamo.reset()
    x = torch.randn(2, 4)
    torch.compile(wrapped.forward, backend="eager")(x=x)
    code = frame_code(wrapped.forward)
    assert code is wrapped.Model.forward.__code__  # the wrapper's code: what Dynamo compiled
    f_locals = frame_locals(wrapped.forward, (), {"x": x})
    assert f_locals is not None and f_locals["args"] == (wrapped.model,)
    assert entries_mod.serving_entry(code, f_locals) not in (None, False)
    torch._dynamo.reset()
