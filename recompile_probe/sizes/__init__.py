"""Size symbols, points, sequences and argument paths (no torch): points.py, paths.py."""
