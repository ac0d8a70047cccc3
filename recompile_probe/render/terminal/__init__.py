"""The `table` format: rich tables for a terminal or a log, one module per document (reports,
check, explain, suggest, functions, diff); console.py the one console set-up they share."""
