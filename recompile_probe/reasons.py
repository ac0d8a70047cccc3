"""Recompile reasons: Dynamo's guard-failure text -> structured data and a kind. No torch.

Dynamo writes one line per cache entry that rejected the call, most recently used entry first,
e.g. ``0/0: tensor 'x' size mismatch at index 0. expected 1, actual 2``. The first line decides
the kind. Text this module does not recognise is kind ``other`` with the raw text: never a crash.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from typing import Any

KINDS = ("zero_one_specialization", "static_size_change", "dtype_change", "requires_grad_change",
         "stride_change", "python_scalar_change", "global_or_config_change", "shape_env_guard",
         "recompile_limit_hit", "other",
         # an equality between two unrelated dims, there only because their sizes coincided at the
         # first compile (Dynamo's comment says "duck sizing added this equality")
         "duck_sizing",
         # a dynamic size or int forced to a constant by the user's code (``n == 3`` from
         # ``range(n)``, ``if x.shape[0] == 8:``): told apart from python_scalar_change by the
         # origin's role ``specialized`` (see ``refine``), not by the text
         "user_specialization",
         # ___check_type_id / TYPE_MATCH, ___check_obj_id / ID_MATCH on a local: a module or
         # object swapped for another (ids of globals stay global_or_config_change)
         "type_or_id_change",
         # BACKEND_MATCH: the same code compiled again with another backend callable
         "backend_change")

#: Dynamo's comment on a duck-sized equality guard
DUCK_MARK = "duck sizing added this equality"

# the body may be empty: torch 2.9 logs "0/0: " for a backend change (it names no guard)
_ENTRY = re.compile(r"^(?P<entry>\d+/\d+):(?: (?P<body>.*))?$")
# Non-greedy up to "' <what> mismatch": sources may hold quotes (tensor 'kwargs['input_ids']').
_TENSOR = re.compile(r"^tensor '(?P<name>.+?)' (?P<what>[\w ]+?) mismatch"
                     r"(?: at index (?P<dim>-?\d+))?\.\s*(?P<rest>.*)$")
_EXPECTED = re.compile(r"expected (?P<expected>[^,]+?)(?:, actual (?P<actual>.+))?$")
_SIZE_EXPR = re.compile(r"(?P<src>[\w\[\]'\".]+?)\.(?P<prop>size|stride)\(\)\[(?P<dim>\d+)\]")
_ZERO_ONE = re.compile(r"^2 <= (?P<src>[\w\[\]'\".]+?)\.size\(\)\[(?P<dim>\d+)\]$")
_EQUALS = re.compile(r"^(?P<src>.+?)\s*==\s*(?P<value>.+)$")
_TYPE = re.compile(r"expected type of '(?P<name>[^']+)'.*found (?P<actual>.+)$")


@dataclass(frozen=True)
class ReasonDetail:
    """One failing guard, structured."""

    kind: str  #: one of KINDS
    what: str  #: size, stride, dtype, requires_grad, device, rank, value, type, id,
    #: global state, shape-env expression, recompile limit, unknown
    source: str | None = None  #: e.g. L['x'], or the expression's subject
    dim: int | None = None
    expected: str | None = None
    actual: str | None = None
    entry: str | None = None  #: the cache entry whose guard failed, e.g. "0/0"
    text: str = ""  #: the guard-failure line, comment stripped
    #: the size symbol (B, S, ...) whose dim this is, where the source and dim map to one; set
    #: by the probe, which knows the scenario's dims
    symbol: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def strip_comment(line: str) -> str:
    return line.split("  #", 1)[0].strip()


def failure_lines(reason: str | None) -> list[str]:
    """The "N/M: ..." lines (one per rejecting cache entry); stack-trace lines dropped."""
    if not reason:
        return []
    return [ln.strip() for ln in reason.splitlines() if _ENTRY.match(ln.strip())]


def _source(name: str) -> str:
    """Dynamo's source for a name in a reason: x -> L['x'], kwargs['ids'] -> L['kwargs']['ids']."""
    if name.startswith(("L[", "G[")):
        return name
    match = re.match(r"^(?P<local>\w+)(?P<rest>[\[.].*)?$", name)
    if match is None:
        return f"L['{name}']"
    return f"L['{match.group('local')}']{match.group('rest') or ''}"


