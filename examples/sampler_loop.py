"""A small serving loop: requests arrive in batches of varying size, as in an RL sampler.

    recompile-probe watch -- python examples/sampler_loop.py            # the vLLM bug
    recompile-probe watch -- python examples/sampler_loop.py --fixed    # the vLLM fix

Without --fixed the sampler op is compiled with dynamic=True and first called with one request:
the batch dim is specialized to 1 and the next batch recompiles. With --fixed both inputs are
marked unbacked right before the call (in eager code) and the op compiles once.
"""

import argparse

import torch


def count_greater_than(x: torch.Tensor, values: torch.Tensor) -> torch.Tensor:
    torch._check(x.shape[0] >= 1)
    torch._check(x.shape[0] == values.shape[0])
    return (x >= values).sum(-1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fixed", action="store_true", help="mark the batch dim unbacked")
    parser.add_argument("--steps", type=int, default=12)
    parser.add_argument("--vocab", type=int, default=1024)
    args = parser.parse_args()

    op = torch.compile(count_greater_than, backend="eager", dynamic=None if args.fixed else True)
    batches = [1, 4, 2, 8, 3, 1, 16, 5, 2, 7, 1, 9]
    ranks_seen = 0
    for step in range(args.steps):
        batch = batches[step % len(batches)]
        logprobs = torch.randn(batch, args.vocab).log_softmax(-1)
        token_logprobs = logprobs[:, :1]
        if args.fixed:
            torch._dynamo.decorators.mark_unbacked(logprobs, 0)
            torch._dynamo.decorators.mark_unbacked(token_logprobs, 0)
        ranks_seen += int(op(logprobs, token_logprobs).sum())
    print(f"served {args.steps} batches, rank sum {ranks_seen}")


if __name__ == "__main__":
    main()
