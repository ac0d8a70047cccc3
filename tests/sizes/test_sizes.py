"""Size symbols, points, grids and argument paths (pure: no torch)."""

from __future__ import annotations

import pytest

from recompile_probe.sizes.paths import dynamo_source, parse_path, resolve
from recompile_probe.sizes.points import (
    Point,
    SizeError,
    format_change,
    format_point,
    format_sequence,
    parse_sequence,
)


def test_grid_expands_with_the_last_symbol_fastest():
    points = parse_sequence("s", {"grid": {"B": [1, 2], "S": [16, 128, 7]}}, ["B", "S"])
    assert [p.to_dict() for p in points] == [{"B": b, "S": s} for b in (1, 2) for s in (16, 128, 7)]


def test_a_grid_follows_the_scenario_symbol_order_and_holds_a_symbol_fixed():
    (p,) = parse_sequence("s", {"grid": {"S": [1], "B": 4}}, ["B", "S"])
    assert p.items == (("B", 4), ("S", 1))


def test_plain_numbers_are_batch_sizes():
    points = parse_sequence("s", [1, 2, 8], ["B"])
    assert points == (Point.batch(1), Point.batch(2), Point.batch(8))
    assert format_sequence(points) == "B = 1 → 2 → 8"
    assert format_change(points[0], points[1]) == "1 → 2"


def test_changes_name_only_what_changed():
    a, b, c = (
        Point.of(d, ["B", "S"]) for d in ({"B": 2, "S": 7}, {"B": 2, "S": 33}, {"B": 4, "S": 1})
    )
    assert format_change(a, b) == "S 7 → 33"
    assert format_change(b, c) == "B 2 → 4, S 33 → 1"
    assert format_point(a) == "B 2, S 7"


def test_a_long_sequence_is_abbreviated_within_the_width():
    points = parse_sequence("s", {"grid": {"B": list(range(1, 11)), "S": [7, 33]}}, ["B", "S"])
    text = format_sequence(points, width=80)
    assert len(text) <= 80 and "more" in text and text.endswith("(B 10, S 33)")


@pytest.mark.parametrize(
    "value, key, words",
    [
        ([{"B": 1}], "s[0]", "missing size for symbol S"),
        ([{"B": 1, "S": 2, "T": 3}], "s[0].T", "unknown size symbol 'T'"),
        ([{"B": -1, "S": 2}], "s[0].B", "cannot be negative"),
        ([{"B": 1.5, "S": 2}], "s[0].B", "expected a size"),
        ([1, 2], "s[0]", "a plain number is a batch size"),
        ({"grid": {"B": [1]}}, "s.grid", "missing size for symbol S"),
        ({"grid": {"B": [], "S": [1]}}, "s.grid.B", "non-empty list"),
        ({"grid": {"B": [1], "S": [1]}, "order": 1}, "s.order", "unknown key"),
        ({"grid": []}, "s.grid", "expected a mapping"),
        ([], "s", "non-empty"),
        ("1,2", "s", "expected a list"),
    ],
)
def test_malformed_sequences_name_the_key(value, key, words):
    with pytest.raises(SizeError) as raised:
        parse_sequence("s", value, ["B", "S"])
    assert raised.value.key == key and words in raised.value.message


class Cache:
    def __init__(self):
        self.key_cache = ["k0", "k1"]


@pytest.mark.parametrize(
    "text, found",
    [
        (0, [("0", "a")]),
        ("input_ids", [("input_ids", "ids")]),
        ("x", [("x", "a")]),  # a keyword head finds the positional argument of that name
        (
            "past_key_values.key_cache[*]",
            [("past_key_values.key_cache[0]", "k0"), ("past_key_values.key_cache[1]", "k1")],
        ),
        ('batch["pixel_values"]', [("batch['pixel_values']", "pix")]),
        ("pairs[1][0]", [("pairs[1][0]", "c")]),
        ("missing", []),
    ],
)
def test_paths_resolve_into_nested_inputs(text, found):
    args = ("a",)
    kwargs = {
        "input_ids": "ids",
        "past_key_values": Cache(),
        "batch": {"pixel_values": "pix"},
        "pairs": [("a", "b"), ("c", "d")],
    }
    path = parse_path("dims.B", text)
    got = [(str(p), v) for p, v in resolve(path, args, kwargs, arg_names=["x"])]
    assert got == found


@pytest.mark.parametrize("text", ["", "0x", "a..b", "a[", "a[b]", -1, True, 1.5])
def test_malformed_paths(text):
    with pytest.raises(SizeError):
        parse_path("dims.B.k", text)


def test_dynamo_sources():
    path = parse_path("k", "past_key_values.key_cache[0]")
    assert (
        dynamo_source(path, ["self", "past_key_values"], None)
        == "L['past_key_values'].key_cache[0]"
    )
    assert (
        dynamo_source(parse_path("k", "input_ids"), ["self"], "kwargs")
        == "L['kwargs']['input_ids']"
    )
    assert dynamo_source(parse_path("k", 1), ["x", "values"], None) == "L['values']"
    assert dynamo_source(parse_path("k", "a[*]"), ["a"], None) is None
