"""Size symbols, points, grids and argument paths: the vocabulary of "which sizes move". No torch.

A **symbol** is a name of capital letters and digits written in a tensor spec's shape (``B``,
``S``, ``H2``); ``B`` is the batch size. A **point** gives every symbol of a scenario a size; a
sequence is a list of points. An **argument path** names where a dim lives in the inputs: a
positional index (``0``), a keyword (``input_ids``) or a path into nested inputs
(``past_key_values.key_cache[*]``, ``batch["pixel_values"]``, ``[*]`` = every element).

The scenario validator parses with these functions, the probe resolves paths with them, and every
report formats points with them, so one spelling holds everywhere.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Mapping, Sequence

BATCH = "B"
SYMBOL = re.compile(r"^[A-Z][A-Z0-9]*$")


def is_symbol(token: Any) -> bool:
    return isinstance(token, str) and SYMBOL.match(token) is not None


@dataclass(frozen=True)
class Point:
    """Sizes of every symbol at one call, in the scenario's symbol order."""

    items: tuple[tuple[str, int], ...]

    @classmethod
    def of(cls, sizes: Mapping[str, int], order: Sequence[str] | None = None) -> "Point":
        names = list(order) if order is not None else list(sizes)
        return cls(tuple((name, int(sizes[name])) for name in names if name in sizes))

    @classmethod
    def batch(cls, size: int) -> "Point":
        return cls(((BATCH, int(size)),))

    def as_dict(self) -> dict[str, int]:
        return dict(self.items)

    def get(self, symbol: str) -> int | None:
        return next((size for name, size in self.items if name == symbol), None)

    @property
    def symbols(self) -> tuple[str, ...]:
        return tuple(name for name, _ in self.items)

    def __str__(self) -> str:
        return format_point(self)


def format_point(point: Point) -> str:
    """"B 2, S 7"; a batch-only point is just its size, as reports always showed it."""
    if point.symbols == (BATCH,):
        return str(point.get(BATCH))
    return ", ".join(f"{name} {size}" for name, size in point.items)


def format_change(before: Point | None, after: Point) -> str:
    """What changed between two calls, and only that: "1 → 2", "S 7 → 33", "B 1 → 2, S 7 → 33"."""
    if before is None:
        return format_point(after)
    if after.symbols == (BATCH,) and before.symbols == (BATCH,):
        return f"{before.get(BATCH)} → {after.get(BATCH)}"
    changed = [(name, before.get(name), size) for name, size in after.items
               if before.get(name) != size]
    if not changed:
        return format_point(after)
    return ", ".join(f"{name} {old} → {new}" for name, old, new in changed)


def format_sequence(points: Sequence[Point], width: int = 72) -> str:
    """A sequence in one line within ``width``: "B = 1 → 2 → 8", "(B 1, S 7) → (B 2, S 7)"; a long
    one is abbreviated in the middle, never wrapped mid-point."""
    if all(p.symbols == (BATCH,) for p in points):
        parts = [str(p.get(BATCH)) for p in points]
        head = "B = "
    else:
        parts = [f"({format_point(p)})" for p in points]
        head = ""
    text = head + " → ".join(parts)
    if len(text) <= width or len(parts) <= 4:
        return text

    def cut(keep: int) -> str:
        return head + " → ".join(parts[:keep] + [f"… {len(parts) - keep - 1} more …"] +
                                 parts[-1:])

    best = cut(2)
    for keep in range(3, len(parts) - 1):
        if len(cut(keep)) > width:
            break
        best = cut(keep)
    return best


# --- sequences ------------------------------------------------------------------------------------

class SizeError(ValueError):
    """A malformed sequence or path; ``key`` is the dotted scenario key it came from."""

    def __init__(self, key: str, message: str, remedy: str | None = None) -> None:
        super().__init__(message)
        self.key, self.message, self.remedy = key, message, remedy


def expand_grid(grid: Mapping[str, Sequence[int]]) -> list[dict[str, int]]:
    """Every combination, in the order written, the LAST symbol varying fastest."""
    names = list(grid)
    return [dict(zip(names, combo)) for combo in itertools.product(*(grid[n] for n in names))]


