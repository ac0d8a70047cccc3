"""A tiny attention block with a KV cache, driven through prefill and decode. Torch only, no
downloads: the weights are random, made the same way in every process.

Three ways to use it:

- ``prefill_decode.yaml``: the block alone, one call per point (``make_inputs``): B requests,
  S new tokens per request, P tokens already in the cache.
- ``prefill_decode_generate.yaml``: the block driven by a tiny generate loop (``generate``): per
  point, one prefill call with the prompt, then decode calls of one token each, a growing cache.
- as a program, with the same strategies applied by hand, e.g. to compare with ``watch``::

      recompile-probe watch -- python configs/prefill_decode.py --strategy mark_unbacked
"""

from __future__ import annotations

import argparse

import torch
from torch import nn

DIM, HEADS = 32, 4
HEAD_DIM = DIM // HEADS
DECODE_STEPS = 3


class Block(nn.Module):
    """Causal self-attention over new tokens plus a cache of past keys and values."""

    def __init__(self) -> None:
        super().__init__()
        self.qkv = nn.Linear(DIM, 3 * DIM)
        self.out = nn.Linear(DIM, DIM)

    def forward(self, x: torch.Tensor, past_k: torch.Tensor, past_v: torch.Tensor):
        """x: [B, S, DIM] new tokens; past_k, past_v: [B, HEADS, P, HEAD_DIM] (P may be 0).
        Returns the new hidden states [B, S, DIM] and the cache with the new tokens appended."""
        b, s, _ = x.shape
        q, k, v = self.qkv(x).view(b, s, 3, HEADS, HEAD_DIM).permute(2, 0, 3, 1, 4).unbind(0)
        k = torch.cat([past_k, k], dim=2)
        v = torch.cat([past_v, v], dim=2)
        # query i sits at position P + i and sees keys 0 .. P + i
        rows = torch.arange(s, device=x.device)[:, None] + past_k.shape[2]
        cols = torch.arange(k.shape[2], device=x.device)[None, :]
        scores = (q @ k.transpose(-1, -2)) * HEAD_DIM ** -0.5
        scores = scores.masked_fill(cols > rows, float("-inf"))
        y = (scores.softmax(-1) @ v).transpose(1, 2).reshape(b, s, DIM)
        return self.out(y), k, v


with torch.random.fork_rng():  # deterministic weights without touching the caller's RNG
    torch.manual_seed(0)
    block = Block().eval()


def empty_cache(batch: int) -> tuple[torch.Tensor, torch.Tensor]:
    return torch.zeros(batch, HEADS, 0, HEAD_DIM), torch.zeros(batch, HEADS, 0, HEAD_DIM)


def make_inputs(B: int, S: int, P: int) -> dict:
    """One call of the block: S new tokens for each of B requests, P tokens already cached."""
    gen = torch.Generator().manual_seed(B * 1_000_003 + S * 1009 + P)
    return {"x": torch.randn(B, S, DIM, generator=gen),
            "past_k": torch.randn(B, HEADS, P, HEAD_DIM, generator=gen),
            "past_v": torch.randn(B, HEADS, P, HEAD_DIM, generator=gen)}


@torch.no_grad()
def generate(fn, B: int, S: int, steps: int = DECODE_STEPS) -> torch.Tensor:
    """A tiny generate loop: ``fn`` is the block's forward (compiled, or the block itself).

    Prefill: the B prompts of S tokens, empty cache. Then ``steps`` decode calls: one token per
    request (S = 1), the cache one longer each time. Returns the decoded hidden states.
    """
    gen = torch.Generator().manual_seed(B * 1_000_003 + S)
    prompt = torch.randn(B, S, DIM, generator=gen)
    hidden, past_k, past_v = fn(prompt, *empty_cache(B))
    token, outputs = hidden[:, -1:].tanh(), []
    for _ in range(steps):
        hidden, past_k, past_v = fn(token, past_k, past_v)
        token = hidden.tanh()  # stands in for "embed the sampled token"
        outputs.append(hidden)
    return torch.cat(outputs, dim=1)


# --- the same program on its own, strategies applied by hand -------------------------------------

#: which dims of each argument the strategies mark: the batch axis and the sequence axis
#: (the new tokens of x, the cached positions of past_k and past_v)
AXES = {"x": (0, 1), "past_k": (0, 2), "past_v": (0, 2)}
MARKS = {"mark_dynamic": "mark_dynamic", "mark_unbacked": "mark_unbacked"}


def _points(text: str) -> list[dict[str, int]]:
    return [{k.strip(): int(v) for k, v in (kv.split("=") for kv in part.split(","))}
            for part in text.split(";") if part.strip()]


def main() -> None:
    parser = argparse.ArgumentParser(description="prefill + decode through a compiled block")
    parser.add_argument("--strategy", default="default",
                        choices=["default", "dynamic_true", "mark_dynamic", "mark_unbacked",
                                 "unbacked_sources"])
    parser.add_argument("--backend", default="eager")
    parser.add_argument("--points", default="B=1,S=7; B=2,S=7; B=2,S=33",
                        help='points, e.g. "B=1,S=7; B=2,S=33"')
    args = parser.parse_args()

    compiled = torch.compile(block, backend=args.backend,
                             dynamic=True if args.strategy == "dynamic_true" else None)
    mark = None
    if args.strategy == "mark_dynamic":
        mark = torch._dynamo.mark_dynamic
    elif args.strategy == "mark_unbacked":
        mark = torch._dynamo.decorators.mark_unbacked

    def forward(x, past_k, past_v):
        if mark is not None:  # in eager code, right before each call
            for name, t in (("x", x), ("past_k", past_k), ("past_v", past_v)):
                for dim in AXES[name]:
                    mark(t, dim)
        return compiled(x, past_k, past_v)

    sources = ",".join(f"L['{name}']:{dim}" for name, dims in AXES.items() for dim in dims)
    config = (torch.compiler.config.patch(unbacked_sources=sources)
              if args.strategy == "unbacked_sources" else torch.compiler.config.patch({}))
    with config:
        for point in _points(args.points):
            out = generate(forward, **point)
            print(f"{point}: decoded {tuple(out.shape)}")


if __name__ == "__main__":
    main()
