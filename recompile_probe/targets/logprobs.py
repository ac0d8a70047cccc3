"""The vLLM sampler ops the tool was born from (imports torch)."""

from __future__ import annotations

from typing import Any, Callable, Mapping  # noqa: UP035 (one line: docs quote the ops' lines)

import torch

from ..scenario.inputs import TensorSpec


def count_greater_than(x: torch.Tensor, values: torch.Tensor) -> torch.Tensor:
    return (x >= values).sum(-1)


def count_greater_than_checked(x: torch.Tensor, values: torch.Tensor) -> torch.Tensor:
    # The two checks of the vLLM fix: B >= 1 rules out the 0 specialization, and equal batch
    # symbols spare a runtime Eq(u0, u1) assert when both dims are unbacked.
    torch._check(x.shape[0] >= 1)
    torch._check(x.shape[0] == values.shape[0])
    return (x >= values).sum(-1)


def _pair(params: Mapping[str, Any]) -> tuple[TensorSpec, ...]:
    return (TensorSpec(("B", params["vocab_size"])), TensorSpec(("B", 1)))


def make_count_greater_than(params: Mapping[str, Any]) -> tuple[Callable, tuple]:
    return count_greater_than, _pair(params)


def make_count_greater_than_checked(params: Mapping[str, Any]) -> tuple[Callable, tuple]:
    return count_greater_than_checked, _pair(params)


def make_gather_logprobs(params: Mapping[str, Any]) -> tuple[Callable, tuple]:
    num_logprobs = params["num_logprobs"]
    vocab_size = params["vocab_size"]
    if num_logprobs > vocab_size:
        from ..errors import TargetError

        raise TargetError(f"num_logprobs ({num_logprobs}) cannot exceed vocab_size ({vocab_size})")

    def gather_logprobs(
        logits: torch.Tensor, token_ids: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        logprobs = logits.float().log_softmax(dim=-1)
        topk_logprobs, topk_ids = torch.topk(logprobs, num_logprobs, dim=-1)
        token_ids = token_ids.unsqueeze(-1)
        token_logprobs = logprobs.gather(-1, token_ids)
        ranks = count_greater_than(logprobs, token_logprobs)
        ids = torch.cat((token_ids, topk_ids), dim=1)
        out_logprobs = torch.cat((token_logprobs, topk_logprobs), dim=1)
        return ids, out_logprobs, ranks

    specs = (
        TensorSpec(("B", vocab_size)),
        TensorSpec(("B",), dtype="int64", fill="randint", low=0, high=vocab_size),
    )
    return gather_logprobs, specs
