"""An ordinary recompile, meant to run with TORCH_LOGS=recompiles_verbose set by the user: Dynamo
then logs every failing guard of every cache entry, and only to the verbose artifact."""

import torch


def mix(x, y):
    return x * y + 1


if __name__ == "__main__":
    compiled = torch.compile(mix, backend="eager", dynamic=False)
    for n in (1, 2, 3):  # both tensors change size: two failing guards per cache entry
        compiled(torch.ones(n), torch.ones(n))
    print("done")
