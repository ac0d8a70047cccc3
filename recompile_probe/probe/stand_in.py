"""The callable a driver receives in place of the target: our wrapper, dressed as the target.

Programs look at the function they are handed: transformers' ``generate()`` reads
``inspect.signature(model.forward)`` to decide which keyword arguments it passes
(``logits_to_keep``, ``position_ids``, ...). A bare ``fn(*args, **kwargs)`` would make the
program call the target with other arguments than it does with ``torch.compile(model.forward)``
(which keeps the signature), and compile other graphs with other guards.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

F = TypeVar("F", bound=Callable[..., Any])


def dressed_as(wrapper: F, target: Callable[..., Any]) -> F:
    """``wrapper`` with the target's name, docs and signature (``__wrapped__``)."""
    try:
        functools.update_wrapper(wrapper, target)
    except (AttributeError, TypeError):  # a callable object without a name: signature only
        wrapper.__wrapped__ = target  # type: ignore[attr-defined]
    return wrapper
