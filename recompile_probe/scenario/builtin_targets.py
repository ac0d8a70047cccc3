"""Built-in targets as data: names, parameters and what builds them, without importing torch.

The ops themselves are in targets/logprobs.py (``maker`` names the function there)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any


@dataclass(frozen=True)
class BuiltinTarget:
    name: str
    description: str
    #: parameter -> default; a scenario's `params:` overrides them
    params: Mapping[str, Any] = field(default_factory=dict)
    #: function in recompile_probe.targets.logprobs: make(params) -> (callable, input specs)
    maker: str = ""
    #: the op already carries the torch._check lines of the vLLM fix: with it, mark_unbacked's
    #: checks are part of what ran (measured), not advice
    has_checks: bool = False

    def param_schema(self, name: str) -> dict[str, Any]:
        """A parameter's JSON Schema, typed by its default (as the validator checks it)."""
        default = self.params[name]
        if isinstance(default, bool):
            return {"type": "boolean", "default": default}
        if isinstance(default, int):
            return {"type": "integer", "minimum": 1, "default": default}
        if isinstance(default, float):
            return {"type": "number", "default": default}
        if isinstance(default, str):
            return {"type": "string", "default": default}
        return {"default": default}


BUILTIN_TARGETS: Mapping[str, BuiltinTarget] = MappingProxyType(
    {
        t.name: t
        for t in (
            BuiltinTarget(
                "logprobs.count_greater_than",
                "vLLM's batched_count_greater_than before the fix: (x >= values).sum(-1), "
                "x=[B, vocab_size], values=[B, 1].",
                {"vocab_size": 4096},
                "make_count_greater_than",
            ),
            BuiltinTarget(
                "logprobs.count_greater_than_checked",
                "The same op after the fix: torch._check(B >= 1) and torch._check(x B == values "
                "B), "
                "so the two batch symbols unify.",
                {"vocab_size": 4096},
                "make_count_greater_than_checked",
                has_checks=True,
            ),
            BuiltinTarget(
                "logprobs.gather_logprobs",
                "The sampler pipeline: log_softmax -> topk -> gather of the sampled token -> rank "
                "via "
                "count_greater_than -> cat. logits=[B, vocab_size], token_ids=[B].",
                {"vocab_size": 4096, "num_logprobs": 5},
                "make_gather_logprobs",
            ),
        )
    }
)
