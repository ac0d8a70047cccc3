"""Deterministic arguments for one batch size, from tensor specs or a user factory (imports torch)."""

from __future__ import annotations

import warnings
from typing import Any, Callable, Mapping, Sequence

import torch

from .scenario import BATCH_SYMBOL, TensorSpec, Value

_DTYPE_ALIASES = {"float": "float32", "double": "float64", "half": "float16", "long": "int64",
                  "int": "int32"}


def dtype_of(name: str) -> torch.dtype:
    return getattr(torch, _DTYPE_ALIASES.get(name, name))


def seed_for(seed: int, batch_size: int) -> int:
    # The same batch size gets the same values wherever it appears, so a repeated size is a
    # true repeat (a cache hit), and eager and compiled calls see identical inputs.
    return (seed * 1_000_003 + batch_size) % (2**63)


def make_tensor(spec: TensorSpec, batch_size: int, generator: torch.Generator) -> torch.Tensor:
    shape = tuple(batch_size if d == BATCH_SYMBOL else int(d) for d in spec.shape)
    dtype = dtype_of(spec.dtype)
    if spec.fill == "randn":
        t = torch.randn(shape, generator=generator, dtype=dtype)
    elif spec.fill == "rand":
        t = torch.rand(shape, generator=generator, dtype=dtype)
    elif spec.fill == "randint":
        t = torch.randint(spec.low, spec.high, shape, generator=generator, dtype=dtype)
    elif spec.fill == "zeros":
        t = torch.zeros(shape, dtype=dtype)
    elif spec.fill == "ones":
        t = torch.ones(shape, dtype=dtype)
    elif spec.fill == "full":
        t = torch.full(shape, spec.value, dtype=dtype)
    else:  # arange
        numel = 1
        for d in shape:
            numel *= d
        t = torch.arange(numel, dtype=dtype).reshape(shape)
    if spec.device != "cpu":
        t = t.to(spec.device)
    if spec.requires_grad:
        t.requires_grad_(True)
    return t


def spec_factory(specs: Sequence[TensorSpec | Value], seed: int) -> Callable[[int], tuple]:
    def make(batch_size: int) -> tuple:
        generator = torch.Generator().manual_seed(seed_for(seed, batch_size))
        return tuple(
            make_tensor(s, batch_size, generator) if isinstance(s, TensorSpec) else s.value
            for s in specs
        )

    return make


def user_factory(fn: Callable[[int], Any], seed: int,
                 batch_dims: Mapping[int, tuple[int, ...]]) -> Callable[[int], tuple]:
    checked = False

    def make(batch_size: int) -> tuple:
        nonlocal checked
        # A factory that draws from the global RNG is made deterministic too.
        torch.manual_seed(seed_for(seed, batch_size))
        args = fn(batch_size)
        args = tuple(args) if isinstance(args, (tuple, list)) else (args,)
        if not checked:
            check_batch_dims(args, batch_dims)
            checked = True
        return args

    return make


def check_batch_dims(args: tuple, batch_dims: Mapping[int, tuple[int, ...]]) -> None:
    """batch_dims must name tensor arguments and dims they have (a TargetError otherwise)."""
    from .errors import TargetError

    for index, dims in batch_dims.items():
        if index >= len(args):
            raise TargetError(f"batch_dims names argument {index}, but the factory returned "
                              f"{len(args)} argument(s)",
                              "Argument indexes count from 0 in the tuple make_inputs returns.")
        arg = args[index]
        if not isinstance(arg, torch.Tensor):
            # Still a valid run (e.g. a list of B tensors): only the marks have nothing to mark.
            warnings.warn(f"recompile-probe: batch_dims names argument {index}, a "
                          f"{type(arg).__name__}, not a tensor: mark strategies leave it "
                          "unmarked", stacklevel=2)
            continue
        for dim in dims:
            if not -arg.dim() <= dim < arg.dim():
                raise TargetError(f"batch_dims names dim {dim} of argument {index}, which has "
                                  f"{arg.dim()} dim(s) (shape {list(arg.shape)})")
