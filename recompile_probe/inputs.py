"""Tensor specs and factories -> deterministic arguments for one point (one size per symbol).

The tensor-spec part of a scenario is parsed here, next to what builds the tensors; torch is
imported only when tensors are made, so the scenario validator stays torch-free.
"""

from __future__ import annotations

import re
import warnings
from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Callable, Mapping, Sequence

from .sizes import BATCH, DimRef, Path, Point, is_symbol, resolve, why_unresolved
from .spec import Context, suggest

if TYPE_CHECKING:
    import torch

#: tensor spec key -> what it holds (the parser checks keys against it; schema.py reads it)
TENSOR_KEYS: Mapping[str, str] = MappingProxyType({
    "shape": "Integers and size symbols (B, S, ...): a dim written as a symbol follows its size.",
    "dtype": "A torch dtype name (float32, bfloat16, int64, ...).",
    "device": "Where the tensor is made (default cpu).",
    "fill": "randn, rand, randint(low, high), zeros, ones, arange or full(value).",
    "low": "randint's lower bound (inclusive).",
    "high": "randint's upper bound (exclusive).",
    "value": "full's value.",
    "requires_grad": "Make the tensor require grad.",
})
#: fill name -> what it makes
FILLS: Mapping[str, str] = MappingProxyType({
    "randn": "normal(0, 1)", "rand": "uniform [0, 1)", "randint": "randint(low, high)",
    "zeros": "zeros", "ones": "ones", "arange": "0, 1, 2, ... in shape order",
    "full": "full(value)",
})
DTYPES = ("float32", "float", "float64", "double", "float16", "half", "bfloat16", "int64", "long",
          "int32", "int", "int16", "int8", "uint8", "bool", "complex64", "complex128")
_DTYPE_ALIASES = {"float": "float32", "double": "float64", "half": "float16", "long": "int64",
                  "int": "int32"}

#: (positional args, keyword args): what the target is called with at one point
Inputs = tuple[tuple, dict]


@dataclass(frozen=True)
class TensorSpec:
    """A tensor argument: a dim written as a size symbol (B, S, ...) follows that symbol."""

    shape: tuple[int | str, ...]
    dtype: str = "float32"
    device: str = "cpu"
    fill: str = "randn"
    low: int = 0
    high: int = 10
    value: float = 0.0
    requires_grad: bool = False

    @property
    def batch_dims(self) -> tuple[int, ...]:
        return self.dims_of(BATCH)

    def dims_of(self, symbol: str) -> tuple[int, ...]:
        return tuple(i for i, d in enumerate(self.shape) if d == symbol)

    @property
    def symbols(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(d for d in self.shape if isinstance(d, str)))


@dataclass(frozen=True)
class Value:
    """A plain Python argument, passed as is to every call."""

    value: Any


#: argument (positional index or keyword) -> spec
Specs = Sequence[tuple[int | str, "TensorSpec | Value"]]


def spec_refs(specs: Specs) -> tuple[DimRef, ...]:
    """The dims each symbol moves, from the shapes."""
    return tuple(DimRef(symbol, Path(arg), spec.dims_of(symbol)) for arg, spec in specs
                 if isinstance(spec, TensorSpec) for symbol in spec.symbols)


# --- parsing --------------------------------------------------------------------------------------

def parse_inputs(ctx: Context, value: Any) -> tuple[tuple[int | str, TensorSpec | Value], ...]:
    """``inputs:`` as a list (positional arguments) or a mapping (keyword arguments)."""
    if isinstance(value, dict):
        if not value:
            raise ctx.fail("inputs", "expected at least one argument")
        for name in value:
            if not isinstance(name, str) or not name.isidentifier():
                raise ctx.fail(f"inputs.{name}", f"keyword argument names are identifiers, got "
                               f"{name!r}")
        return tuple((name, parse_spec(ctx, f"inputs.{name}", spec))
                     for name, spec in value.items())
    ctx.expect("inputs", value, list, "a list with one entry per positional argument (or a "
               "mapping of keyword -> spec)")
    if not value:
        raise ctx.fail("inputs", "expected at least one argument")
    return tuple((i, parse_spec(ctx, f"inputs[{i}]", spec)) for i, spec in enumerate(value))


