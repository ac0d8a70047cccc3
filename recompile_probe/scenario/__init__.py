"""Scenario YAML -> a frozen Scenario, checked before anything runs (no torch): keys.py (every
key, typed, bounded and documented), load.py (the top-level keys), the parsers beside it
(inputs.py, sequences.py, distributed.py, backend.py, strategies.py, budgets.py), context.py
(their shared error context), overrides.py (what the command line changes), model.py (Scenario),
builtin_targets.py, yaml_lines.py."""