def parse_sequence(key: str, value: Any, symbols: Sequence[str],
                   suggest: Callable[[str, Sequence[str]], str | None]) -> tuple[Point, ...]:
    """One sequence of a scenario: a list of batch sizes, a list of points, or ``{grid: ...}``."""
    if isinstance(value, dict):
        if set(value) != {"grid"}:
            extra = next(iter(set(value) - {"grid"}), None)
            raise SizeError(f"{key}.{extra}" if extra is not None else key,
                            f"unknown key {extra!r} in a sequence mapping",
                            "A sequence is a list, or {grid: {SYMBOL: [sizes], ...}}.")
        grid = value["grid"]
        if not isinstance(grid, dict) or not grid:
            raise SizeError(f"{key}.grid", "expected a mapping of symbol -> list of sizes",
                            "e.g. {grid: {B: [1, 2, 8], S: [16, 128]}}")
        for name, sizes in grid.items():
            _check_symbol(f"{key}.grid.{name}", name, symbols, suggest)
            if isinstance(sizes, int) and not isinstance(sizes, bool):
                sizes = [sizes]
            if not isinstance(sizes, list) or not sizes:
                raise SizeError(f"{key}.grid.{name}", f"expected a non-empty list of sizes for "
                                f"{name}, got {sizes!r}")
            for j, size in enumerate(sizes):
                _check_size(f"{key}.grid.{name}[{j}]", size)
            grid[name] = sizes
        _check_complete(f"{key}.grid", set(grid), symbols)
        return tuple(Point.of(p, symbols) for p in expand_grid(grid))
    if not isinstance(value, list):
        raise SizeError(key, f"expected a list of sizes or points, got {_type(value)}",
                        "e.g. [1, 2, 8], [{B: 1, S: 7}, {B: 2, S: 7}] or {grid: {B: [1, 2]}}")
    if not value:
        raise SizeError(key, "expected a non-empty list")
    points = []
    for i, item in enumerate(value):
        ikey = f"{key}[{i}]"
        if isinstance(item, dict):
            for name, size in item.items():
                _check_symbol(f"{ikey}.{name}", name, symbols, suggest)
                _check_size(f"{ikey}.{name}", size)
            _check_complete(ikey, set(item), symbols)
            points.append(Point.of(item, symbols))
        else:
            _check_size(ikey, item, "a batch size (a non-negative integer) or a point "
                        "{SYMBOL: size, ...}")
            if BATCH not in symbols or len(symbols) > 1:
                others = [s for s in symbols if s != BATCH]
                raise SizeError(ikey, f"a plain number is a batch size, but this scenario's "
                                f"symbols are {', '.join(symbols) or 'none'}",
                                f"Write a point per call, e.g. {{{', '.join(f'{s}: 4' for s in symbols)}}}"
                                if others else None)
            points.append(Point.batch(item))
    return tuple(points)


def _check_symbol(key: str, name: Any, symbols: Sequence[str],
                  suggest: Callable[[str, Sequence[str]], str | None]) -> None:
    if str(name) not in symbols:
        raise SizeError(key, f"unknown size symbol {str(name)!r}",
                        suggest(str(name), symbols) or
                        f"This scenario's symbols: {', '.join(symbols) or 'none'}.")


def _check_size(key: str, size: Any, what: str = "a size (a non-negative integer)") -> None:
    if isinstance(size, bool) or not isinstance(size, int):
        raise SizeError(key, f"expected {what}, got {_type(size)} ({size!r})")
    if size < 0:
        raise SizeError(key, f"sizes cannot be negative, got {size}")


def _check_complete(key: str, given: set, symbols: Sequence[str]) -> None:
    missing = [s for s in symbols if s not in given]
    if missing:
        raise SizeError(key, f"missing size for symbol{'s' if len(missing) > 1 else ''} "
                        f"{', '.join(missing)}", "Every point names every symbol of the scenario "
                        "(hold one fixed with a one-element list in a grid).")


def _type(value: Any) -> str:
    return {dict: "a mapping", list: "a list", str: "a string", bool: "a boolean",
            int: "an integer", float: "a number", type(None): "nothing (null)"}.get(
                type(value), type(value).__name__)


# --- argument paths -------------------------------------------------------------------------------

_STEP = re.compile(r"""\.(?P<attr>[A-Za-z_]\w*)|\[(?P<index>-?\d+)\]|\[(?P<star>\*)\]"""
                   r"""|\[(?P<q>["'])(?P<key>[^"']*)(?P=q)\]""")
_HEAD = re.compile(r"^(?P<head>\d+|[A-Za-z_]\w*)")


@dataclass(frozen=True)
class Path:
    """Where a tensor lives in the inputs: a head (positional index or keyword) then steps."""

    head: int | str
    steps: tuple[tuple[str, Any], ...] = ()  #: ("attr", name) | ("index", i) | ("key", k) | ("*", None)

    def __str__(self) -> str:
        out = str(self.head)
        for kind, value in self.steps:
            out += {"attr": f".{value}", "index": f"[{value}]", "key": f"[{value!r}]",
                    "*": "[*]"}[kind]
        return out