def parse_spec(ctx: Context, key: str, spec: Any) -> TensorSpec | Value:
    if not isinstance(spec, dict):
        return Value(spec)
    if set(spec) == {"value"}:  # explicit plain value, e.g. a dict argument
        return Value(spec["value"])
    ctx.keys(key, spec, tuple(TENSOR_KEYS))
    if "shape" not in spec:
        raise ctx.fail(key, "a tensor spec needs 'shape', e.g. {shape: [B, 4096]}",
                       "For a plain mapping argument write {value: {...}}.")
    shape = ctx.expect(f"{key}.shape", spec["shape"], list, "a list of dims")
    for j, dim in enumerate(shape):
        dkey = f"{key}.shape[{j}]"
        if isinstance(dim, str):
            if not is_symbol(dim):
                raise ctx.fail(dkey, f"{dim!r} is not a size symbol",
                               "Dims are integers or size symbols: capital letters and digits "
                               f"(e.g. {BATCH} for the batch size, S for a sequence length).")
        else:
            ctx.expect(dkey, dim, int, "an integer or a size symbol such as B")
            if dim < 0:
                raise ctx.fail(dkey, f"dims cannot be negative, got {dim}")
    fields: dict[str, Any] = {"shape": tuple(shape)}
    if "dtype" in spec:
        dtype = ctx.expect(f"{key}.dtype", spec["dtype"], str, "a dtype name")
        dtype = dtype.removeprefix("torch.")
        if dtype not in DTYPES:
            raise ctx.fail(f"{key}.dtype", f"unknown dtype {spec['dtype']!r}",
                           suggest(dtype, DTYPES) or f"dtypes: {', '.join(DTYPES)}.")
        fields["dtype"] = dtype
    if "device" in spec:
        fields["device"] = ctx.expect(f"{key}.device", spec["device"], str, "a device name")
    if "fill" in spec:
        fields.update(_parse_fill(ctx, f"{key}.fill", spec["fill"]))
    for k in ("low", "high"):
        if k in spec:
            fields[k] = ctx.expect(f"{key}.{k}", spec[k], int, "an integer")
    if "value" in spec:
        fields["value"] = ctx.expect(f"{key}.value", spec["value"], (int, float, bool), "a number")
    if "requires_grad" in spec:
        fields["requires_grad"] = ctx.expect(f"{key}.requires_grad", spec["requires_grad"], bool,
                                             "true or false")
    tensor = TensorSpec(**fields)
    if tensor.fill == "randint" and tensor.low >= tensor.high:
        raise ctx.fail(key, f"randint needs low < high, got low={tensor.low}, high={tensor.high}")
    return tensor


def _parse_fill(ctx: Context, key: str, value: Any) -> dict[str, Any]:
    ctx.expect(key, value, str, f"one of {', '.join(FILLS)}")
    match = re.fullmatch(r"\s*(\w+)\s*(?:\(([^)]*)\))?\s*", value)
    name = match.group(1) if match else value
    if name not in FILLS:
        raise ctx.fail(key, f"unknown fill {value!r}", suggest(name, FILLS) or
                       f"Fills: {', '.join(FILLS)}.")
    out: dict[str, Any] = {"fill": name}
    args = match.group(2) if match else None
    if args is not None:
        try:
            nums = [float(a) if "." in a else int(a) for a in args.split(",") if a.strip()]
        except ValueError:
            raise ctx.fail(key, f"cannot read the numbers in {value!r}") from None
        if name == "randint" and len(nums) == 2 and all(isinstance(n, int) for n in nums):
            out.update(low=nums[0], high=nums[1])
        elif name == "full" and len(nums) == 1:
            out["value"] = nums[0]
        else:
            raise ctx.fail(key, f"{name} takes no such arguments: {value!r}",
                           "Write randint(low, high), full(value), or a bare fill name.")
    return out


