"""A tiny random-weight ViT over images of several sizes (``interpolate_pos_encoding``), as a
vision program calls it. Built from a config: nothing is downloaded.

Run as a program (``python model.py [SOURCES]``) it prints, as JSON, Dynamo's compiles of its
own run: the truth the tool's ``run`` must equal. SOURCES: what the program sets
``torch.compiler.config.unbacked_sources`` to (none: left unset)."""

import json
import sys

import torch
from transformers import ViTConfig, ViTModel

torch.manual_seed(0)
config = ViTConfig(image_size=32, patch_size=8, hidden_size=16, num_hidden_layers=1,
                   num_attention_heads=2, intermediate_size=32, num_channels=3)
model = ViTModel(config).eval()

#: the scenario's sequence: (B, H, W)
POINTS = ((1, 32, 32), (2, 48, 48), (2, 64, 64))


def make_inputs(B, H, W):
    return (), {"pixel_values": torch.randn(B, 3, H, W), "interpolate_pos_encoding": True}


if __name__ == "__main__":
    from torch._dynamo.utils import get_compilation_metrics

    torch._dynamo.config.log_compilation_metrics = True
    compiled = torch.compile(model, backend="eager")
    with torch.compiler.config.patch(unbacked_sources=sys.argv[1] if sys.argv[1:] else ""):
        for B, H, W in POINTS:
            args, kwargs = make_inputs(B, H, W)
            compiled(*args, **kwargs)
    metrics = get_compilation_metrics()
    # compile_id is "0/1" (a string in this torch), "[0/1]" in some: the frame is before the slash
    frame_0 = [m for m in metrics if str(m.compile_id).strip("[]").split("/")[0] == "0"]
    print(json.dumps({"compiles": len(metrics),
                      "failed": sum(m.fail_type is not None for m in metrics),
                      "fail_types": sorted({m.fail_type for m in metrics if m.fail_type}),
                      "frame_0": {"compiles": len(frame_0),
                                  "failed": sum(m.fail_type is not None for m in frame_0)}}))
