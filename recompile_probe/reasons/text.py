"""How Dynamo writes a guard failure, read in one place. No torch.

A recompile reason is one line per cache entry that rejected the call, most recently used entry
first: ``0/0: tensor 'x' size mismatch at index 0. expected 1, actual 2``, the compile id of the
rejecting entry, then its failing guard, often with a trailing ``  # <user line>`` comment. With
``recompiles_verbose`` an entry's failing parts are joined by ``; `` on one line. Sources name
locals as ``L['x']`` (messages print them as ``x``).
"""

from __future__ import annotations

import dataclasses
import re

from ..records.origin import StackFrame
from ..records.run import OBJECT_ALIASING, SHAPE_ENV

#: "N/M: guard", or with compiled autograd "!A/N/M: guard"; the guard may be empty (torch 2.9
#: logs "0/0: " for a backend change)
_ENTRY_LINE = re.compile(r"^(?P<entry>!?\d+(?:/\d+)+):(?: (?P<body>.*))?$", re.S)
# torch's strip_local_scope: L['x'] -> x, as recompile messages print sources
_LOCAL_SCOPE = re.compile(r"L\[\s*['\"](.*?)['\"]\s*\]")
_TENSOR_PROPERTY = re.compile(r"\.(?:size\(\)\[\d+\]|stride\(\)\[\d+\]|storage_offset\(\))$")
#: the code object Dynamo makes to resume a frame after a graph break at <line> of <fn>
_RESUME = re.compile(r"^torch_dynamo_resume_in_(?P<fn>.+)_at_(?P<line>\d+)$")


def resumed_from(co_name: str) -> str | None:
    """``torch_dynamo_resume_in_f_at_10`` -> ``f``: the code whose graph break it resumes (itself
    possibly a resume function); None for any other name."""
    match = _RESUME.match(co_name)
    return match.group("fn") if match else None


def resumed_at(co_name: str) -> tuple[str, int] | None:
    """``torch_dynamo_resume_in_f_at_10`` -> (``f``, 10): the resumed code's name and the line
    of its graph break. Names repeat (every test of a suite may define its own ``f``): the line
    tells which of a file's ``f`` it resumes."""
    match = _RESUME.match(co_name)
    return (match.group("fn"), int(match.group("line"))) if match else None


def entry_line(line: str) -> tuple[str | None, str]:
    """``0/0: n == 3  # ...`` (a leading "- " allowed, as the log writes it) -> ("0/0",
    "n == 3  # ..."): the compile id of the entry whose guard failed, and the guard, comment
    kept. A line with no compile id -> (None, the line)."""
    text = line.strip()
    if text.startswith("- "):
        text = text[2:].lstrip()
    match = _ENTRY_LINE.match(text)
    return (match.group("entry"), match.group("body") or "") if match else (None, text)


def failure_lines(reason: str | None) -> list[str]:
    """The "N/M: ..." lines of a reason (one per rejecting cache entry); others dropped."""
    if not reason:
        return []
    return [ln.strip() for ln in reason.splitlines() if _ENTRY_LINE.match(ln.strip())]


def strip_comment(line: str) -> str:
    """A guard without Dynamo's trailing ``  # source`` comment."""
    return line.split("  #", 1)[0].strip()


def split_parts(body: str) -> list[str]:
    """An entry's failing parts as ``recompiles_verbose`` joins them (``a; b``) -> [a, b].

    A guard's comment may hold "; " itself (Dynamo's "... in the framework; to avoid
    specialization try mark_unbacked(tensor, dim))"): a piece that leaves a parenthesis open is
    joined with the next."""
    out: list[str] = []
    current = ""
    for piece in body.split("; "):
        current = f"{current}; {piece}" if current else piece
        if current.count("(") <= current.count(")"):
            if current.strip():
                out.append(current.strip())
            current = ""
    if current.strip():
        out.append(current.strip())
    return out


def local_source(name: str) -> str:
    """Dynamo's source for a name in a reason: x -> L['x'], kwargs['ids'] -> L['kwargs']['ids']."""
    if name.startswith(("L[", "G[")):
        return name
    match = re.match(r"^(?P<local>\w+)(?P<rest>[\[.].*)?$", name)
    if match is None:
        return f"L['{name}']"
    return f"L['{match.group('local')}']{match.group('rest') or ''}"


