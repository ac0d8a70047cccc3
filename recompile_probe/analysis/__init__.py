"""Pure functions over result records (no torch): verdicts.py, sequence.py (how a sequence
reads), functions.py (per compiled function), diffs.py (guard diffs), fixes.py (measured fixes),
notes.py (cost notes), explain.py, budgets.py (a run judged), baseline.py, check.py (check's
verdict)."""