def parse_path(key: str, value: Any) -> Path:
    """``0``, ``"input_ids"``, ``"past_key_values.key_cache[*]"``, ``'batch["pixel_values"]'``."""
    if isinstance(value, bool):
        raise SizeError(key, f"expected an argument index, keyword or path, got {value!r}")
    if isinstance(value, int):
        if value < 0:
            raise SizeError(key, f"argument index cannot be negative, got {value}")
        return Path(value)
    if not isinstance(value, str) or not value.strip():
        raise SizeError(key, f"expected an argument index, keyword or path, got {_type(value)}")
    text = value.strip()
    head = _HEAD.match(text)
    if head is None:
        raise SizeError(key, f"cannot read the argument path {text!r}",
                        "Start with an argument index or a keyword, e.g. 0, input_ids, "
                        "past_key_values.key_cache[*], batch[\"pixel_values\"].")
    pos, steps = head.end(), []
    while pos < len(text):
        step = _STEP.match(text, pos)
        if step is None:
            raise SizeError(key, f"cannot read the argument path {text!r} at {text[pos:]!r}",
                            "Steps are .attribute, [index], [\"key\"] or [*].")
        if step.group("attr"):
            steps.append(("attr", step.group("attr")))
        elif step.group("index") is not None:
            steps.append(("index", int(step.group("index"))))
        elif step.group("star"):
            steps.append(("*", None))
        else:
            steps.append(("key", step.group("key")))
        pos = step.end()
    raw = head.group("head")
    return Path(int(raw) if raw.isdigit() else raw, tuple(steps))


def resolve(path: Path, args: Sequence[Any], kwargs: Mapping[str, Any],
            arg_names: Sequence[str | None] = ()) -> Iterator[tuple[Path, Any]]:
    """Every (concrete path, value) the path names in these inputs; ``[*]`` expands.

    A keyword head also finds a positional argument of that name (``arg_names``). A path that
    names nothing yields nothing: the caller decides whether that is an error.
    """
    if isinstance(path.head, int):
        if path.head >= len(args):
            return
        root: Any = args[path.head]
    elif path.head in kwargs:
        root = kwargs[path.head]
    elif path.head in arg_names and list(arg_names).index(path.head) < len(args):
        root = args[list(arg_names).index(path.head)]
    else:
        return
    yield from _walk(root, Path(path.head), list(path.steps))


def _walk(value: Any, at: Path, steps: list[tuple[str, Any]]) -> Iterator[tuple[Path, Any]]:
    if not steps:
        yield at, value
        return
    (kind, arg), rest = steps[0], steps[1:]
    if kind == "*":
        items: Any = value.items() if isinstance(value, dict) else enumerate(value) \
            if isinstance(value, (list, tuple)) else ()
        for k, item in items:
            step = ("key", k) if isinstance(value, dict) else ("index", k)
            yield from _walk(item, Path(at.head, at.steps + (step,)), rest)
        return
    try:
        child = getattr(value, arg) if kind == "attr" else value[arg]
    except (AttributeError, KeyError, IndexError, TypeError):
        return
    yield from _walk(child, Path(at.head, at.steps + ((kind, arg),)), rest)


def why_unresolved(path: Path, args: Sequence[Any], kwargs: Mapping[str, Any],
                   arg_names: Sequence[str | None] = ()) -> str:
    """Why ``path`` names nothing in these inputs: the first step that finds nothing (a ``[*]``
    is followed through its first element)."""
    names = list(arg_names)
    if isinstance(path.head, int):
        if path.head >= len(args):
            return f"there are {len(args)} positional argument(s)"
        value: Any = args[path.head]
    elif path.head in kwargs:
        value = kwargs[path.head]
    elif path.head in names and names.index(path.head) < len(args):
        value = args[names.index(path.head)]
    else:
        have = [n or str(i) for i, n in enumerate(names[:len(args)] or [None] * len(args))]
        have += [str(k) for k in kwargs if k not in have]
        return (f"no argument is called {path.head!r} (arguments: {', '.join(have) or 'none'})"
                + _did_you_mean(str(path.head), have))
    at = Path(path.head)
    for kind, arg in path.steps:
        if kind == "*":
            items = list(value.values()) if isinstance(value, dict) else \
                list(value) if isinstance(value, (list, tuple)) else None
            if items is None:
                return (f"{at} is {_article(value)}, not a list, tuple or dict: [*] has nothing "
                        "to expand")
            if not items:
                return f"{at} is empty"
            first = next(iter(value)) if isinstance(value, dict) else 0
            value, at = items[0], Path(at.head, at.steps + (
                ("key" if isinstance(value, dict) else "index", first),))
            continue
        try:
            value = getattr(value, arg) if kind == "attr" else value[arg]
        except (AttributeError, KeyError, IndexError, TypeError):
            step = str(Path(0, ((kind, arg),)))[1:]
            if kind == "attr":
                have = sorted(k for k in getattr(value, "__dict__", {}) if not k.startswith("_"))
            elif isinstance(value, dict):
                have = [repr(k) for k in value]
            elif isinstance(value, (list, tuple)):
                have = [f"{len(value)} element(s)"]
            else:
                have = []
            return (f"{at} ({_article(value)}) has no {step}" +
                    (f"; it has {', '.join(have)}" if have else "") +
                    _did_you_mean(str(arg), [h.strip("'\"") for h in have]))
        at = Path(at.head, at.steps + ((kind, arg),))
    return f"{path} names nothing"


