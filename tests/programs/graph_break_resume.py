"""A graph break: Dynamo compiles `body` up to the break and a resume function
(torch_dynamo_resume_in_body_at_<line>) after it; both recompile on a size change."""

import torch


def body(x):
    y = x * 2
    torch._dynamo.graph_break()
    return y + x.sum()


if __name__ == "__main__":
    compiled = torch.compile(body, backend="eager", dynamic=False)
    for n in (1, 2):
        compiled(torch.ones(n))
    print("done")
