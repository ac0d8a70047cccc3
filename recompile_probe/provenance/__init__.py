"""Which user line is behind a guard, a specialization, a graph break (attribution.py: the one
rule; what it finds is records/origin.py). origin.py (a compile's shape guards and their
attribution, an origin in words), locations.py and files.py (torch's printed locations, full
paths), capture.py and shape_env.py (a compile's ShapeEnv), first_use.py, graph_breaks.py,
trace.py (the same evidence from a TORCH_TRACE log)."""
