"""Which keyword arguments the installed ``torch.compile`` takes: the one reader. Imports no
torch, so that a scenario's ``compile:`` keys can be checked on the ``--help``-fast paths.

Releases differ (``recompile_limit=`` and ``isolate_recompiles=`` from 2.13, ``shapes_spec=``
on 2.13 renamed ``dynamic_shapes=`` on 2.14); a strategy or scenario that names a keyword this
torch lacks is reported as unsupported instead of failing inside ``torch.compile``.
"""

from __future__ import annotations

import sys
from typing import Any

_CACHE: dict[str, frozenset[str] | None] = {}


def compile_keywords() -> frozenset[str] | None:
    """The parameters of ``torch.compile``: its signature where torch is imported already, else
    read from torch's own source (``def compile`` in torch/__init__.py, its overloads included)
    without importing it; None when neither can be read."""
    torch = sys.modules.get("torch")
    fn: Any = getattr(torch, "compile", None)
    if fn is not None:
        import inspect

        try:
            return frozenset(inspect.signature(fn).parameters)
        except (TypeError, ValueError):
            pass
    if "source" not in _CACHE:
        _CACHE["source"] = _from_source()
    return _CACHE["source"]


def compile_accepts(name: str) -> bool:
    """Whether ``torch.compile`` takes ``name=``; False where its keywords cannot be read."""
    return name in (compile_keywords() or ())


#: the keyword that takes a ShapesSpec, newest first (2.14 renamed 2.13's shapes_spec=)
SPEC_KEYWORDS = ("dynamic_shapes", "shapes_spec")


def spec_keyword() -> str | None:
    """The torch.compile keyword that takes a ShapesSpec here; None where there is none."""
    have = compile_keywords() or frozenset()
    return next((k for k in SPEC_KEYWORDS if k in have), None)


def _from_source() -> frozenset[str] | None:
    import ast
    import importlib.util

    try:
        spec = importlib.util.find_spec("torch")  # finds the package without importing it
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.origin:
        return None
    try:
        with open(spec.origin, encoding="utf-8") as f:
            tree = ast.parse(f.read())
    except (OSError, SyntaxError, ValueError):
        return None
    found: set[str] = set()
    for node in tree.body:  # the @overload stubs and the definition: their union
        if isinstance(node, ast.FunctionDef) and node.name == "compile":
            a = node.args
            found.update(x.arg for x in [*a.posonlyargs, *a.args, *a.kwonlyargs])
    return frozenset(found) or None
