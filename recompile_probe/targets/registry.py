"""Built-in targets as data: names, parameters and inputs, without importing torch."""

from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Mapping


@dataclass(frozen=True)
class BuiltinTarget:
    name: str
    description: str
    #: parameter -> default; a scenario's `params:` overrides them
    params: Mapping[str, Any] = field(default_factory=dict)
    #: function in recompile_probe.targets.logprobs: make(params) -> (callable, input specs)
    maker: str = ""


BUILTIN_TARGETS: Mapping[str, BuiltinTarget] = MappingProxyType({t.name: t for t in (
    BuiltinTarget(
        "logprobs.count_greater_than",
        "vLLM's batched_count_greater_than before the fix: (x >= values).sum(-1), "
        "x=[B, vocab_size], values=[B, 1].",
        {"vocab_size": 4096},
        "make_count_greater_than",
    ),
    BuiltinTarget(
        "logprobs.count_greater_than_checked",
        "The same op after the fix: torch._check(B >= 1) and torch._check(x B == values B), "
        "so the two batch symbols unify.",
        {"vocab_size": 4096},
        "make_count_greater_than_checked",
    ),
    BuiltinTarget(
        "logprobs.gather_logprobs",
        "The sampler pipeline: log_softmax -> topk -> gather of the sampled token -> rank via "
        "count_greater_than -> cat. logits=[B, vocab_size], token_ids=[B].",
        {"vocab_size": 4096, "num_logprobs": 5},
        "make_gather_logprobs",
    ),
)})
