"""The program's state walk (probe/state.py) on plain objects and a module: what it reports and
that it puts back the very objects the program held."""

from __future__ import annotations

import types

import torch

from recompile_probe.probe.state import ProgramState, roots_of, state_note


class Settings:
    def __init__(self):
        self.mode = None
        self.history = []
        self.table = {"a": 1}


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.settings = Settings()
        self.head = torch.nn.Linear(2, 2)


def test_a_rebound_added_and_removed_attribute_are_reported_and_put_back():
    net = Net()
    settings, history, table = net.settings, net.settings.history, net.settings.table
    state = ProgramState([("net", net)])
    settings.mode = "train"
    settings.extra = 3
    del settings.table
    assert sorted(c.text() for c in state.changes()) == [
        "net.settings.extra (unset → 3)",
        "net.settings.mode (None → 'train')",
        "net.settings.table (dict of 1 → unset)",
    ]
    state.restore()
    assert settings.mode is None and not hasattr(settings, "extra")
    assert settings.table is table and settings.history is history  # the same objects
    assert state.changes() == []


def test_container_contents_changed_in_place_are_put_back_in_the_same_container():
    net = Net()
    state = ProgramState([("net", net)])
    net.settings.history.append(1)
    net.settings.table["b"] = 2
    assert sorted(c.path for c in state.changes()) == [
        "net.settings.history",
        "net.settings.table",
    ]
    history = net.settings.history
    state.restore()
    assert net.settings.history is history and history == []
    assert net.settings.table == {"a": 1}


def test_a_module_child_swapped_reads_as_an_attribute_and_is_put_back():
    net = Net()
    head = net.head
    state = ProgramState([("net", net)])
    net.head = torch.nn.Linear(2, 2)
    assert [c.path for c in state.changes()] == ["net._modules"]
    state.restore()
    assert net.head is head


def test_a_function_put_on_an_object_is_put_back_but_not_reported():
    net = Net()
    state = ProgramState([("net", net)])
    net.forward = lambda x: x  # what a driver's `model.forward = fn` does
    assert state.changes() == []
    state.restore()
    assert "forward" not in vars(net)


def test_a_drivers_globals_name_what_a_bound_method_target_reaches():
    module = types.ModuleType("program")
    exec(
        "def drive(fn, B):\n    return model(fn)\n",
        module.__dict__,
    )
    net = Net()
    module.__dict__["model"] = net
    state = ProgramState(roots_of("program.py:forward", net.forward, module.drive))
    net.settings.mode = "eval"
    assert [c.path for c in state.changes()] == ["model.settings.mode"]


def test_tensors_are_not_walked_or_copied():
    net = Net()
    state = ProgramState([("net", net)])
    with torch.no_grad():
        net.head.weight.add_(1)  # a value change, not Python state
    assert state.changes() == []


def test_the_note_names_a_few_changes_and_counts_the_rest():
    net = Net()
    state = ProgramState([("net", net)])
    assert state_note(state.changes()) is None
    for i in range(6):
        setattr(net.settings, f"k{i}", i)
    note = state_note(state.changes())
    assert note is not None and note.count("unset →") == 4 and "and 2 more" in note
