"""Compile ids as torch writes them (torch._guards.CompileId), parsed in one place."""

from __future__ import annotations

import pytest
from torch._guards import CompileId

from recompile_probe.records.compile_ids import frame_of, sort_key


def _id(frame: int | None, attempt: int | None, autograd: int | None = None) -> str:
    return str(CompileId(frame_id=frame, frame_compile_id=attempt, compiled_autograd_id=autograd))


@pytest.mark.parametrize(
    ("frame", "attempt", "autograd", "expected"),
    [
        (3, 1, None, "3"),
        (0, 0, None, "0"),
        (3, 1, 0, "!0/3"),  # compiled autograd's frames form their own space, as in tlparse
        (12, 10, 2, "!2/12"),
        (None, None, 0, None),  # the compiled-autograd graph itself: no frame
    ],
)
def test_the_frame_of_every_id_torch_writes(frame, attempt, autograd, expected):
    assert frame_of(_id(frame, attempt, autograd)) == expected


def test_no_id_is_no_frame():
    assert frame_of(None) is None and frame_of("") is None


def test_ids_sort_in_creation_order():
    ids = [_id(0, 10), _id(1, 0), _id(0, 2), _id(0, 1, autograd=0), _id(0, 0)]
    assert sorted(ids, key=sort_key) == ["0/0", "0/2", "0/10", "1/0", "!0/0/1"]
    assert sorted(["x", None, "0/0"], key=sort_key) == ["0/0", "x", None]


def test_frames_of_plain_and_autograd_ids_differ():
    """The same frame number under compiled autograd is another frame (read up to its first "/",
    "!0/3/1" would be frame "!0", shared by every compiled-autograd compile)."""
    assert frame_of(_id(3, 1)) != frame_of(_id(3, 1, autograd=0))
