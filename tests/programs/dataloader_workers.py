"""A DataLoader with 2 workers that import torch and compile in __getitem__, while the parent
compiles (and recompiles) its own function. Only the parent's figures are checked."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402
from square_dataset import SquareDataset  # noqa: E402


def total(x):
    return x.sum() * 2


if __name__ == "__main__":
    start_method = sys.argv[1] if len(sys.argv) > 1 else "spawn"
    loader = torch.utils.data.DataLoader(SquareDataset(), batch_size=None, num_workers=2,
                                         multiprocessing_context=start_method)
    compiled = torch.compile(total, backend="eager")
    results = [float(compiled(sample)) for sample in loader]  # sizes 1, 1, 2, 2: one recompile
    print("parent pid", os.getpid(), "results", results)
