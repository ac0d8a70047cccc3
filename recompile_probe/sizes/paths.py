"""Argument paths: where a dim lives in a call's inputs, and the name Dynamo gives it. No torch.

An **argument path** is a positional index (``0``), a keyword (``input_ids``) or a path into
nested inputs (``past_key_values.key_cache[*]``, ``batch["pixel_values"]``, ``[*]`` = every
element). A ``DimRef`` says which dims of the value at a path follow a size symbol.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..errors import did_you_mean, type_name
from .points import SizeError, is_symbol

_STEP = re.compile(
    r"""\.(?P<attr>[A-Za-z_]\w*)|\[(?P<index>-?\d+)\]|\[(?P<star>\*)\]"""
    r"""|\[(?P<q>["'])(?P<key>[^"']*)(?P=q)\]"""
)
_HEAD = re.compile(r"^(?P<head>\d+|[A-Za-z_]\w*)")
#: the same grammar as an ECMA-262 regex (JSON Schema patterns; no \" escapes: invalid in u-mode)
PATH_PATTERN = (
    "^\\s*(?:\\d+|[A-Za-z_][A-Za-z0-9_]*)(?:\\.[A-Za-z_][A-Za-z0-9_]*|\\[-?\\d+\\]"
    "|\\[\\*\\]|\\[\"[^\"']*\"\\]|\\['[^\"']*'\\])*\\s*$"
)


@dataclass(frozen=True)
class Path:
    """Where a tensor lives in the inputs: a head (positional index or keyword) then steps."""

    head: int | str
    steps: tuple[
        tuple[str, Any], ...
    ] = ()  #: ("attr", name) | ("index", i) | ("key", k) | ("*", None)

    def __str__(self) -> str:
        out = str(self.head)
        for kind, value in self.steps:
            out += {"attr": f".{value}", "index": f"[{value}]", "key": f"[{value!r}]", "*": "[*]"}[
                kind
            ]
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
        raise SizeError(key, f"expected an argument index, keyword or path, got {type_name(value)}")
    text = value.strip()
    head = _HEAD.match(text)
    if head is None:
        raise SizeError(
            key,
            f"cannot read the argument path {text!r}",
            "Start with an argument index or a keyword, e.g. 0, input_ids, "
            'past_key_values.key_cache[*], batch["pixel_values"].',
        )
    pos, steps = head.end(), []
    while pos < len(text):
        step = _STEP.match(text, pos)
        if step is None:
            raise SizeError(
                key,
                f"cannot read the argument path {text!r} at {text[pos:]!r}",
                'Steps are .attribute, [index], ["key"] or [*].',
            )
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


def resolve(
    path: Path, args: Sequence[Any], kwargs: Mapping[str, Any], arg_names: Sequence[str | None] = ()
) -> Iterator[tuple[Path, Any]]:
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
        items: Any = (
            value.items()
            if isinstance(value, dict)
            else enumerate(value)
            if isinstance(value, (list, tuple))
            else ()
        )
        for k, item in items:
            step = ("key", k) if isinstance(value, dict) else ("index", k)
            yield from _walk(item, Path(at.head, at.steps + (step,)), rest)
        return
    try:
        child = getattr(value, arg) if kind == "attr" else value[arg]
    except (AttributeError, KeyError, IndexError, TypeError):
        return
    yield from _walk(child, Path(at.head, at.steps + ((kind, arg),)), rest)


def why_unresolved(
    path: Path, args: Sequence[Any], kwargs: Mapping[str, Any], arg_names: Sequence[str | None] = ()
) -> str:
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
        have = [n or str(i) for i, n in enumerate(names[: len(args)] or [None] * len(args))]
        have += [str(k) for k in kwargs if k not in have]
        return (
            f"no argument is called {path.head!r} (arguments: {', '.join(have) or 'none'})"
            + _did_you_mean(str(path.head), have)
        )
    at = Path(path.head)
    for kind, arg in path.steps:
        if kind == "*":
            items = (
                list(value.values())
                if isinstance(value, dict)
                else list(value)
                if isinstance(value, (list, tuple))
                else None
            )
            if items is None:
                return (
                    f"{at} is {_article(value)}, not a list, tuple or dict: [*] has nothing "
                    "to expand"
                )
            if not items:
                return f"{at} is empty"
            first = next(iter(value)) if isinstance(value, dict) else 0
            value, at = (
                items[0],
                Path(at.head, at.steps + (("key" if isinstance(value, dict) else "index", first),)),
            )
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
            return (
                f"{at} ({_article(value)}) has no {step}"
                + (f"; it has {', '.join(have)}" if have else "")
                + _did_you_mean(str(arg), [h.strip("'\"") for h in have])
            )
        at = Path(at.head, at.steps + ((kind, arg),))
    return f"{path} names nothing"


def _did_you_mean(name: str, choices: Sequence[str]) -> str:
    match = difflib.get_close_matches(name, list(choices), n=1, cutoff=0.6)
    return f" (did you mean {match[0]!r}?)" if match else ""


def _article(value: Any) -> str:
    name = type(value).__name__
    return f"{'an' if name[:1].lower() in 'aeiou' else 'a'} {name}"


def dynamo_source(
    path: Path, arg_names: Sequence[str | None], var_keyword: str | None
) -> str | None:
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
    return _with_steps(out, path)


def _with_steps(root: str, path: Path) -> str | None:
    """``root`` followed by the path's steps, as Dynamo writes a source; None for a pattern."""
    out = root
    for kind, value in path.steps:
        if kind == "*":
            return None  # a pattern, not one value
        out += f".{value}" if kind == "attr" else f"[{value!r}]"
    return out


@dataclass(frozen=True)
class FrameArgs:
    """How the frame Dynamo compiles names its arguments: the code object's own parameters,
    not the signature ``inspect`` shows. A decorator's ``wrapped_func(*args, **kwargs)`` (which
    transformers puts around forward) makes ``input_ids`` ``L['kwargs']['input_ids']`` and
    positional argument 0 of a bound method ``L['args'][1]``, whatever ``__wrapped__`` says."""

    positional: tuple[str, ...]  #: the code's positional parameters, ``self`` included
    keyword_only: tuple[str, ...] = ()
    var_positional: str | None = None
    var_keyword: str | None = None
    #: leading positional parameters bound before the call (``self`` of a method or module)
    bound: int = 0


def frame_source(path: Path, frame: FrameArgs) -> str | None:
    """``dynamo_source`` for a known frame: the source Dynamo's guards and reasons name."""
    head = path.head
    if isinstance(head, int):
        i = head + frame.bound
        if i < len(frame.positional):
            out = f"L[{frame.positional[i]!r}]"
        elif frame.var_positional is not None:
            out = f"L[{frame.var_positional!r}][{i - len(frame.positional)}]"
        else:
            return None
    elif head in frame.positional or head in frame.keyword_only:
        out = f"L[{head!r}]"
    elif frame.var_keyword is not None:
        out = f"L[{frame.var_keyword!r}][{head!r}]"
    else:
        return None
    return _with_steps(out, path)


@dataclass(frozen=True)
class DimRef:
    """Dims of one argument (or a path into one) that follow a size symbol."""

    symbol: str
    path: Path
    dims: tuple[int, ...]
    #: the scenario key it was written under ("dims.S.input_ids"), so a path that names nothing
    #: in the actual inputs is reported at its line; None for dims read from tensor shapes
    key: str | None = field(default=None, compare=False)


def parse_dims(key: str, value: Any, symbols: Sequence[str]) -> tuple[DimRef, ...]:
    """``dims: {B: {0: [0], input_ids: [0]}, S: {"past_key_values.key_cache[*]": [2]}}``."""
    if not isinstance(value, dict):
        raise SizeError(
            key,
            f"expected a mapping of symbol -> {{argument: dims}}, got {type_name(value)}",
            "e.g. dims: {B: {0: [0], 1: [0]}, S: {0: [1]}}",
        )
    out = []
    for symbol, refs in value.items():
        skey = f"{key}.{symbol}"
        if not is_symbol(str(symbol)):
            raise SizeError(
                skey,
                f"{symbol!r} is not a size symbol",
                "Symbols are capital letters and digits, e.g. B, S, H2.",
            )
        if symbols and str(symbol) not in symbols:
            raise SizeError(
                skey,
                f"unknown size symbol {str(symbol)!r}",
                did_you_mean(str(symbol), symbols)
                or f"This scenario's symbols: {', '.join(symbols)}.",
            )
        out.extend(parse_arg_dims(skey, refs, str(symbol)))
    return tuple(out)


def parse_arg_dims(key: str, value: Any, symbol: str) -> list[DimRef]:
    """``{0: [0], input_ids: 1, "cache.k[*]": [2]}`` -> one DimRef per argument path."""
    if not isinstance(value, dict):
        raise SizeError(
            key,
            f"expected a mapping of argument (index, keyword or path) -> dims, "
            f"got {type_name(value)}",
            "e.g. {0: [0], input_ids: [0]}",
        )
    out = []
    for arg, dims in value.items():
        akey = f"{key}.{arg}"
        path = parse_path(akey, arg)
        if isinstance(dims, int) and not isinstance(dims, bool):
            dims = [dims]
        if not isinstance(dims, list) or not dims:
            raise SizeError(akey, f"expected a list of dims, got {type_name(dims)} ({dims!r})")
        for j, d in enumerate(dims):
            if isinstance(d, bool) or not isinstance(d, int):
                raise SizeError(f"{akey}[{j}]", f"expected a dim index, got {type_name(d)} ({d!r})")
        out.append(DimRef(symbol, path, tuple(dims), akey))
    return out
