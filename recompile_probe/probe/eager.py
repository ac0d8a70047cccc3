"""The eager reference: each point's outputs without torch.compile, computed once per sequence
and shared by every strategy, and the comparison of a compiled output with it."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..errors import EagerFailure, ProbeError, TargetError
from ..sizes.points import BATCH, Point
from ..targets.inputs import Inputs
from ..targets.loader import LoadedTarget
from ..torch_compat.stance import eager_stance
from .compare import snapshot
from .failures import first_line
from .stand_in import dressed_as
from .timing import synced, wait_for_device


@dataclass
class EagerReference:
    """Eager outputs per point, computed once per sequence and shared by every strategy.

    With a driver, ``calls`` holds the output of each call of the target within the point, in
    order, and ``outputs`` the driver's return value."""

    outputs: dict[Point, Any] = field(default_factory=dict)
    calls: dict[Point, list[Any]] = field(default_factory=dict)
    steady_us: float | None = None
    steady_min_us: float | None = None  #: the fastest sample of that re-run
    #: the driver's return value per point index, where it depends on more than the point: a
    #: rank's result after a collective holds what its peers computed at that call
    results: dict[int, Any] = field(default_factory=dict)
    #: what every run inherits from how the reference went (the target changing its own state)
    notes: tuple[str, ...] = ()

    def result(self, index: int, point: Point) -> Any:
        """What the driver returned at call ``index`` (of ``point``) in eager."""
        return self.results[index] if index in self.results else self.outputs[point]


def eager_reference(
    target: LoadedTarget,
    points: tuple[Point, ...],
    repeats: int,
    options: Mapping[str, Any] | None = None,
    every_call: bool = False,
) -> EagerReference:
    """``options``: a strategy's driver_options; the program they change has its own eager
    outputs. ``every_call``: drive a point seen before again (its outputs kept from the first
    time), as a rank of a distributed scenario must: its driver's collectives pair with the
    other ranks' calls one for one."""
    ref = EagerReference()
    last: Inputs | None = None
    with eager_stance():
        for index, point in enumerate(points):
            if point in ref.outputs:
                if every_call and target.driver is not None:
                    dressed = dressed_as(lambda *a, **k: target.fn(*a, **k), target.fn)
                    ref.results[index] = snapshot(
                        _eager(
                            lambda: target.drive(dressed, point, options),  # noqa: B023
                            index,
                            point,
                            "the driver",
                        )
                    )
                continue
            driver = target.driver
            # the closures below are called before the loop moves on (B023 does not apply)
            if driver is not None:
                seen: list[Inputs] = []

                def fn(*args: Any, **kwargs: Any) -> Any:
                    if target.driver_dims is not None:  # dims name what the driver passes
                        target.driver_dims(args, kwargs)
                    seen.append((args, kwargs))  # noqa: B023
                    out = target.fn(*args, **kwargs)
                    # as it is now: the program may mutate it (a cache grows) after the call
                    ref.calls.setdefault(point, []).append(snapshot(out))  # noqa: B023
                    return out

                dressed_as(fn, target.fn)
                ref.outputs[point] = snapshot(
                    _eager(
                        lambda: target.drive(fn, point, options),  # noqa: B023
                        index,
                        point,
                        "the driver",
                    )
                )
                if every_call:
                    ref.results[index] = ref.outputs[point]
                last = seen[-1] if seen else last
                continue
            assert target.make_inputs is not None
            try:
                args, kwargs = target.make_inputs(point)
            except ProbeError:
                raise
            except Exception as exc:
                raise EagerFailure(
                    f"making the inputs for {_at(point)} (call {index}) failed: "
                    f"{type(exc).__name__}: {first_line(exc)}",
                    "Check the factory or the tensor specs; pass --debug for the traceback.",
                ) from exc
            ref.outputs[point] = snapshot(
                _eager(
                    lambda: target.fn(*args, **kwargs),  # noqa: B023
                    index,
                    point,
                    "the target",
                )
            )
            last = (args, kwargs)
        if target.driver is not None and not ref.calls:
            raise TargetError(
                f"the driver {target.driver_name or 'of this scenario'} never called the target "
                f"{target.name} at any point: nothing would be compiled, so no strategy could "
                "be judged",
                "The driver receives the compiled target as its first argument and must call "
                "it where the program calls the target (e.g. `model.forward = fn`, then "
                "`model.generate(...)`).",
            )
        if target.driver_dims is not None:
            target.driver_dims.finish()
        if repeats and (last is not None or target.make_inputs is not None):
            samples = _steady_samples(target, points[-1], repeats, options)
            if samples:
                ref.steady_us, ref.steady_min_us = statistics.median(samples), min(samples)
    return ref


def _steady_samples(
    target: LoadedTarget, point: Point, repeats: int, options: Mapping[str, Any] | None
) -> list[float]:
    """The last point re-run as the compiled runs time it (``Driver.steady_state``): through
    the driver, in its own grad and autocast state, or with fresh inputs from the factory."""
    samples: list[float] = []
    sync: list[Callable[[], None] | None] = []

    def timed(*args: Any, **kwargs: Any) -> Any:
        if not sync:
            sync.append(wait_for_device(args, kwargs))
        call = synced(lambda: target.fn(*args, **kwargs), sync[0])
        start = time.perf_counter_ns()
        out = call()
        samples.append((time.perf_counter_ns() - start) / 1000.0)
        return out

    try:
        if target.driver is not None:
            dressed_as(timed, target.fn)
            for _ in range(repeats):
                target.drive(timed, point, options)
        else:
            assert target.make_inputs is not None
            for _ in range(repeats):
                args, kwargs = target.make_inputs(point)
                timed(*args, **kwargs)
    except Exception:  # noqa: BLE001 - it ran in the sequence: a timing failure is only n/a
        return []
    return samples


def _at(point: Point) -> str:
    return f"batch size {point.get(BATCH)}" if point.symbols == (BATCH,) else f"point {point}"


def _eager(call: Callable[[], Any], index: int, point: Point, what: str) -> Any:
    try:
        return call()
    except ProbeError:
        raise
    except Exception as exc:
        raise EagerFailure(
            f"{what} fails without torch.compile at call {index} ({_at(point)}): "
            f"{type(exc).__name__}: {first_line(exc)}",
            "Fix the target or its inputs first: no strategy can be judged against a "
            "failing eager run. Pass --debug for the traceback.",
        ) from exc