# --- making tensors (torch) -----------------------------------------------------------------------

def dtype_of(name: str) -> "torch.dtype":
    import torch

    return getattr(torch, _DTYPE_ALIASES.get(name, name))


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
        mixed += size * 7919 ** i
    return (seed * 1_000_003 + mixed) % (2**63)


def make_tensor(spec: TensorSpec, point: Point, generator: "torch.Generator") -> "torch.Tensor":
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
    if isinstance(result, tuple) and len(result) == 2 and isinstance(result[0], (tuple, list)) \
            and isinstance(result[1], dict):
        return tuple(result[0]), dict(result[1])
    if isinstance(result, dict):
        return (), dict(result)
    if isinstance(result, (tuple, list)):
        return tuple(result), {}
    return (result,), {}


def user_factory(fn: Callable[..., Any], seed: int, symbols: Sequence[str],
                 refs: Sequence[DimRef], param_names: Sequence[str | None] = (),
                 error: "ErrorAt | None" = None) -> Callable[[Point], Inputs]:
    """A scenario's ``factory:``. A batch-only scenario calls it ``make_inputs(batch_size)``;
    with other symbols, ``make_inputs(B=2, S=7)``. The declared dims are checked on the first
    two distinct points it makes."""
    checked: list[Point] = []

    def make(point: Point) -> Inputs:
        import torch

        # A factory that draws from the global RNG is made deterministic too.
        torch.manual_seed(seed_for(seed, point))
        result = fn(point.get(BATCH)) if tuple(symbols) == (BATCH,) else fn(**point.as_dict())
        inputs = normalize(result)
        if len(checked) < 2 and point not in checked:
            check_dims(inputs, refs, point, param_names, error)
            checked.append(point)
        return inputs

    return make


#: (scenario key or None, message, remedy) -> the error to raise; the loader's names the file and
#: line of the key (a ScenarioError)
ErrorAt = Callable[[Any, str, Any], Exception]


def check_dims(inputs: Inputs, refs: Sequence[DimRef], point: Point | None,
               param_names: Sequence[str | None] = (), error: ErrorAt | None = None,
               driver: bool = False) -> None:
    """Every declared dim must name something the inputs have (an error naming the dims key
    otherwise); a non-tensor or a dim whose size is not the symbol's is warned about. Without a
    ``point`` sizes are not compared (a ``driver``'s calls, whose sizes change within a point)."""
    import torch

    from .errors import TargetError

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
                raise fail(ref, f"names argument {ref.path.head}, but " + (
                    f"the driver called the target with {len(args)} positional argument(s)"
                    if driver else f"the factory returned {len(args)} argument(s)"),
                    "Argument indexes count from 0 in the positional arguments.")
            made = "the driver's call does" if driver else "the factory's inputs do"
            raise fail(ref, f"names {ref.path}, which {made} not have: "
                       f"{why_unresolved(ref.path, args, kwargs, param_names)}",
                       "Positional indexes count from 0; keywords and paths name what it "
                       "passes, e.g. input_ids, cache.keys[*], batch[\"pixel_values\"].")
        for path, value in found:
            if not isinstance(value, torch.Tensor):
                # Still a valid run (e.g. a list of B tensors): only the marks have nothing to mark.
                warnings.warn(f"recompile-probe: {label} names argument {path}, a "
                              f"{type(value).__name__}, not a tensor: mark strategies leave it "
                              "unmarked", stacklevel=2)
                continue
            for dim in ref.dims:
                if not -value.dim() <= dim < value.dim():
                    raise fail(ref, f"names dim {dim} of argument {path}, which has "
                               f"{value.dim()} dim(s) (shape {list(value.shape)})")
                size = None if point is None else point.get(ref.symbol)
                if size is not None and value.shape[dim] != size:
                    warnings.warn(f"recompile-probe: {label} names dim {dim} of argument {path}, "
                                  f"of size {value.shape[dim]} at {point}, not "
                                  f"{ref.symbol} = {size}", stacklevel=2)
