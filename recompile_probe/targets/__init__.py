"""Targets: the built-in logprobs ops and the loader for user callables."""
