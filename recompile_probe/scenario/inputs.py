"""What the target is called with: ``inputs:`` (tensor specs and plain values), or a factory or
driver and the dims it declares (``dims:``, ``batch_dims:``), parsed. No torch.

targets/inputs.py makes the tensors from these specs at each point.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path as FilePath
from typing import Any

from ..errors import did_you_mean
from ..sizes.paths import DimRef, Path, parse_arg_dims, parse_dims
from ..sizes.points import BATCH, is_symbol
from .context import Context
from .keys import DTYPES, FILLS, TENSOR_KEYS, TOP_KEYS

_USER_INPUTS = ("inputs", "factory", "driver")


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
    return tuple(
        DimRef(symbol, Path(arg), spec.dims_of(symbol))
        for arg, spec in specs
        if isinstance(spec, TensorSpec)
        for symbol in spec.symbols
    )


# --- parsing --------------------------------------------------------------------------------------


def parse_arguments(ctx: Context, data: Mapping, builtin: bool) -> dict[str, Any]:
    """inputs / factory / driver, and the symbols and dims they define, as Scenario fields."""
    if builtin:
        for key in (*_USER_INPUTS, "dims", "batch_dims"):
            if key in data:
                raise ctx.fail(
                    key,
                    f"built-in targets make their own inputs; {key!r} is for user callables",
                    "Use `params:` to size a built-in target.",
                )
        return {"symbols": (BATCH,)}
    given = [k for k in _USER_INPUTS if k in data]
    if len(given) != 1:
        raise ctx.fail(
            given[1] if len(given) > 1 else "target",
            "a user callable needs exactly one of 'inputs' or 'factory' (or a 'driver')",
            "inputs: one tensor spec or value per argument; factory: "
            "file.py:make_inputs returning the arguments for one point; driver: "
            "file.py:run calling the compiled target itself.",
        )
    if "batch_dims" in data and "dims" in data:
        raise ctx.fail("batch_dims", "give either 'dims' or 'batch_dims' (= dims: {B: ...})")
    return _from_inputs(ctx, data) if "inputs" in data else _from_callable(ctx, data, given[0])


def _from_inputs(ctx: Context, data: Mapping) -> dict[str, Any]:
    """``inputs:``: the symbols and dims come from the shapes."""
    for key in ("dims", "batch_dims"):
        if key in data:
            raise ctx.fail(
                key, "with `inputs`, dims come from the symbols in each shape (B, S, ...)"
            )
    specs = parse_inputs(ctx, data["inputs"])
    refs = spec_refs(specs)
    symbols = tuple(dict.fromkeys(r.symbol for r in refs))
    if not symbols:
        raise ctx.fail(
            "inputs",
            f"no tensor has a {BATCH!r} dim (or another size "
            "symbol) in its shape, so the sequences change nothing",
            f"Write a symbol in a shape, e.g. [{BATCH}, 4096] or [{BATCH}, S].",
        )
    return {
        "inputs": tuple(spec for _, spec in specs),
        "input_keys": tuple(key for key, _ in specs),
        "symbols": symbols,
        "dims": refs,
    }


def _from_callable(ctx: Context, data: Mapping, key: str) -> dict[str, Any]:
    """A factory or driver (``key``): the symbols and dims are declared beside it."""
    where = ctx.typed(key, data[key], TOP_KEYS[key])
    module, _, attr = where.rpartition(":")
    if not module or not attr.isidentifier():
        raise ctx.fail(key, f"{where!r} is not of the form file.py:fn or module:fn")
    if (
        module.endswith(".py")
        and not (ctx.base / module).is_file()
        and not FilePath(module).is_file()
    ):
        raise ctx.fail(
            key,
            f"{key} file {module!r} does not exist",
            "Paths in a scenario are relative to the scenario file.",
        )
    if "batch_dims" in data:
        dims = ctx.sizes(lambda: parse_arg_dims("batch_dims", data["batch_dims"], BATCH))
        return {key: where, "symbols": (BATCH,), "dims": dims}
    if "dims" not in data:
        raise ctx.fail(
            key,
            f"a {key} needs 'batch_dims' (argument index -> dims that follow "
            "the batch size) or 'dims' (symbol -> argument -> dims)",
            "e.g. dims: {B: {0: [0], 1: [0]}, S: {0: [1]}} or batch_dims: {0: [0], 1: [0]}",
        )
    refs = ctx.sizes(lambda: parse_dims("dims", data["dims"], ()))
    symbols = tuple(dict.fromkeys(str(s) for s in data["dims"]))
    if not symbols:
        raise ctx.fail("dims", "expected at least one size symbol")
    return {key: where, "symbols": symbols, "dims": refs}


def parse_inputs(ctx: Context, value: Any) -> tuple[tuple[int | str, TensorSpec | Value], ...]:
    """``inputs:`` as a list (positional arguments) or a mapping (keyword arguments)."""
    if isinstance(value, dict):
        if not value:
            raise ctx.fail("inputs", "expected at least one argument")
        for name in value:
            if not isinstance(name, str) or not name.isidentifier():
                raise ctx.fail(
                    f"inputs.{name}", f"keyword argument names are identifiers, got {name!r}"
                )
        return tuple(
            (name, parse_spec(ctx, f"inputs.{name}", spec)) for name, spec in value.items()
        )
    ctx.expect(
        "inputs",
        value,
        list,
        "a list with one entry per positional argument (or a mapping of keyword -> spec)",
    )
    if not value:
        raise ctx.fail("inputs", "expected at least one argument")
    return tuple((i, parse_spec(ctx, f"inputs[{i}]", spec)) for i, spec in enumerate(value))


def parse_spec(ctx: Context, key: str, spec: Any) -> TensorSpec | Value:
    if not isinstance(spec, dict):
        return Value(spec)
    if set(spec) == {"value"}:  # explicit plain value, e.g. a dict argument
        return Value(spec["value"])
    ctx.keys(key, spec, TENSOR_KEYS)
    if "shape" not in spec:
        raise ctx.fail(
            key,
            "a tensor spec needs 'shape', e.g. {shape: [B, 4096]}",
            "For a plain mapping argument write {value: {...}}.",
        )
    shape = ctx.typed(f"{key}.shape", spec["shape"], TENSOR_KEYS["shape"])
    for j, dim in enumerate(shape):
        dkey = f"{key}.shape[{j}]"
        if isinstance(dim, str):
            if not is_symbol(dim):
                raise ctx.fail(
                    dkey,
                    f"{dim!r} is not a size symbol",
                    "Dims are integers or size symbols: capital letters and digits "
                    f"(e.g. {BATCH} for the batch size, S for a sequence length).",
                )
        else:
            ctx.expect(dkey, dim, int, "an integer or a size symbol such as B")
            if dim < 0:
                raise ctx.fail(dkey, f"dims cannot be negative, got {dim}")
    fields: dict[str, Any] = {"shape": tuple(shape)}
    if "dtype" in spec:
        dtype = ctx.typed(f"{key}.dtype", spec["dtype"], TENSOR_KEYS["dtype"])
        dtype = dtype.removeprefix("torch.")
        if dtype not in DTYPES:
            raise ctx.fail(
                f"{key}.dtype",
                f"unknown dtype {spec['dtype']!r}",
                did_you_mean(dtype, DTYPES) or f"dtypes: {', '.join(DTYPES)}.",
            )
        fields["dtype"] = dtype
    if "device" in spec:
        fields["device"] = ctx.typed(f"{key}.device", spec["device"], TENSOR_KEYS["device"])
    if "fill" in spec:
        fields.update(_parse_fill(ctx, f"{key}.fill", spec["fill"]))
    for k in ("low", "high"):
        if k in spec:
            fields[k] = ctx.typed(f"{key}.{k}", spec[k], TENSOR_KEYS[k])
    if "value" in spec:
        fields["value"] = ctx.typed(f"{key}.value", spec["value"], TENSOR_KEYS["value"])
    if "requires_grad" in spec:
        fields["requires_grad"] = ctx.typed(
            f"{key}.requires_grad", spec["requires_grad"], TENSOR_KEYS["requires_grad"]
        )
    tensor = TensorSpec(**fields)
    if tensor.fill == "randint" and tensor.low >= tensor.high:
        raise ctx.fail(key, f"randint needs low < high, got low={tensor.low}, high={tensor.high}")
    return tensor


def _parse_fill(ctx: Context, key: str, value: Any) -> dict[str, Any]:
    ctx.typed(key, value, TENSOR_KEYS["fill"])
    match = re.fullmatch(r"\s*(\w+)\s*(?:\(([^)]*)\))?\s*", value)
    name = match.group(1) if match else value
    if name not in FILLS:
        raise ctx.fail(
            key,
            f"unknown fill {value!r}",
            did_you_mean(name, FILLS) or f"Fills: {', '.join(FILLS)}.",
        )
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
            raise ctx.fail(
                key,
                f"{name} takes no such arguments: {value!r}",
                "Write randint(low, high), full(value), or a bare fill name.",
            )
    return out
