"""torch.distributed as a recorder inside a rank sees it: the rank, and the knobs that keep ranks
compiling alike."""

from __future__ import annotations

import sys
from typing import Any

import torch

#: what a torch may have against ranks compiling differently, each as (what to look up, the name
#: shown to users): compiler collectives share automatic-dynamic decisions across ranks; guard
#: collectives make every rank recompile when one does
COLLECTIVE_KNOBS = (
    ("torch._dynamo.config", "enable_compiler_collectives"),
    ("torch.compiler", "set_enable_guard_collectives"),
)


def current_rank() -> int | None:
    """This process's rank in the default process group, where one is initialized (a rank
    started by torch.multiprocessing.spawn has no RANK variable); None otherwise."""
    dist = sys.modules.get("torch.distributed")
    try:
        if dist is None or not dist.is_available() or not dist.is_initialized():
            return None
        return int(dist.get_rank())
    except Exception:  # noqa: BLE001 - a label, never worth breaking the program
        return None


def collective_knobs() -> tuple[str, ...]:
    """The knobs of COLLECTIVE_KNOBS this torch has, by their dotted names."""
    found = []
    for module, attr in COLLECTIVE_KNOBS:
        owner: Any = torch
        for part in module.split(".")[1:]:
            owner = getattr(owner, part, None)
            if owner is None:
                break
        if owner is not None and hasattr(owner, attr):
            found.append(f"{module}.{attr}")
    return tuple(found)
