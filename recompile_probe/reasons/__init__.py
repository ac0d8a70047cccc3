"""Recompile reasons (no torch): text.py (how Dynamo writes a failing guard), parse.py (text ->
structured detail and kind), kinds.py (every kind, with what to do about it), causes.py (every
failing guard of a recompile grouped by what changed)."""
