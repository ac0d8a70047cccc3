"""The environment a report was made in: torch, Python, platform, and the compile settings in
force. No torch import."""

from __future__ import annotations

import os
import platform
import sys
from collections.abc import Mapping
from importlib import metadata

from .report import Environment

#: Prefixes of the environment variables torch reads for compile behaviour, and whole names.
COMPILE_PREFIXES = ("TORCH_COMPILE_", "TORCHDYNAMO_", "TORCH_DYNAMO_")
COMPILE_NAMES = ("TORCH_LOGS",)

#: Set by `--clean-env` for the session (workers inherit it): each run then also puts every
#: changed torch.compiler / torch._dynamo config back at its default.
CLEAN_ENV = "RECOMPILE_PROBE_CLEAN_ENV"


def compile_variables(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The compile-relevant environment variables set, in name order."""
    env = os.environ if environ is None else environ
    return {
        k: env[k]
        for k in sorted(env)
        if k != CLEAN_ENV and (k.startswith(COMPILE_PREFIXES) or k in COMPILE_NAMES)
    }


def current(
    *,
    torch: str | None = None,
    python: str | None = None,
    config: Mapping[str, str] | None = None,
    worker_start: str | None = None,
) -> Environment:
    """This process's environment; ``torch`` and ``python`` as another process reported them
    (a watched program may run another interpreter than the tool's); ``config``: the changed
    torch configs where the caller could read them (torch_compat.settings.changed_config);
    ``worker_start``: how this worker process started (Environment.worker_start)."""
    if torch is None and "torch" in sys.modules:  # the imported build is the truth (a source build)
        torch = getattr(sys.modules["torch"], "__version__", None)
    if torch is None:
        try:
            torch = metadata.version("torch")
        except metadata.PackageNotFoundError:
            torch = None
    settings = {**compile_variables(), **(config or {})}
    return Environment(
        torch,
        python or platform.python_version(),
        platform.platform(),
        settings,
        worker_start=worker_start,
    )


def cleaned(env: Environment, inherited: Mapping[str, str]) -> Environment:
    """The environment of a `--clean-env` session: nothing inherited in force, what was kept
    out listed in ``cleared_settings``."""
    return Environment(
        env.torch,
        env.python,
        env.platform,
        {},
        {**inherited, **env.compile_settings, **env.cleared_settings},
        env.worker_start,
    )
