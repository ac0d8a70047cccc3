"""The kinds of function the coverage tests decide, each with a factory over B.

A compare-and-sum (the seed op's shape), a reshape whose guards use floor division and modulo,
a size branch behind a graph break, two inputs whose batch dims must match, Linear + LayerNorm,
and a square input (duck sizing ties its two dims under dynamic=True).
"""

import torch

torch.manual_seed(0)


def compare_sum(logprobs, token):
    return (logprobs >= token.unsqueeze(1)).sum(1)


def reshape(x):
    return x.view(x.shape[0] // 2, 2, -1).sum(1)


def branch(x):
    y = x * 2
    torch._dynamo.graph_break()
    if y.shape[0] > 16:
        return y.sum()
    return y.mean()


def matched(a, b):
    return a + b


class Block(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.linear = torch.nn.Linear(16, 16)
        self.norm = torch.nn.LayerNorm(16)

    def forward(self, x):
        return self.norm(self.linear(x))


block = Block()


def square(x):
    return x @ x


def steps(x, n_steps):
    y = x * 2
    for i in range(n_steps):
        y = y + i
    torch._dynamo.graph_break()
    return y.softmax(-1)


def two_inputs(B):
    return torch.randn(B, 64), torch.randn(B)


def one_input(B):
    return (torch.randn(B, 8),)


def with_steps(B):
    return torch.randn(B, 8), 1 + B // 4


def steps_in_dict(x, config):
    return steps(x, config["n_steps"])


def with_steps_in_dict(B):
    return torch.randn(B, 8), {"n_steps": 1 + B // 4}


def two_same(B):
    return torch.randn(B, 8), torch.randn(B, 8)


def hidden(B):
    return (torch.randn(B, 16),)


def squares(B):
    return (torch.randn(B, B),)


def masked(x, mask):
    return (x * mask).sum(-1)


def two_symbols(B, S):
    return torch.randn(B, S), torch.ones(B, S)
