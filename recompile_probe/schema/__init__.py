"""JSON Schemas (draft 2020-12; no torch): scenario.py (from the scenario's key tables),
builder.py and documents.py (the reports, from their records), catalog.py (every schema by
name). The shipped copies live in recompile_probe/schemas/ (data only)."""
