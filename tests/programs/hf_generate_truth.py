"""The truth for examples/hf_generate outside the tool: the same program, its forward compiled by
hand (eager backend); printed as JSON: Dynamo's own compilation metrics, one per compile, and how
many compiles each call of the forward made. argv[1]: the driver's cache_implementation ("none"
for the default), argv[2] "plain": no counter around the compiled forward."""

import json
import sys
from pathlib import Path

import torch
from torch._dynamo.utils import get_compilation_metrics

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples" / "hf_generate"))
import model  # noqa: E402

torch._dynamo.config.log_compilation_metrics = True
compiled = torch.compile(model.forward, backend="eager")
cache = sys.argv[1] if len(sys.argv) > 1 and sys.argv[1] != "none" else None
per_call = []


def counted(*args, **kwargs):
    before = len(get_compilation_metrics())
    out = compiled(*args, **kwargs)
    per_call.append(len(get_compilation_metrics()) - before)
    return out


counted.__wrapped__ = model.forward  # generate() reads the forward's signature
# "plain": the program exactly as it compiles itself (model.forward = torch.compile(...)), for
# Dynamo's metrics; otherwise behind a counter of compiles per call
per_call_mode = "plain" not in sys.argv[2:]
for B, S in ((1, 6), (2, 6), (2, 9)):
    model.generate(counted if per_call_mode else compiled, B, S, cache_implementation=cache)
print(json.dumps({"metrics": [
    {"compile_id": str(m.compile_id), "guard_count": m.guard_count,
     "shape_env_guard_count": m.shape_env_guard_count, "fail_type": m.fail_type}
    for m in get_compilation_metrics()
], "compiles_per_call": per_call}))
