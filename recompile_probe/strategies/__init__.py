"""Specialization strategies: model.py (a strategy as data), builtins.py (the presets),
apply.py (applying one to a run; torch), advice.py (the code, environment and YAML one stands
for). A scenario's custom strategies are parsed in scenario/strategies.py."""
