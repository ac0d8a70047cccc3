"""User callables for the example scenarios (file.py:fn targets)."""

import torch

torch.manual_seed(0)


class TopKSampler(torch.nn.Module):
    """Hidden states -> logits -> temperature -> top-k probabilities (module state: a Linear)."""

    def __init__(self, hidden: int = 64, vocab: int = 1024, k: int = 8) -> None:
        super().__init__()
        self.proj = torch.nn.Linear(hidden, vocab)
        self.k = k

    def forward(self, hidden: torch.Tensor, temperature: torch.Tensor):
        logits = self.proj(hidden) / temperature.unsqueeze(-1)
        probs, ids = logits.softmax(dim=-1).topk(self.k, dim=-1)
        return probs, ids


sampler = TopKSampler()


def make_sampler_inputs(batch_size: int):
    return torch.randn(batch_size, 64), torch.rand(batch_size) + 0.5


def head_scores(q: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
    """Attention scores with the batch in dim 1: q, k = [heads, B, dim]."""
    return (q * k).sum(-1).softmax(dim=-1)
