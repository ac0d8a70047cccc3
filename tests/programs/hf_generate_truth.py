"""The truth for examples/hf_generate outside the tool: the same program, its forward compiled by
hand (eager backend), Dynamo's own compilation metrics printed as JSON, one line per compile."""

import json
import sys
from pathlib import Path

import torch
from torch._dynamo.utils import get_compilation_metrics

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples" / "hf_generate"))
import model  # noqa: E402

torch._dynamo.config.log_compilation_metrics = True
compiled = torch.compile(model.forward, backend="eager")
cache = sys.argv[1] if len(sys.argv) > 1 else None
for B, S in ((1, 6), (2, 6), (2, 9)):
    model.generate(compiled, B, S, cache_implementation=cache)
print(json.dumps([
    {"compile_id": str(m.compile_id), "guard_count": m.guard_count,
     "shape_env_guard_count": m.shape_env_guard_count, "fail_type": m.fail_type}
    for m in get_compilation_metrics()
]))
