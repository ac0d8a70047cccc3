"""The callable behind a scenario (imports torch): loader.py (a target and its argument factory
or driver), inputs.py (deterministic tensors per point), logprobs.py (the built-in ops)."""
