"""One (target, sequence, strategy) -> a Run (imports torch): run.py (the probe), driver.py
(the calls), eager.py (the reference and the comparison), timing.py, backend.py (counting),
entries.py (cache entries as records), summary.py (the Run and its user lines), failures.py."""
