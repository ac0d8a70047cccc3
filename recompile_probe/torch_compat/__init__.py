"""Every private torch read and release quirk, feature-detected: a missing API means n/a, never a
crash. metrics.py, logs.py, stance.py, cache.py (entries, guard trees), dynamo.py (reset, caches,
backends, the compile in progress), knobs.py, files.py (torch's paths; imports no torch)."""
