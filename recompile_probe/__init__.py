"""recompile-probe: find, explain and prevent torch.compile (Dynamo) recompilations."""

__version__ = "0.1.0"
