"""Outputs against eager, structurally: real torch values and objects shaped like what models
return (dataclass outputs, caches whose tensors live in attributes and grow after the call)."""

from __future__ import annotations

import dataclasses
import functools
from collections import OrderedDict

import pytest
import torch

from recompile_probe.probe.compare import compare, snapshot


class Layer:
    def __init__(self, keys: torch.Tensor) -> None:
        self.keys = keys
        self.is_initialized = True


class Cache:
    def __init__(self, *keys: torch.Tensor) -> None:
        self.layers = [Layer(k) for k in keys]

    def grow(self) -> None:
        for layer in self.layers:
            layer.keys = torch.cat([layer.keys, layer.keys[:, -1:]], dim=1)


@dataclasses.dataclass
class Output(OrderedDict):  # transformers' ModelOutput: a dataclass that is also a mapping
    logits: torch.Tensor | None = None
    past_key_values: Cache | None = None

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):
            if getattr(self, f.name) is not None:
                self[f.name] = getattr(self, f.name)


def _output(scale: float = 1.0, keys: torch.Tensor | None = None) -> Output:
    torch.manual_seed(0)
    logits, default_keys = torch.randn(2, 4) * scale, torch.randn(2, 3)
    return Output(logits=logits, past_key_values=Cache(default_keys if keys is None else keys))


def test_equal_model_outputs_match():
    assert compare(_output(), snapshot(_output()), None, None).match is True


def test_a_difference_names_its_path():
    outcome = compare(_output(2.0), snapshot(_output()), None, None)
    assert outcome.match is False and outcome.detail.startswith("logits:")
    eager = _output()
    changed = _output(keys=eager.past_key_values.layers[0].keys + 1)
    outcome = compare(changed, snapshot(eager), None, None)
    assert outcome.match is False
    assert outcome.detail.startswith("past_key_values.layers[0].keys:")


def test_eager_is_kept_as_it_was_when_its_call_returned():
    eager, compiled = _output(), _output()
    kept = snapshot(eager)
    eager.past_key_values.grow()  # the program goes on: the cache grows after the call
    assert compare(compiled, kept, None, None).match is True
    assert compare(compiled, snapshot(eager), None, None).match is False


def test_what_cannot_be_compared_is_unknown_with_its_type_and_path():
    a, e = _output(), _output()
    a.past_key_values.layers[0].handle = functools.partial(max, 1)  # its state lives in C
    e.past_key_values.layers[0].handle = functools.partial(min, 2)
    outcome = compare(a, snapshot(e), None, None)
    assert outcome.match is None
    assert outcome.detail == "not compared: past_key_values.layers[0].handle is a partial"
    # a difference elsewhere still decides
    a["logits"] = a.logits = a.logits + 1
    assert compare(a, snapshot(e), None, None).match is False


def test_structure_and_exact_integers():
    assert compare([1, 2], snapshot([1, 2, 3]), None, None).match is False
    assert compare({"a": 1}, snapshot({"b": 1}), None, None).match is False
    ints = torch.tensor([1, 2, 3])
    assert compare(ints, snapshot(ints + 0), None, None).match is True
    assert compare(ints, snapshot(ints.float()), None, None).match is False  # dtype differs
    close = torch.tensor([1.0]) + 1e-7
    assert compare(close, snapshot(torch.tensor([1.0])), None, None).match is True
    assert compare(close, snapshot(torch.tensor([1.0])), 0.0, 0.0).match is False


def test_floats_use_the_tolerances_and_python_objects_their_attributes():
    assert compare({"loss": 0.1 + 0.2}, snapshot({"loss": 0.3}), None, None).match is True
    assert compare({"loss": 0.1}, snapshot({"loss": 0.3}), None, None).match is False

    class Slotted:
        __slots__ = ("t",)

        def __init__(self, t):
            self.t = t

    same = compare(Slotted(torch.ones(2)), snapshot(Slotted(torch.ones(2))), None, None)
    assert same.match is True
    other = compare(Slotted(torch.ones(2)), snapshot(Slotted(torch.zeros(2))), None, None)
    assert other.match is False and other.detail.startswith("t:")


def test_numpy_aliases_and_cycles():
    np = pytest.importorskip("numpy")
    assert compare(np.ones(3), snapshot(np.ones(3)), None, None).match is True
    assert compare(np.ones(3), snapshot(np.zeros(3)), None, None).match is False
    shared = [1]
    assert compare([[1], [1]], snapshot([shared, shared]), None, None).match is True
    loop: list = []
    loop.append(loop)
    assert compare(loop, snapshot(loop), None, None).match is True


def test_an_object_that_cannot_be_read_is_unknown_not_a_crash():
    class Broken(dict):
        def __getitem__(self, key):
            raise RuntimeError("no")

    outcome = compare(Broken(a=1), snapshot(Broken(a=1)), None, None)
    assert outcome.match is None and "Broken" in outcome.detail
