"""The dataset of dataloader_workers.py, in its own module so that spawned workers import it
(and torch) themselves. Each worker compiles `square` and recompiles it on a size change."""

import torch


def square(x):
    return x * x


_compiled = None


class SquareDataset(torch.utils.data.Dataset):
    def __len__(self):
        return 4

    def __getitem__(self, index):
        global _compiled
        if _compiled is None:  # per worker process
            _compiled = torch.compile(square, backend="eager")
        # worker k of 2 gets indices k, k + 2: sizes 1 then 2, one recompile in each worker
        return _compiled(torch.ones(1 + index // 2))
