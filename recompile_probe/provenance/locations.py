"""User locations as torch prints them, parsed. No torch.

Dynamo names a user line in an SLoc (``"<code>  # <path>:<line> in <fn>"``), in a guard's
trailing comment (``x.size()[0] == 3  # y = x * 2  # f.py:9 in step``) and in the names of a
graph break's resume functions (``torch_dynamo_resume_in_<fn>_at_<line>``). Paths are torch's
shortened ones: files.py recovers the full path.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..reasons.text import resumed_from

# "<code>  # <path>:<line> in <fn>" (format_frame(line=True)) or "<path>:<line> in <fn>"; the code
# may hold "  # " itself (a comment on the user's line), so it is matched greedily.
_USER_LOC = re.compile(
    r"^(?:(?P<code>.*)  # )?(?P<path>[^\s#][^#]*?):(?P<line>\d+) "
    r"in (?P<fn>\S+)$",
    re.S,
)
# a location inside a longer comment (paths without spaces only: otherwise no origin)
_LOC_IN_TEXT = re.compile(r"(?:^|  # )(?P<path>[^\s#()]+):(?P<line>\d+) in (?P<fn>[^\s()]+)")


def user_function_name(co_name: str) -> str:
    """``torch_dynamo_resume_in_f_at_10`` -> ``f`` (nested resumes unwrapped); others unchanged."""
    name = co_name
    while True:
        parent = resumed_from(name)
        if parent is None:
            return name
        name = parent


@dataclass(frozen=True)
class UserLoc:
    """A user location as torch printed it (path possibly shortened)."""

    path: str
    line: int
    function: str
    code: str | None


def parse_user_loc(text: str | None) -> UserLoc | None:
    """``"if x.shape[0] > 4:  # mp/exp.py:9 in f"`` (an SLoc's maybe_user_loc) -> its parts."""
    if not text:
        return None
    match = _USER_LOC.match(text.strip())
    if match is None:
        return None
    code = match.group("code")
    return UserLoc(
        match.group("path"),
        int(match.group("line")),
        match.group("fn"),
        code.strip() if code is not None and code.strip() else None,
    )


def split_guard_text(text: str) -> tuple[str, str]:
    """A verbose guard part -> (guard code, comment); the comment is '' when there is none."""
    code, _, comment = text.partition("  # ")
    return code.strip(), comment.strip()


def locs_in_comment(comment: str) -> list[UserLoc]:
    """Every user location in a guard's comment, for guards with no ShapeEnv to match against.

    A location is ``path:line in fn`` after ``  # `` (or at the start); the code is the text
    between the previous ``  # `` and it. Paths holding spaces or parentheses are not matched
    (no origin rather than a wrong one).
    """
    out: list[UserLoc] = []
    start = 0
    for match in _LOC_IN_TEXT.finditer(comment):
        before = comment[start : match.start()]
        before = before.split(") and ")[-1]  # a range guard: "<lo sloc>) and <hi code>"
        # Not split on "  # ": the user's own line may end in a comment, and the whole line is
        # the code (the location's own "  # " is part of the match).
        code = before.strip() if before.strip() else None
        if code is not None and code.startswith("("):
            code = None
        out.append(UserLoc(match.group("path"), int(match.group("line")), match.group("fn"), code))
        start = match.end()
    return out
