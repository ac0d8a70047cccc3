"""How a scenario's target is compiled: ``backend:`` and ``compile:`` (torch.compile's keyword
arguments, checked against the installed torch.compile's signature, read without importing
torch). No torch."""

from __future__ import annotations

from typing import Any

from ..errors import did_you_mean
from ..torch_compat.compile_keywords import compile_keywords
from .context import Context
from .keys import BACKEND_KEYS, BACKENDS, COMPILE_KEYS, TOP_KEYS


def parse_backend(ctx: Context, value: Any) -> dict[str, Any]:
    """``backend:``, a name or {name, mode, options}, as the Scenario's backend* fields."""
    if isinstance(value, dict):
        ctx.keys("backend", value, BACKEND_KEYS)
        if "name" not in value:
            raise ctx.fail("backend", "missing 'name' (eager, aot_eager or inductor)")
        name = value["name"]
        key = "backend.name"
    else:
        name, key = value, "backend"
    ctx.typed(key, name, BACKEND_KEYS["name"])
    if name not in BACKENDS:
        raise ctx.fail(
            key,
            f"unknown backend {name!r}",
            did_you_mean(name, BACKENDS) or f"Backends: {', '.join(BACKENDS)}.",
        )
    mode = options = None
    if isinstance(value, dict):
        mode = value.get("mode")
        if mode is not None:
            ctx.typed("backend.mode", mode, BACKEND_KEYS["mode"])
        options = value.get("options")
        if options is not None:
            ctx.typed("backend.options", options, BACKEND_KEYS["options"])
        if name != "inductor" and (mode or options):
            raise ctx.fail("backend", "mode and options apply to the inductor backend only")
    return {"backend": name, "backend_mode": mode, "backend_options": options}


def parse_compile(ctx: Context, value: Any) -> dict[str, Any]:
    """``compile:``: torch.compile keyword arguments for every strategy."""
    ctx.typed("compile", value, TOP_KEYS["compile"])
    for key in value:
        if key in ("dynamic", "backend"):
            raise ctx.fail(
                f"compile.{key}",
                f"{key!r} is set by each strategy and by `backend:`, not by `compile:`",
                "Choose strategies (e.g. dynamic_true) or define one in custom_strategies.",
            )
    extra = [str(k) for k in value if str(k) not in COMPILE_KEYS]
    accepted = compile_keywords() if extra else None
    if accepted is not None:
        # every keyword the installed torch.compile takes, but those strategies set
        known = {*COMPILE_KEYS, *(k for k in accepted if k not in ("model", "dynamic"))}
        known.discard("backend")
        ctx.keys("compile", value, tuple(sorted(known)))
    # (torch's source unreadable: torch.compile itself rejects an unknown keyword per run)
    for key in value:
        if key in COMPILE_KEYS:
            ctx.typed(f"compile.{key}", value[key], COMPILE_KEYS[key])
    return dict(value)
