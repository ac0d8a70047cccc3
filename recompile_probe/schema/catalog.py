"""Every JSON Schema by name, as `recompile-probe schema NAME` and the shipped files
(recompile_probe/schemas/*.schema.json, written by ``python -m recompile_probe.schema``) name
them; a test keeps the shipped copies equal to these. No torch."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from .documents import (
    check_bundle_schema,
    explain_schema,
    report_schema,
    suggest_schema,
    watch_schema,
)
from .scenario import scenario_schema

SCHEMAS: dict[str, Callable[[], dict[str, Any]]] = {
    "scenario": scenario_schema,
    "report": report_schema,
    "check": check_bundle_schema,
    "watch": watch_schema,
    "explain": explain_schema,
    "suggest": suggest_schema,
}


def dumps(schema: Mapping[str, Any]) -> str:
    return json.dumps(schema, indent=2, ensure_ascii=False) + "\n"


def shipped_path(name: str) -> Path:
    """The copy shipped in the package (what an editor's modeline can point at)."""
    return Path(__file__).resolve().parent.parent / "schemas" / f"{name}.schema.json"


def write_all(folder: Path | None = None) -> list[Path]:
    written = []
    for name, build in SCHEMAS.items():
        path = (folder / f"{name}.schema.json") if folder else shipped_path(name)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(dumps(build()), encoding="utf-8")
        written.append(path)
    return written
