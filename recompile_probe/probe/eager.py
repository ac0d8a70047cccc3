"""The eager reference: each point's outputs without torch.compile, computed once per sequence
and shared by every strategy, and the comparison of a compiled output with it."""

from __future__ import annotations

import statistics
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch

from ..errors import EagerFailure, ProbeError
from ..sizes.points import BATCH, Point
from ..targets.inputs import Inputs
from ..targets.loader import LoadedTarget
from ..torch_compat.stance import eager_stance
from .failures import first_line
from .timing import samples_us, synced, wait_for_device


@dataclass
class EagerReference:
    """Eager outputs per point, computed once per sequence and shared by every strategy.

    With a driver, ``calls`` holds the output of each call of the target within the point, in
    order, and ``outputs`` the driver's return value."""

    outputs: dict[Point, Any] = field(default_factory=dict)
    calls: dict[Point, list[Any]] = field(default_factory=dict)
    steady_us: float | None = None


def eager_reference(
    target: LoadedTarget, points: tuple[Point, ...], repeats: int
) -> EagerReference:
    ref = EagerReference()
    last: Inputs | None = None
    #: the grad / inference mode of the last call: a driver may call under no_grad
    modes: list[tuple[bool, bool]] = []
    mode = (torch.is_grad_enabled(), torch.is_inference_mode_enabled())
    with eager_stance():
        for index, point in enumerate(points):
            if point in ref.outputs:
                continue
            driver = target.driver
            # the closures below are called before the loop moves on (B023 does not apply)
            if driver is not None:
                seen: list[Inputs] = []

                def fn(*args: Any, **kwargs: Any) -> Any:
                    if target.driver_dims is not None:  # dims name what the driver passes
                        target.driver_dims(args, kwargs)
                    seen.append((args, kwargs))  # noqa: B023
                    modes.append((torch.is_grad_enabled(), torch.is_inference_mode_enabled()))
                    out = target.fn(*args, **kwargs)
                    ref.calls.setdefault(point, []).append(out)  # noqa: B023
                    return out

                ref.outputs[point] = _eager(
                    lambda: driver(fn, **point.as_dict()),  # noqa: B023
                    index,
                    point,
                    "the driver",
                )
                last = seen[-1] if seen else last
                mode = modes[-1] if modes else mode
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
            ref.outputs[point] = _eager(
                lambda: target.fn(*args, **kwargs),  # noqa: B023
                index,
                point,
                "the target",
            )
            last = (args, kwargs)
        if target.driver_dims is not None:
            target.driver_dims.finish()
        if repeats and target.make_inputs is not None:
            last = target.make_inputs(points[-1])
        if repeats and last is not None:
            args, kwargs = last
            with torch.set_grad_enabled(mode[0]), torch.inference_mode(mode[1]):
                ref.steady_us = statistics.median(
                    samples_us(
                        synced(lambda: target.fn(*args, **kwargs), wait_for_device(args, kwargs)),
                        repeats,
                    )
                )
    return ref


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


# --- comparison -----------------------------------------------------------------------------------


def outputs_match(
    actual: Any, expected: Any, rtol: float | None, atol: float | None
) -> bool | None:
    """assert_close semantics (integers and bools exact); None when the outputs cannot be
    compared."""
    try:
        torch.testing.assert_close(actual, expected, rtol=rtol, atol=atol, equal_nan=True)
        return True
    except AssertionError:
        return False
    except Exception:  # noqa: BLE001 - types assert_close does not know: fall back to ==
        try:
            return bool(actual == expected)
        except Exception:  # noqa: BLE001
            return None
