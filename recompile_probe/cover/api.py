"""Coverage from a test: the cache a test already warmed, asked about a range of sizes.

    compiled = torch.compile(step)
    for b in (4, 8):
        compiled(*make_inputs(B=b))
    found = recompile_probe.coverage(compiled, make_inputs, B=(1, 4096))
    recompile_probe.assert_no_recompile(found)  # names the smallest size that is not served

``make_inputs(B=..., S=...)`` returns the call's arguments (a tuple, a dict of keywords, or an
``(args, kwargs)`` pair) with the marks the program applies; the dims each symbol moves are found
by calling it at two sizes (or given: ``dims={"B": {0: [0], "mask": [0]}}``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import torch

from ..analysis.budgets import uncovered
from ..records.coverage import Coverage
from ..sizes.paths import DimRef, Path
from ..targets.inputs import Inputs, normalize
from ..targets.loader import LoadedTarget, frame_args, parameters
from .decide import Request, decide


def coverage(
    compiled: Callable,
    make_inputs: Callable[..., Any],
    *,
    dims: Mapping[str, Mapping[int | str, Sequence[int]]] | None = None,
    real_calls: bool = True,
    **ranges: tuple[int, int],
) -> Coverage:
    """Whether every size in ``ranges`` (``B=(1, 4096)``) is served by the cache entries the
    torch.compile'd ``compiled`` holds now, decided as `run --cover` decides it. ``real_calls``:
    where other frames were compiled (graph breaks), sample them by calling ``compiled`` under
    the fail-on-recompile stance (it compiles nothing); False leaves them out (scope "top frame
    only")."""
    if not ranges:
        raise TypeError("coverage() needs a range, e.g. B=(1, 4096)")
    bounds = {name: _range(name, value) for name, value in ranges.items()}
    fn = _original(compiled)
    names = list(bounds)

    def make(sizes: Mapping[str, int]) -> Inputs:
        return normalize(make_inputs(**sizes))

    first = {n: _inside(bounds[n], 7) for n in names}
    refs = _given(dims) if dims is not None else _dims(make, first, bounds)
    params, var_kw = parameters(fn)
    target = LoadedTarget(
        name=getattr(fn, "__qualname__", type(fn).__name__),
        fn=fn,
        compiled=compiled,
        make_inputs=lambda point: make(point.to_dict()),
        dims=refs,
        param_names=list(params),
        var_keyword=var_kw,
        frame=frame_args(fn),
    )
    template = make(first)
    return decide(
        Request(
            target=target,
            ranges=bounds,
            template=template,
            base=first,
            call=(lambda args, kwargs: compiled(*args, **kwargs)) if real_calls else None,
            real_inputs=(lambda sizes: make(sizes)) if real_calls else None,
            seen=[first],
            own_frames_only=True,
        )
    )


def assert_no_recompile(found: Coverage, **ranges: tuple[int, int]) -> None:
    """Fail unless every size (of ``ranges``, else of the whole record) is served; the message
    names the smallest that is not, its failing guard and the user line behind it."""
    bounds = {n: _range(n, v) for n, v in ranges.items()} or dict(found.ranges)
    broken = uncovered(found, bounds)
    if broken is not None:
        actual, why = broken
        raise AssertionError("; ".join([actual or "coverage n/a", *why]))


def _range(name: str, value: Any) -> tuple[int, int]:
    if (
        not isinstance(value, (tuple, list))
        or len(value) != 2
        or not all(isinstance(v, int) and not isinstance(v, bool) for v in value)
        or not 0 <= value[0] <= value[1]
    ):
        raise TypeError(f"{name}: expected (lo, hi), two sizes with 0 <= lo <= hi, not {value!r}")
    return int(value[0]), int(value[1])


def _inside(bounds: tuple[int, int], size: int) -> int:
    return min(max(size, bounds[0]), bounds[1])


def _original(compiled: Callable) -> Any:
    """The function or module torch.compile wrapped (its code object holds the entries)."""
    orig = getattr(compiled, "_orig_mod", None)  # torch.compile(module)
    if orig is not None:
        return orig
    return getattr(compiled, "_torchdynamo_orig_callable", compiled)


def _given(dims: Mapping[str, Mapping[int | str, Sequence[int]]]) -> tuple[DimRef, ...]:
    return tuple(
        DimRef(symbol, Path(head), tuple(int(d) for d in found))
        for symbol, per_arg in dims.items()
        for head, found in per_arg.items()
    )


def _dims(
    make: Callable[[Mapping[str, int]], Inputs],
    first: Mapping[str, int],
    bounds: Mapping[str, tuple[int, int]],
) -> tuple[DimRef, ...]:
    """The dims each symbol moves, read off two calls of the factory: a dim that is the
    symbol's size at both, and moves with it."""
    refs: list[DimRef] = []
    for name in first:
        second = dict(first)
        second[name] = _inside(bounds[name], 11)
        if second[name] == first[name]:
            raise TypeError(
                f"{name}'s range is too narrow to tell which dims it moves: pass dims="
                f'{{"{name}": {{0: [0]}}}}'
            )
        a, b = make(first), make(second)
        for head, x, y in _arguments(a, b):
            if isinstance(x, torch.Tensor) and isinstance(y, torch.Tensor) and x.dim() == y.dim():
                moved = tuple(
                    d
                    for d in range(x.dim())
                    if x.shape[d] == first[name] and y.shape[d] == second[name]
                )
                if moved:
                    refs.append(DimRef(name, Path(head), moved))
    if not refs:
        raise TypeError("no tensor dim follows the range's symbols: pass dims=")
    return tuple(refs)


def _arguments(a: Inputs, b: Inputs) -> list[tuple[int | str, Any, Any]]:
    out: list[tuple[int | str, Any, Any]] = [(i, x, y) for i, (x, y) in enumerate(zip(a[0], b[0]))]
    out += [(k, a[1][k], b[1][k]) for k in a[1] if k in b[1]]
    return out
