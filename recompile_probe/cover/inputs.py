"""The target's inputs at any point of a range, as guards need them: without data.

A call the run made (the template) is rebuilt at other sizes: every tensor a size symbol moves
becomes ``torch.empty`` of the new shape, in the template's layout, dtype, device and
requires_grad, carrying the template's marks (the strategy's and the user's own); everything
else is passed as the template had it. ``torch.empty`` touches no memory pages, so a point
costs microseconds whatever its size. Guards never read tensor data, so these inputs decide
exactly what the real ones would; the stance sampler, which executes the call, is handed the
scenario's own factory instead.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import torch

from ..sizes.paths import resolve
from ..targets.inputs import Inputs
from ..targets.loader import LoadedTarget


@dataclass(frozen=True)
class Template:
    """A call's inputs, with the dims each size symbol moves."""

    inputs: Inputs
    #: id(tensor) -> (tensor, {dim: symbol})
    moved: Mapping[int, tuple[torch.Tensor, Mapping[int, str]]]
    #: (Dynamo source, dim) -> symbol, for reading guards
    sources: Mapping[tuple[str, int], str]

    @classmethod
    def of(cls, target: LoadedTarget, inputs: Inputs, symbols: Sequence[str]) -> Template:
        args, kwargs = inputs
        moved: dict[int, tuple[torch.Tensor, dict[int, str]]] = {}
        sources: dict[tuple[str, int], str] = {}
        for ref in target.dims:
            if ref.symbol not in symbols:
                continue
            for path, value in resolve(ref.path, args, kwargs, target.param_names):
                if not isinstance(value, torch.Tensor):
                    continue
                dims = moved.setdefault(id(value), (value, {}))[1]
                source = target.source_of(path)
                for dim in ref.dims:
                    d = dim % value.dim()
                    dims[d] = ref.symbol
                    if source is not None:
                        sources[(source, d)] = ref.symbol
        return cls(inputs, moved, sources)

    def at(self, sizes: Mapping[str, int]) -> Inputs | None:
        """The inputs at these sizes; None where a moved tensor sits inside an object this
        cannot rebuild (only tuples, lists and dicts are walked)."""
        made: dict[int, torch.Tensor] = {}

        def rebuild(value: Any) -> Any:
            key = id(value)
            if key in self.moved:
                if key not in made:
                    tensor, dims = self.moved[key]
                    made[key] = _resized(tensor, dims, sizes)
                return made[key]
            if isinstance(value, torch.Tensor):
                return value
            if isinstance(value, tuple):
                items = [rebuild(v) for v in value]
                return type(value)(*items) if hasattr(value, "_fields") else tuple(items)
            if isinstance(value, list):
                return [rebuild(v) for v in value]
            if isinstance(value, dict):
                return {k: rebuild(v) for k, v in value.items()}
            return value

        args, kwargs = self.inputs
        out = (tuple(rebuild(a) for a in args), {k: rebuild(v) for k, v in kwargs.items()})
        return out if len(made) == len(self.moved) else None


def _resized(tensor: torch.Tensor, dims: Mapping[int, str], sizes: Mapping[str, int]) -> Any:
    shape = [sizes.get(dims[d], n) if d in dims else n for d, n in enumerate(tensor.shape)]
    # the template's layout: its dims ordered by stride, outermost first
    strides = tensor.stride()
    order = sorted(range(tensor.dim()), key=lambda d: -strides[d])
    if tensor.is_contiguous() or order == list(range(tensor.dim())):
        new = torch.empty(shape, dtype=tensor.dtype, device=tensor.device)
    else:
        dense = torch.empty([shape[d] for d in order], dtype=tensor.dtype, device=tensor.device)
        new = dense.permute([order.index(d) for d in range(tensor.dim())])
    if tensor.requires_grad:
        new.requires_grad_(True)
    for name, value in vars(tensor).items():
        if name.startswith("_dynamo"):  # the marks the call carried
            setattr(new, name, copy.copy(value))
    return new
