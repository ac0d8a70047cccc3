"""Compile ids as torch writes them (torch._guards.CompileId), parsed in one place."""

from __future__ import annotations

import pytest
from torch._guards import CompileId

from recompile_probe.records.compile_ids import CompileId as Parsed
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


@pytest.mark.parametrize(
    ("frame", "attempt", "autograd"), [(3, 1, None), (0, 0, None), (12, 10, 2), (None, None, 0)]
)
def test_an_id_read_back_is_the_id_torch_wrote(frame, attempt, autograd):
    text = _id(frame, attempt, autograd)
    parsed = Parsed.parse(text)
    assert parsed is not None and str(parsed) == text
    assert (parsed.frame_id, parsed.frame_compile_id, parsed.compiled_autograd_id) == (
        frame,
        attempt,
        autograd,
    )


@pytest.mark.parametrize("text", ["", "3", "/3/1", "!03/1x", "3/1/2", "!", "a/b", "!0/3"])
def test_what_torch_never_writes_is_no_id(text):
    assert Parsed.parse(text) is None


def test_an_envelope_keeps_all_four_fields():
    envelope = {"compiled_autograd_id": 1, "frame_id": 3, "frame_compile_id": 0, "attempt": 2}
    parsed = Parsed.from_envelope(envelope)
    assert parsed is not None
    assert (str(parsed), parsed.label, parsed.attempt) == ("!1/3/0", "!1/3/0_2", 2)
    assert Parsed.from_envelope({"frame_id": 0, "frame_compile_id": 1}).label == "0/1"
    assert Parsed.from_envelope({"rank": 0}) is None
