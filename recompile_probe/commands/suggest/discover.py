"""The (argument, dim) pairs whose size varies over a scenario's points: from the inputs the
scenario really makes, a driver's calls included, not only from `dims:`."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from ...probe.stand_in import dressed_as
from ...records.suggestion import Location
from ...scenario.model import Scenario
from ...sizes.paths import Path as ArgPath
from ...sizes.points import Point
from ...strategies.advice import path_name

#: Nested containers followed when looking for tensors in the inputs.
MAX_DEPTH = 4


def _walk(value: Any, path: ArgPath, depth: int, seen: set[int]) -> Iterator[tuple[ArgPath, Any]]:
    import torch

    if isinstance(value, torch.Tensor):
        yield path, value
        return
    if depth >= MAX_DEPTH or id(value) in seen:
        return
    seen.add(id(value))
    if isinstance(value, (list, tuple)):
        for i, item in enumerate(value):
            yield from _walk(item, ArgPath(path.head, (*path.steps, ("index", i))), depth + 1, seen)
    elif isinstance(value, dict):
        for key, item in value.items():
            if isinstance(key, str):
                yield from _walk(
                    item, ArgPath(path.head, (*path.steps, ("key", key))), depth + 1, seen
                )
    elif (
        hasattr(value, "__dict__")
        and not isinstance(value, (torch.nn.Module, type))
        and not callable(value)
    ):
        # A cache object (DynamicCache, a dataclass of tensors): its public attributes.
        for attr, item in vars(value).items():
            if not attr.startswith("_"):
                yield from _walk(
                    item, ArgPath(path.head, (*path.steps, ("attr", attr))), depth + 1, seen
                )


def tensors_in(args: Sequence[Any], kwargs: dict[str, Any]) -> Iterator[tuple[ArgPath, Any]]:
    """Every tensor of a call's inputs, with its path (index, keyword, then steps)."""
    seen: set[int] = set()
    for i, value in enumerate(args):
        yield from _walk(value, ArgPath(i), 0, seen)
    for key, value in kwargs.items():
        yield from _walk(value, ArgPath(key), 0, seen)


def _observations(
    target: Any, sequences: dict[str, tuple[Point, ...]]
) -> list[tuple[Point, dict[ArgPath, tuple[int, ...]]]]:
    """(point, path -> shape) for every call the scenario makes, eagerly."""
    from ...torch_compat.stance import eager_stance

    out: list[tuple[Point, dict[ArgPath, tuple[int, ...]]]] = []
    done: set[Point] = set()
    for points in sequences.values():
        for point in points:
            if point in done:
                continue
            done.add(point)
            if target.driver is None:
                args, kwargs = target.make_inputs(point)
                out.append((point, {p: tuple(t.shape) for p, t in tensors_in(args, kwargs)}))
                continue

            def fn(*args: Any, _point: Point = point, **kwargs: Any) -> Any:
                out.append((_point, {p: tuple(t.shape) for p, t in tensors_in(args, kwargs)}))
                return target.fn(*args, **kwargs)

            # the program must see the target's signature here too, or it passes other arguments
            dressed_as(fn, target.fn)
            with eager_stance():
                target.drive(fn, point)
    return out


def _symbol_of(values: list[int], points: list[Point], symbols: Sequence[str]) -> str | None:
    """The symbol whose value determines this size (and is told apart by it), if exactly one."""
    fits = []
    for symbol in symbols:
        forward: dict[Any, int] = {}
        backward: dict[int, Any] = {}
        ok = True
        for size, point in zip(values, points):
            v = point.get(symbol)
            if forward.setdefault(v, size) != size or backward.setdefault(size, v) != v:
                ok = False
                break
        if ok and len(forward) > 1:
            fits.append(symbol)
    return fits[0] if len(fits) == 1 else None


def discover(
    scenario: Scenario, target: Any, sequences: dict[str, tuple[Point, ...]]
) -> tuple[tuple[Location, ...], tuple[str, ...]]:
    """The varying (argument, dim) pairs, and notes on what was left out and why."""
    observed = _observations(target, sequences)
    notes: list[str] = []
    paths: dict[ArgPath, None] = {}
    for _, shapes in observed:
        paths.update(dict.fromkeys(shapes))
    declared = {
        (target.source_of(ref.path), d): ref.symbol for ref in target.dims for d in ref.dims
    }
    locations: list[Location] = []
    for path in paths:
        seen = [(point, shapes[path]) for point, shapes in observed if path in shapes]
        ranks = {len(shape) for _, shape in seen}
        name = path_name(path, target.param_names)
        if len(seen) < len(observed) and len(ranks) == 1 and len({shape for _, shape in seen}) > 1:
            notes.append(f"{name} is not in every call: its dims are searched where it is")
        if len(ranks) > 1:
            notes.append(f"{name} changes rank between calls: no mark can keep one graph")
            continue
        for dim in range(ranks.pop()):
            values = [shape[dim] for _, shape in seen]
            distinct = tuple(dict.fromkeys(values))
            if len(distinct) < 2:
                continue
            argument: int | str = (
                path.head if isinstance(path.head, int) and not path.steps else str(path)
            )
            source = target.source_of(path)
            # `dims:` says which symbol moves it; else the one symbol its sizes follow
            symbol = declared.get((source, dim)) or _symbol_of(
                values, [p for p, _ in seen], scenario.symbols
            )
            locations.append(Location(argument, dim, symbol, name, source, distinct))
    return tuple(locations), tuple(notes)
