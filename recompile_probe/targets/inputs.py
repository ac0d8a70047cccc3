"""Tensor specs and factories -> deterministic arguments for one point (imports torch lazily).

The same point gets the same values wherever it appears (``seed_for``), so a repeated point is a
true repeat (a cache hit), and eager and compiled calls see identical inputs.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from ..errors import TargetError
from ..scenario.inputs import Specs, TensorSpec
from ..scenario.keys import DTYPE_ALIASES
from ..sizes.paths import DimRef, resolve, why_unresolved
from ..sizes.points import BATCH, Point

if TYPE_CHECKING:
    import torch

#: (positional args, keyword args): what the target is called with at one point
Inputs = tuple[tuple, dict]


def dtype_of(name: str) -> torch.dtype:
    import torch

    return getattr(torch, DTYPE_ALIASES.get(name, name))


def seed_for(seed: int, point: Point | int) -> int:
    # The same point gets the same values wherever it appears, so a repeated point is a true
    # repeat (a cache hit), and eager and compiled calls see identical inputs. A batch-only point
    # keeps the formula reports were made with.
    if isinstance(point, int):
        return (seed * 1_000_003 + point) % (2**63)
    if point.symbols == (BATCH,):
        return seed_for(seed, point.get(BATCH) or 0)
    mixed = 0
    for i, (_, size) in enumerate(point.items):
        mixed += size * 7919**i
    return (seed * 1_000_003 + mixed) % (2**63)


def make_tensor(spec: TensorSpec, point: Point, generator: torch.Generator) -> torch.Tensor:
    import torch

    shape = tuple(int(point.get(d) or 0) if isinstance(d, str) else int(d) for d in spec.shape)
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


def spec_factory(specs: Specs, seed: int) -> Callable[[Point], Inputs]:
    def make(point: Point) -> Inputs:
        import torch

        generator = torch.Generator().manual_seed(seed_for(seed, point))
        args, kwargs = [], {}
        for arg, s in specs:
            value = make_tensor(s, point, generator) if isinstance(s, TensorSpec) else s.value
            if isinstance(arg, int):
                args.append(value)
            else:
                kwargs[arg] = value
        return tuple(args), kwargs

    return make


def normalize(result: Any) -> Inputs:
    """What a factory returns -> (args, kwargs): a tuple or list (positional), a mapping
    (keyword), or a pair ``(args_tuple, kwargs_dict)``; anything else is one argument."""
    if (
        isinstance(result, tuple)
        and len(result) == 2
        and isinstance(result[0], (tuple, list))
        and isinstance(result[1], dict)
    ):
        return tuple(result[0]), dict(result[1])
    if isinstance(result, dict):
        return (), dict(result)
    if isinstance(result, (tuple, list)):
        return tuple(result), {}
    return (result,), {}


def user_factory(
    fn: Callable[..., Any],
    seed: int,
    symbols: Sequence[str],
    refs: Sequence[DimRef],
    param_names: Sequence[str | None] = (),
    error: ErrorAt | None = None,
) -> Callable[[Point], Inputs]:
    """A scenario's ``factory:``. A batch-only scenario calls it ``make_inputs(batch_size)``;
    with other symbols, ``make_inputs(B=2, S=7)``. The declared dims are checked on the first
    two distinct points it makes."""
    checked: list[Point] = []

    def make(point: Point) -> Inputs:
        import torch

        # A factory that draws from the global RNG is made deterministic too.
        torch.manual_seed(seed_for(seed, point))
        result = fn(point.get(BATCH)) if tuple(symbols) == (BATCH,) else fn(**point.to_dict())
        inputs = normalize(result)
        if len(checked) < 2 and point not in checked:
            check_dims(inputs, refs, point, param_names, error)
            checked.append(point)
        return inputs

    return make


#: (scenario key or None, message, remedy) -> the error to raise; the loader's names the file and
#: line of the key (a ScenarioError)
ErrorAt = Callable[[Any, str, Any], Exception]


def check_dims(
    inputs: Inputs,
    refs: Sequence[DimRef],
    point: Point | None,
    param_names: Sequence[str | None] = (),
    error: ErrorAt | None = None,
    driver: bool = False,
) -> None:
    """Every declared dim must name something the inputs have (an error naming the dims key
    otherwise); a non-tensor or a dim whose size is not the symbol's is warned about. Without a
    ``point`` sizes are not compared (a ``driver``'s calls, whose sizes change within a point)."""
    import torch

    def fail(ref: DimRef, message: str, remedy: str | None = None) -> Exception:
        if error is not None and ref.key is not None:
            return error(ref.key, message, remedy)
        label = ref.key or ("batch_dims" if ref.symbol == BATCH else f"dims: {ref.symbol}:")
        return TargetError(f"{label} {message}", remedy)

    args, kwargs = inputs
    for ref in refs:
        found = list(resolve(ref.path, args, kwargs, param_names))
        label = ref.key or ("batch_dims" if ref.symbol == BATCH else f"dims: {ref.symbol}:")
        if not found:
            if isinstance(ref.path.head, int) and not ref.path.steps:
                raise fail(
                    ref,
                    f"names argument {ref.path.head}, but "
                    + (
                        f"the driver called the target with {len(args)} positional argument(s)"
                        if driver
                        else f"the factory returned {len(args)} argument(s)"
                    ),
                    "Argument indexes count from 0 in the positional arguments.",
                )
            made = "the driver's call does" if driver else "the factory's inputs do"
            raise fail(
                ref,
                f"names {ref.path}, which {made} not have: "
                f"{why_unresolved(ref.path, args, kwargs, param_names)}",
                "Positional indexes count from 0; keywords and paths name what it "
                'passes, e.g. input_ids, cache.keys[*], batch["pixel_values"].',
            )
        for path, value in found:
            if not isinstance(value, torch.Tensor):
                # Still a valid run (e.g. a list of B tensors): only the marks have nothing to mark.
                warnings.warn(
                    f"recompile-probe: {label} names argument {path}, a "
                    f"{type(value).__name__}, not a tensor: mark strategies leave it "
                    "unmarked",
                    stacklevel=2,
                )
                continue
            for dim in ref.dims:
                if not -value.dim() <= dim < value.dim():
                    raise fail(
                        ref,
                        f"names dim {dim} of argument {path}, which has "
                        f"{value.dim()} dim(s) (shape {list(value.shape)})",
                    )
                size = None if point is None else point.get(ref.symbol)
                if size is not None and value.shape[dim] != size:
                    warnings.warn(
                        f"recompile-probe: {label} names dim {dim} of argument {path}, "
                        f"of size {value.shape[dim]} at {point}, not "
                        f"{ref.symbol} = {size}",
                        stacklevel=2,
                    )