def parse_line(line: str) -> ReasonDetail:
    match = _ENTRY.match(line.strip())
    entry, body = (match.group("entry"), match.group("body") or "") if match else \
        (None, line.strip())
    comment = body.partition("  #")[2].strip()
    body = strip_comment(body)
    base = {"entry": entry, "text": body}
    if body.startswith("BACKEND_MATCH"):
        return ReasonDetail("backend_change", "backend", **base)

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
        kind = {"dtype": "dtype_change", "requires_grad": "requires_grad_change",
                "stride": "stride_change"}.get(what, "other")
        if what == "size":
            kind = ("zero_one_specialization" if expected in ("0", "1")
                    else "static_size_change")
        return ReasonDetail(kind, what, _source(tensor.group("name")), dim, expected, actual,
                            **base)
    if body.startswith("GLOBAL_STATE changed"):
        return ReasonDetail("global_or_config_change", "global state",
                            body.partition(":")[2].strip() or None, **base)
    type_match = _TYPE.search(body)
    if type_match or body.startswith("___check_type_id"):
        subject = (_source(type_match.group("name")) if type_match
                   else _subject(body) or None)
        kind = "global_or_config_change" if subject and subject.startswith("G[") \
            else "type_or_id_change"
        return ReasonDetail(kind, "type", subject,
                            actual=type_match.group("actual") if type_match else None, **base)
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
            f" (both {size.group(1)} at the first compile)" if size else "")
        return ReasonDetail("duck_sizing", "shape-env expression",
                            _source(size_match.group("src")) if size_match else _source(src),
                            int(size_match.group("dim")) if size_match else None, expected,
                            **base)
    zero_one = _ZERO_ONE.match(body)
    if zero_one:
        return ReasonDetail("zero_one_specialization", "shape-env expression",
                            _source(zero_one.group("src")), int(zero_one.group("dim")),
                            expected=">= 2", **base)
    size_expr = _SIZE_EXPR.search(body)
    if size_expr:
        return ReasonDetail("shape_env_guard", "shape-env expression",
                            _source(size_expr.group("src")), int(size_expr.group("dim")), **base)
    equals = _EQUALS.match(body)
    if equals:
        subject = equals.group("src").strip()
        if subject.isidentifier():
            subject = _source(subject)
        kind = ("global_or_config_change" if subject.startswith("G[") or "config" in subject
                else "python_scalar_change")
        return ReasonDetail(kind, "value", subject, expected=equals.group("value").strip(),
                            **base)
    return ReasonDetail("other", "unknown", **base)


def _subject(body: str) -> str:
    """The first argument of ``___check_type_id(m, 9444...)``, as a source."""
    subject = body[body.find("(") + 1:].split(",")[0].strip()
    return _source(subject) if subject and subject.isidentifier() else subject


#: kinds a failing guard may have when a user line specialized it (refine's inputs)
_SPECIALIZABLE = ("python_scalar_change", "shape_env_guard", "static_size_change")


def refine(detail: ReasonDetail | None, role: str | None) -> ReasonDetail | None:
    """The kind once the failing guard's origin is known: a guard whose origin has the role
    ``specialized`` (a replacement to a constant made by a user line) is user_specialization;
    everything else keeps the kind its text gave."""
    if detail is None or role != "specialized" or detail.kind not in _SPECIALIZABLE:
        return detail
    from dataclasses import replace

    return replace(detail, kind="user_specialization")


def classify(reason: str | None, *, fail_type: str | None = None,
             fail_reason: str | None = None) -> ReasonDetail | None:
    """The primary (first) failing guard of a recompile; None for a first compile."""
    if is_recompile_limit(fail_type, fail_reason):
        return ReasonDetail("recompile_limit_hit", "recompile limit", text=fail_reason or "")
    lines = failure_lines(reason)
    if lines:
        return parse_line(lines[0])
    if reason:
        return ReasonDetail("other", "unknown", text=reason.strip())
    return None


#: How releases word a frame past its limit: "Dynamo recompile limit exceeded" (2.13), "hit
#: config.recompile_limit", "recompile_limit reached" and "cache_size_limit reached" (older).
_LIMIT = re.compile(r"recompile[ _]limit|cache[ _]size[ _]limit")


def is_recompile_limit(fail_type: str | None, fail_reason: str | None) -> bool:
    return bool(fail_type) and _LIMIT.search((fail_reason or "").lower()) is not None
