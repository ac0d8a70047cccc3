"""A failing guard's text -> structured data and its kind (kinds.py). No torch.

The first failing line of a recompile decides its kind. Text this module does not recognise is
kind ``other`` with the raw text: never a crash.
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any

from ..records.reason_detail import ReasonDetail
from .text import entry_line, failure_lines, local_source, strip_comment

#: Dynamo's comment on a duck-sized equality guard
DUCK_MARK = "duck sizing added this equality"

# Non-greedy up to "' <what> mismatch": sources may hold quotes (tensor 'kwargs['input_ids']').
_TENSOR = re.compile(
    r"^tensor '(?P<name>.+?)' (?P<what>[\w ]+?) mismatch"
    r"(?: at index (?P<dim>-?\d+))?\.\s*(?P<rest>.*)$"
)
_EXPECTED = re.compile(r"expected (?P<expected>[^,]+?)(?:, actual (?P<actual>.+))?$")
_SIZE_EXPR = re.compile(r"(?P<src>[\w\[\]'\".]+?)\.(?P<prop>size|stride)\(\)\[(?P<dim>\d+)\]")
_ZERO_ONE = re.compile(r"^2 <= (?P<src>[\w\[\]'\".]+?)\.size\(\)\[(?P<dim>\d+)\]$")
_EQUALS = re.compile(r"^(?P<src>.+?)\s*==\s*(?P<value>.+)$")
#: the length of a frame's *args / **kwargs: the set of arguments, not a user list
_ARGUMENTS = re.compile(r"^len\((?:L\[')?(?:args|kwargs)(?:'\])?\)$")
#: an attribute of a value (``kwargs['cache'].layers[0].is_initialized``): an object's state
_ATTRIBUTE = re.compile(r"[\w\]]\.[A-Za-z_]\w*(?:\[[^\]]*\])*$")
_TYPE = re.compile(r"expected type of '(?P<name>[^']+)'.*found (?P<actual>.+)$")
#: ``a is b``: an object-aliasing guard (the two sources must stay one object); torch 2.15 adds
#: a user stack after it
_ALIASED = re.compile(r"^(?P<a>[\w\[\]'\".]+) is (?P<b>[\w\[\]'\".]+)$")
#: how releases word a failed NO_TENSOR_ALIASING guard (two sources must stay distinct):
#: ``Duplicate tensors found: ["a", "b"]`` (2.13 lists the sources as a Python list's repr), and
#: in torch 2.15 also the guard's name, with the sources it could no longer evaluate
#: ``x is None`` / ``x is not None`` (and True/False): a value guard on one source, not aliasing
_IS_CONSTANT = re.compile(r"^(?P<src>.+?) is (?P<neg>not )?(?P<value>None|True|False)$")
_NO_ALIASING = ("Duplicate tensors found", "NO_TENSOR_ALIASING")
#: the sources a list's repr names: ``["a", "b"]`` (L['a'] once stripped to a), ``['a', 'b']``
_QUOTED = (re.compile(r'"([^"]+)"'), re.compile(r"'([^']+)'"))
#: torch's own assertions: the guards Dynamo just built reject the very frame they were built
#: for (2.13, 2.15), a cache entry's guards failed at run time yet passed when Dynamo looked for
#: the reason (a recompile reason in 2.13 and 2.15), and a C++ TORCH_INTERNAL_ASSERT
INTERNAL_TEXTS = (
    "Guard failed on the same frame it was created",
    "Unexpected recompilation: runtime guards failed even though they passed",
    "INTERNAL ASSERT FAILED",
)


#: how Dynamo words a recompile whose guards all pass here: with guard collectives on, another
#: rank's guards failed and every rank recompiles (measured on torch 2.13, gloo)
PEER_RECOMPILE = "Unexpected recompilation: runtime guards failed even though they passed"
#: the same recompile as torch 2.9 words it (no guard fails on the re-check, so no reason at
#: all: measured on 2.9.1, gloo, guard collectives on)
PEER_RECOMPILE_29 = "Unable to find recompilation reasons"


def parse_line(line: str) -> ReasonDetail:
    entry, body = entry_line(line)
    comment = body.partition("  #")[2].strip()
    body = strip_comment(body)
    base: dict[str, Any] = {"entry": entry, "text": body}
    if body.startswith("BACKEND_MATCH"):
        return ReasonDetail("backend_change", "backend", **base)
    if body.startswith(PEER_RECOMPILE):
        return ReasonDetail("peer_rank_recompiled", "another rank's guards", **base)
    if is_internal_error(body):
        return ReasonDetail("torch_internal_error", "internal assertion", **base)
    constant = _IS_CONSTANT.match(body)
    if constant:
        subject = constant.group("src").strip()
        if subject.isidentifier():
            subject = local_source(subject)
        value = f"is {constant.group('neg') or ''}{constant.group('value')}"
        return ReasonDetail(_value_kind(subject), "value", subject, expected=value, **base)
    aliased = _ALIASED.match(body)
    # a global alias (``G['F'] is G['torch'].nn.functional``: one module under two names) is
    # not two arguments
    if aliased and not body.startswith("G["):
        return ReasonDetail(
            "tensor_aliasing",
            "aliasing",
            local_source(aliased.group("a")),
            expected=f"is {local_source(aliased.group('b'))}",
            **base,
        )
    if body.startswith(_NO_ALIASING):
        listed = body.partition(":")[2]
        names = _QUOTED[0].findall(listed) or _QUOTED[1].findall(listed)
        return ReasonDetail(
            "tensor_aliasing",
            "aliasing",
            local_source(names[0]) if names else None,
            expected="distinct tensors",
            actual=(
                "the same tensor: " + ", ".join(local_source(n) for n in names) if names else None
            ),
            **base,
        )

    tensor = _TENSOR.match(body)
    if tensor:
        what = tensor.group("what").strip().replace(" ", "_")
        dim = int(tensor.group("dim")) if tensor.group("dim") is not None else None
        exp = _EXPECTED.search(tensor.group("rest"))
        expected = exp.group("expected").strip() if exp else None
        actual = exp.group("actual").strip() if exp and exp.group("actual") else None
        if what == "requires_grad" and expected and expected.startswith("requires_grad="):
            expected = str(expected.endswith("1"))
            actual = actual or str(expected == "False")
        kind = {
            "dtype": "dtype_change",
            "requires_grad": "requires_grad_change",
            "stride": "stride_change",
            "rank": "rank_change",
        }.get(what, "other")
        if what == "size":
            kind = "zero_one_specialization" if expected in ("0", "1") else "static_size_change"
        return ReasonDetail(
            kind, what, local_source(tensor.group("name")), dim, expected, actual, **base
        )
    if body.startswith("GLOBAL_STATE changed"):
        return ReasonDetail(
            "global_or_config_change",
            "global state",
            body.partition(":")[2].strip() or None,
            **base,
        )
    type_match = _TYPE.search(body)
    if type_match or body.startswith("___check_type_id"):
        subject = local_source(type_match.group("name")) if type_match else _subject(body) or None
        kind = (
            "global_or_config_change"
            if subject and subject.startswith("G[")
            else "type_or_id_change"
        )
        return ReasonDetail(
            kind, "type", subject, actual=type_match.group("actual") if type_match else None, **base
        )
    if body.startswith(("___check_obj_id", "id(")):
        subject = _subject(body)
        kind = "global_or_config_change" if subject.startswith("G[") else "type_or_id_change"
        return ReasonDetail(kind, "id", subject or None, **base)
    if comment.startswith(DUCK_MARK):
        duck = _EQUALS.match(body)
        size = re.search(r"had the same size (\d+)", comment)
        if duck is None:
            return ReasonDetail("duck_sizing", "shape-env expression", **base)
        src = duck.group("src").strip()
        size_match = _SIZE_EXPR.search(src)
        expected = f"== {duck.group('value').strip()}" + (
            f" (both {size.group(1)} at the first compile)" if size else ""
        )
        return ReasonDetail(
            "duck_sizing",
            "shape-env expression",
            local_source(size_match.group("src")) if size_match else local_source(src),
            int(size_match.group("dim")) if size_match else None,
            expected,
            **base,
        )
    zero_one = _ZERO_ONE.match(body)
    if zero_one:
        return ReasonDetail(
            "zero_one_specialization",
            "shape-env expression",
            local_source(zero_one.group("src")),
            int(zero_one.group("dim")),
            expected=">= 2",
            **base,
        )
    size_expr = _SIZE_EXPR.search(body)
    if size_expr:
        return ReasonDetail(
            "shape_env_guard",
            "shape-env expression",
            local_source(size_expr.group("src")),
            int(size_expr.group("dim")),
            **base,
        )
    equals = _EQUALS.match(body)
    if equals:
        subject = equals.group("src").strip()
        if subject.isidentifier():
            subject = local_source(subject)
        value = equals.group("value").strip()
        if _ARGUMENTS.match(subject):
            return ReasonDetail("arguments_changed", "length", subject, expected=value, **base)
        return ReasonDetail(_value_kind(subject), "value", subject, expected=value, **base)
    return ReasonDetail("other", "unknown", **base)


def _value_kind(subject: str) -> str:
    """The kind of a value guard on ``subject``: a global (a module-level config included), an
    attribute of an object the function was given (a model's ``config`` field included), or a
    plain Python value."""
    if subject.startswith("G["):
        return "global_or_config_change"
    if _ATTRIBUTE.search(subject) and not subject.startswith("len("):
        return "object_state"
    return "python_scalar_change"


def _subject(body: str) -> str:
    """The first argument of ``___check_type_id(m, 9444...)``, as a source."""
    subject = body[body.find("(") + 1 :].split(",")[0].strip()
    return local_source(subject) if subject and subject.isidentifier() else subject


#: kinds a failing guard may have when a user line specialized it (refine's inputs)
_SPECIALIZABLE = ("python_scalar_change", "shape_env_guard", "static_size_change", "object_state")


def refine(detail: ReasonDetail | None, role: str | None) -> ReasonDetail | None:
    """The kind once the failing guard's origin is known: a guard whose origin has the role
    ``specialized`` (a replacement to a constant made by a user line) is user_specialization;
    everything else keeps the kind its text gave."""
    if detail is None or role != "specialized" or detail.kind not in _SPECIALIZABLE:
        return detail
    return replace(detail, kind="user_specialization")


def with_guard_collectives(detail: ReasonDetail | None, on: bool | None) -> ReasonDetail | None:
    """A recompile whose guards all pass on Dynamo's re-check, read with what is known of guard
    collectives when its record was written; any other detail comes back as it is.

    ``on``: the guards that failed were another rank's (``peer_rank_recompiled``). Besides
    "Unexpected recompilation ..." (2.13) and "Unable to find recompilation reasons" (2.9's
    metrics), 2.9 writes only the entry (``0/0:``) and 2.11 a BACKEND_MATCH failure naming
    neither backend (measured with two gloo ranks and a plain program, one backend throughout);
    2.13 on names both backends in a real backend change, which stays ``backend_change``.
    ``off``: no other rank can have forced it, and torch's source calls it a bug ("Unexpected
    recompilation - points to a bug"): ``torch_internal_error``. ``None`` (not known, e.g. a
    trace file read afterwards): the text's own reading.
    """
    if detail is None or on is None:
        return detail
    if not on:
        if detail.kind != "peer_rank_recompiled":
            return detail
        return replace(detail, kind="torch_internal_error", what="internal assertion")
    bare = detail.kind == "other" and not detail.text.strip()
    anonymous = detail.kind == "backend_change" and "Cached backend" not in detail.text
    if not (bare or anonymous):
        return detail
    return replace(detail, kind="peer_rank_recompiled", what="another rank's guards")


def classify(
    reason: str | None, *, fail_type: str | None = None, fail_reason: str | None = None
) -> ReasonDetail | None:
    """The primary (first) failing guard of a recompile; None for a first compile."""
    if is_recompile_limit(fail_type, fail_reason):
        return ReasonDetail("recompile_limit_hit", "recompile limit", text=fail_reason or "")
    lines = failure_lines(reason)
    if lines:
        return parse_line(lines[0])
    if reason and reason.strip().startswith(PEER_RECOMPILE_29):
        return ReasonDetail("peer_rank_recompiled", "another rank's guards", text=reason.strip())
    if reason:
        return ReasonDetail("other", "unknown", text=reason.strip())
    return None


#: How releases word a frame past its limit: "Dynamo recompile limit exceeded" (2.13), "hit
#: config.recompile_limit", "recompile_limit reached" and "cache_size_limit reached" (older).
_LIMIT = re.compile(r"recompile[ _]limit|cache[ _]size[ _]limit")
#: The error a limit hit raises under fullgraph=True or fail_on_recompile_limit_hit, whose text
#: says only "Hard failure due to fullgraph=True" (FailOnCacheLimitHit in older releases).
_LIMIT_ERRORS = ("FailOnRecompileLimitHit", "FailOnCacheLimitHit")


def is_internal_error(text: str | None) -> bool:
    """Whether an error or guard text is one of torch's own assertions (INTERNAL_TEXTS)."""
    return bool(text) and any(t in (text or "") for t in INTERNAL_TEXTS)


def internal_error(fail_type: str | None, fail_reason: str | None) -> ReasonDetail | None:
    """A failed compile that is torch's internal assertion, as a detail of kind
    torch_internal_error (its text: the first line); None for any other failure."""
    if not fail_type or not is_internal_error(fail_reason):
        return None
    first = next((ln.strip() for ln in (fail_reason or "").splitlines() if ln.strip()), "")
    return ReasonDetail("torch_internal_error", "internal assertion", text=first)


def is_recompile_limit(fail_type: str | None, fail_reason: str | None) -> bool:
    """Whether a failed compile is a frame past its recompile limit, however it surfaced: the
    eager fallback (its reason names the limit) or the error it raises."""
    if not fail_type:
        return False
    if fail_type.rsplit(".", 1)[-1] in _LIMIT_ERRORS:
        return True
    return _LIMIT.search((fail_reason or "").lower()) is not None
