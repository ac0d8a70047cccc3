"""typer's help renderer (``typer.rich_utils``) imports ``rich.markdown`` and ``rich.traceback``
as it loads: markdown-it, pygments and rich's pretty printer, about a quarter of what `--help`
costs, for a Markdown help mode this app does not use and a traceback only a crash shows.

``defer()`` puts a stand-in for each of the two modules in ``sys.modules``; a stand-in loads the
real module (which then replaces it) the first time anything of it is used: a name looked up,
its class called or asked for a classmethod. So typer's help imports them for nothing, and any
code that uses them gets the real thing.
"""

from __future__ import annotations

import importlib
import sys
import types
from typing import Any

#: module -> the names typer imports from it
DEFERRED = {"rich.markdown": ("Markdown",), "rich.traceback": ("Traceback",)}


class _Stand(types.ModuleType):
    """A module that becomes the real one on first use."""

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):  # the import system's questions (__path__, __spec__, ...)
            raise AttributeError(name)
        return getattr(_real(self.__name__), name)


def _real(module: str) -> types.ModuleType:
    if isinstance(sys.modules.get(module), _Stand):
        del sys.modules[module]
    return importlib.import_module(module)


class _DeferredClass(type):
    """The class of a stand-in class: calls and attributes go to the real class."""

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        return cls._load()(*args, **kwargs)

    def __getattr__(cls, name: str) -> Any:
        if name.startswith("__"):  # typing's and the union operator's questions
            raise AttributeError(name)
        return getattr(cls._load(), name)


def _stand_in(module: str, name: str) -> type:
    def load() -> Any:
        return getattr(_real(module), name)

    return _DeferredClass(name, (), {"_load": staticmethod(load), "__module__": module})


def defer() -> None:
    """Put the stand-ins in place (where neither typer's help nor those modules are loaded)."""
    if "typer.rich_utils" in sys.modules:
        return
    for module, names in DEFERRED.items():
        if module in sys.modules:
            continue
        stand = _Stand(module)
        for name in names:
            setattr(stand, name, _stand_in(module, name))
        sys.modules[module] = stand
        parent, _, child = module.rpartition(".")
        setattr(importlib.import_module(parent), child, stand)