def _did_you_mean(name: str, choices: Sequence[str]) -> str:
    import difflib

    match = difflib.get_close_matches(name, list(choices), n=1, cutoff=0.6)
    return f" (did you mean {match[0]!r}?)" if match else ""


def _article(value: Any) -> str:
    name = type(value).__name__
    return f"{'an' if name[:1].lower() in 'aeiou' else 'a'} {name}"


def dynamo_source(path: Path, arg_names: Sequence[str | None], var_keyword: str | None) -> str | None:
    """The source Dynamo names this value by in guards and reasons: ``L['x']``,
    ``L['kwargs']['input_ids']``, ``L['past_key_values'].key_cache[0]``; None if unknown."""
    if isinstance(path.head, int):
        name = arg_names[path.head] if path.head < len(arg_names) else None
        if name is None:
            return None
        out = f"L[{name!r}]"
    elif path.head in arg_names:
        out = f"L[{path.head!r}]"
    elif var_keyword is not None:
        out = f"L[{var_keyword!r}][{path.head!r}]"
    else:
        return None
    for kind, value in path.steps:
        if kind == "*":
            return None  # a pattern, not one value
        out += f".{value}" if kind == "attr" else f"[{value!r}]"
    return out


@dataclass(frozen=True)
class DimRef:
    """Dims of one argument (or a path into one) that follow a size symbol."""

    symbol: str
    path: Path
    dims: tuple[int, ...]
    #: the scenario key it was written under ("dims.S.input_ids"), so a path that names nothing
    #: in the actual inputs is reported at its line; None for dims read from tensor shapes
    key: str | None = field(default=None, compare=False)


def parse_dims(key: str, value: Any, symbols: Sequence[str],
               suggest: Callable[[str, Sequence[str]], str | None]) -> tuple[DimRef, ...]:
    """``dims: {B: {0: [0], input_ids: [0]}, S: {"past_key_values.key_cache[*]": [2]}}``."""
    if not isinstance(value, dict):
        raise SizeError(key, f"expected a mapping of symbol -> {{argument: dims}}, got "
                        f"{_type(value)}", "e.g. dims: {B: {0: [0], 1: [0]}, S: {0: [1]}}")
    out = []
    for symbol, refs in value.items():
        skey = f"{key}.{symbol}"
        if not is_symbol(str(symbol)):
            raise SizeError(skey, f"{symbol!r} is not a size symbol",
                            "Symbols are capital letters and digits, e.g. B, S, H2.")
        if symbols and str(symbol) not in symbols:
            raise SizeError(skey, f"unknown size symbol {str(symbol)!r}",
                            suggest(str(symbol), symbols) or
                            f"This scenario's symbols: {', '.join(symbols)}.")
        out.extend(parse_arg_dims(skey, refs, str(symbol)))
    return tuple(out)


def parse_arg_dims(key: str, value: Any, symbol: str) -> list[DimRef]:
    """``{0: [0], input_ids: 1, "cache.k[*]": [2]}`` -> one DimRef per argument path."""
    if not isinstance(value, dict):
        raise SizeError(key, f"expected a mapping of argument (index, keyword or path) -> dims, "
                        f"got {_type(value)}", "e.g. {0: [0], input_ids: [0]}")
    out = []
    for arg, dims in value.items():
        akey = f"{key}.{arg}"
        path = parse_path(akey, arg)
        if isinstance(dims, int) and not isinstance(dims, bool):
            dims = [dims]
        if not isinstance(dims, list) or not dims:
            raise SizeError(akey, f"expected a list of dims, got {_type(dims)} ({dims!r})")
        for j, d in enumerate(dims):
            if isinstance(d, bool) or not isinstance(d, int):
                raise SizeError(f"{akey}[{j}]", f"expected a dim index, got {_type(d)} ({d!r})")
        out.append(DimRef(symbol, path, tuple(dims), akey))
    return out


def varying(points: Sequence[Point]) -> tuple[str, ...]:
    """Symbols whose size changes within the points, in symbol order; all of them if none does
    (a one-point sequence still marks what it would mark)."""
    if not points:
        return ()
    moving = tuple(s for s in points[0].symbols if len({p.get(s) for p in points}) > 1)
    return moving or points[0].symbols
