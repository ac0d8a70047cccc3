"""Frozen result records and their versioned JSON (schema_version 1). No torch.

run.py (a run: calls, compile events, cache entries), report.py (a scenario's runs, JSON in and
out), watch.py (per function and process, for watch and summarize), suggestion.py (what suggest
measured), origin.py (a user line and the records that carry one), reason_detail.py (a failing
guard), environment.py, compile_ids.py, order.py (report order), decode.py and encode.py (JSON in
and out).
"""
