"""Scenario YAML -> a frozen Scenario, checked before anything runs (no torch): keys.py (every
key, typed and documented), load.py (the validator), overrides.py (what the command line
changes), model.py (Scenario), inputs.py, budgets.py,
strategies.py (custom strategies), builtin_targets.py, context.py, yaml_lines.py."""