def strip_local_scope(text: str) -> str:
    """``L['x'].size()[0]`` -> ``x.size()[0]``: sources as recompile messages print them."""
    return _LOCAL_SCOPE.sub(r"\1", text)


def tensor_of(source: str) -> str:
    """``L['x'].size()[0]`` -> ``L['x']``: the tensor a size/stride/offset source belongs to."""
    return _TENSOR_PROPERTY.sub("", source)


def without_comments(reason: str) -> str:
    """A reason's lines without Dynamo's trailing source comments (tables show them so; the
    JSON keeps the raw text)."""
    return "\n".join(line.split("  #", 1)[0].rstrip() for line in reason.splitlines())


#: the heading Dynamo writes under a guard whose user frames it kept (torch 2.13: int and global
#: guards; 2.15 aliasing guards too), then ``  File "f.py", line 16, in outer`` and the code line
#: per frame, outermost first
STACK_HEAD = "User stack trace:"
_FRAME = re.compile(r'^File "(?P<file>.+)", line (?P<line>\d+), in (?P<function>.+)$')


def user_stacks(message: str | None) -> dict[tuple[str | None, str], tuple[StackFrame, ...]]:
    """The user stack Dynamo wrote under each failing guard of a recompile message (the
    recompiles log prefixes every line with "- "; the metrics' ``recompile_reason`` does not):
    (entry, guard without comment) -> its frames, outermost first.
    Guards without a stack are left out; ``{}`` when none has one."""
    out: dict[tuple[str | None, str], tuple[StackFrame, ...]] = {}
    current: tuple[str | None, str] | None = None
    frames: list[StackFrame] = []
    in_stack = False

    def close() -> None:
        if current is not None and frames:
            out[current] = tuple(frames)

    for raw in (message or "").splitlines():
        text = raw.strip()
        if text.startswith("- "):
            text = text[2:].strip()
        if _ENTRY_LINE.match(text):
            close()
            entry, body = entry_line(text)
            current, frames, in_stack = (entry, strip_comment(body)), [], False
            continue
        if text == STACK_HEAD:
            in_stack = current is not None
            continue
        if not in_stack:
            continue
        frame = _FRAME.match(text)
        if frame:
            frames.append(
                StackFrame(
                    frame.group("file"), int(frame.group("line")), frame.group("function"), None
                )
            )
        elif frames and frames[-1].code is None and text:
            frames[-1] = dataclasses.replace(frames[-1], code=text)
        elif text:  # anything else ends the block
            in_stack = False
    close()
    return out


#: object ids in guard texts: ``(id=0x7f19e10d9850)`` (BACKEND_MATCH), the second argument of
#: ``___check_obj_id(fn, 139715853130448)`` (ID_MATCH) and ``___check_type_id(o, 9428...)``
#: (TYPE_MATCH): they differ per process and per object, so they cannot tell reasons apart
_IDS = (
    (re.compile(r"\(id=0x[0-9a-fA-F]+\)"), "(id=…)"),
    (re.compile(r"(___check_(?:obj|type)_id\([^,]+, )\d+\)"), r"\1…)"),
)


def mask_ids(text: str) -> str:
    """A guard text with its object ids replaced by ``…``: three BACKEND_MATCH failures of
    three new backend callables read the same."""
    for pattern, repl in _IDS:
        text = pattern.sub(repl, text)
    return text


# a sympy guard never reads "x is y"; an object-aliasing guard reads nothing else
_ALIASING = re.compile(r"^\S.* is \S.*$")


def epilogue_kind(verbose_parts: list[str]) -> str:
    """The root's epilogue lambda guards hold the shape env's symbolic guards and, in another
    lambda, the object-aliasing (``a is b``) guards: tell them apart by what they say."""
    parts = [strip_comment(p) for p in verbose_parts]
    return OBJECT_ALIASING if parts and all(_ALIASING.match(p) for p in parts) else SHAPE_ENV
