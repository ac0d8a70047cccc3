"""The compile settings a process inherits: torch.compiler.config and torch._dynamo.config values
away from their defaults (set by an environment variable read at torch's import, a sitecustomize,
the target's own module), and putting them back to their defaults for `--clean-env`.

Read through torch's ConfigModule internals (``_config`` entries with their ``default``):
feature-detected, an unknown layout reads as nothing changed.
"""

from __future__ import annotations

import contextlib
import importlib
import sys
from collections.abc import Iterator, Mapping
from typing import Any

#: The config modules whose values decide what Dynamo compiles.
CONFIG_MODULES = ("torch.compiler.config", "torch._dynamo.config")

#: Names these modules hold that are not compile behaviour (bookkeeping the tool or torch's own
#: test harness changes; reporting them would only be noise).
_NOT_BEHAVIOUR = frozenset({"log_compilation_metrics"})


def _entries(module: Any) -> Mapping[str, Any]:
    entries = getattr(module, "_config", None)
    return entries if isinstance(entries, Mapping) else {}


def changed_config() -> dict[str, str]:
    """``"torch.compiler.config.static_sources" -> "'.*:0'"`` for every value not at its default
    now (outside any run: the tool's own patches are all inside runs). {} before torch is
    imported: its configs hold nothing yet (the variables are read at import)."""
    out: dict[str, str] = {}
    if "torch" not in sys.modules:
        return out
    for dotted in CONFIG_MODULES:
        try:
            module = importlib.import_module(dotted)
        except ImportError:
            continue
        for name, entry in _entries(module).items():
            if name in _NOT_BEHAVIOUR or getattr(entry, "alias", None) is not None:
                continue  # an alias reads another entry: that one is reported
            if getattr(entry, "deprecated", False):
                continue  # does nothing (and warns when read)
            if not hasattr(entry, "default"):
                continue
            try:
                value = getattr(module, name)
            except Exception:  # noqa: BLE001 - a config that cannot be read is not reported
                continue
            if not _same(value, entry.default):
                out[f"{dotted}.{name}"] = repr(value)
    return out


def _same(a: Any, b: Any) -> bool:
    try:
        return bool(a == b)
    except Exception:  # noqa: BLE001 - values that do not compare are told apart by identity
        return a is b


@contextlib.contextmanager
def defaults_restored(names: Mapping[str, str] | None = None) -> Iterator[None]:
    """Every changed config (or those in ``names``) back at its default for the block, then as
    it was: a run without inherited compile settings."""
    changed = changed_config() if names is None else dict(names)
    with contextlib.ExitStack() as stack:
        for dotted in changed:
            module_name, _, attr = dotted.rpartition(".")
            try:
                module = importlib.import_module(module_name)
            except ImportError:
                continue
            entry = _entries(module).get(attr)
            patch = getattr(module, "patch", None)
            if entry is None or not callable(patch):
                continue
            stack.enter_context(patch(attr, entry.default))
        yield


def value_of(dotted: str) -> Any:
    """A config's value now; None when this torch has no such config."""
    module_name, _, attr = dotted.rpartition(".")
    try:
        return getattr(importlib.import_module(module_name), attr, None)
    except ImportError:
        return None


def static_matches(value: str, sources: list[tuple[str, int]]) -> list[tuple[str, int]]:
    """The (source, dim) pairs a static_sources value holds static, matched as torch 2.15 does
    (torch/_dynamo/variables/builder.py): an entry is ``NAME`` or ``NAME:DIM``, ``NAME`` equal
    to the source or a regex matching its start."""
    import re

    entries: list[tuple[str, int | None]] = []
    for part in filter(None, value.replace(" ", "").split(",")):
        name, _, dim = part.rpartition(":")
        entries.append((name, int(dim)) if name and dim.isdigit() else (part, None))

    def hit(pattern: str, source: str) -> bool:
        if pattern == source:
            return True
        try:
            return re.match(pattern, source) is not None
        except re.error:
            return False

    return [
        (source, dim)
        for source, dim in sources
        if any(hit(p, source) and (d is None or d == dim) for p, d in entries)
    ]
