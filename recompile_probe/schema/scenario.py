"""The JSON Schema of a scenario file, assembled from the validator's own key tables
(scenario/keys.py): each key's description and type, the shapes they refer to, the rules across
keys. Whether a file or a callable exists, a symbol is used in a shape or a budget names a
sequence of the file is for the validator alone. No torch."""

from __future__ import annotations

from typing import Any

from .builder import DIALECT, field_docs


def scenario_schema() -> dict[str, Any]:
    from ..records.run import Run
    from ..scenario import keys

    run_docs = field_docs(Run)
    defs = keys.defs()
    budgets = defs["budgets"]["properties"]  # sequence_budgets shares these properties
    for key, field in [*keys.MAX_KEYS.items(), *((k, k) for k in keys.EXACT_KEYS)]:
        prop = budgets[key]
        prop["description"] = f"{prop['description']} {field}: {run_docs.get(field, '')}".strip()
    return {
        "$schema": DIALECT,
        "title": "recompile-probe scenario",
        "description": "A scenario file of recompile-probe: a target, the sizes it is called "
        "with, and the strategies to compare (docs/scenarios.md).",
        "type": "object",
        "properties": {
            name: {"description": key.help, **key.schema} for name, key in keys.TOP_KEYS.items()
        },
        "required": ["target", "sequences"],
        "additionalProperties": False,
        "allOf": [dict(rule) for rule in keys.RULES],
        "$defs": defs,
    }
