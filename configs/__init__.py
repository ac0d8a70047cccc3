"""Example scenarios; shipped inside the package as recompile_probe.configs (see pyproject)."""
