"""Whether a declared size range is served by a run's cache entries, decided without compiling
(imports torch): inputs.py (a call rebuilt at any size, without data), guards.py (guard
evaluation), symbolic.py (the guards as conditions, decided over the whole range; z3 where
installed), stance.py (real calls under fail_on_recompile, for frames no guard covers),
decide.py (the method that holds -> records/coverage.py's Coverage), api.py (for tests:
recompile_probe.coverage() and assert_no_recompile()). Named cover/ so that
recompile_probe.coverage is the function."""
