"""A strategy's failure as a finding: the root cause where Dynamo wraps one."""

from __future__ import annotations

from ..reasons.kinds import INTERNAL, INTERNAL_WORDS
from ..reasons.parse import is_internal_error
from ..records.run import RunError


def first_line(exc: BaseException | str) -> str:
    text = str(exc)
    return next(
        (ln.strip() for ln in text.splitlines() if ln.strip()),
        type(exc).__name__ if isinstance(exc, BaseException) else "",
    )


def describe_error(exc: BaseException, call_index: int | None) -> RunError:
    """The root cause where Dynamo wraps one (UserError around GuardOnDataDependentSymNode, ...)."""
    root = exc
    seen = {id(exc)}
    # Dynamo's wrappers (UserError, Unsupported, BackendCompilerFailed, ...) raise while handling
    # the real error, so it may sit in __context__ rather than __cause__.
    while type(root).__module__.startswith("torch._dynamo"):
        inner = root.__cause__ or root.__context__
        if inner is None or id(inner) in seen:
            break
        root = inner
        seen.add(id(root))
    message = first_line(root) or first_line(exc)
    # Some messages put the substance in a bullet under a generic first line
    # (ConstraintViolationError: "Constraints violated (...)!" then "- You marked ...").
    bullet = next(
        (ln.strip()[2:] for ln in str(root).splitlines() if ln.strip().startswith("- ")), None
    )
    if bullet:
        message = f"{message} {bullet}"
    if is_internal_error(message) or is_internal_error(str(root)):
        # torch's own assertion: say so wherever the message is shown
        return RunError(type(root).__name__, f"{INTERNAL_WORDS}: {message}", call_index, INTERNAL)
    return RunError(type(root).__name__, message, call_index)
