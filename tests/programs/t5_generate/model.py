"""A tiny T5 translating, as a program calls it: transformers' `generate()` with greedy decoding
on an encoder-decoder, the model's forward compiled. Built from a config with random weights (one
layer each side, d_model 16): nothing is downloaded. Needs `transformers`.

`generate(fn, B, S)` is the scenario's driver: `fn` is `model.forward` compiled under a strategy.
generate() runs the encoder itself (eagerly), then calls forward once per new token with the
`decoder_input_ids` it builds (its start token, then one token per step) and the cache it keeps:
the program never holds those tensors. Run as a program (``python model.py``) it compiles the
forward itself and calls generate() at the scenario's points: with ``TORCH_LOGS=recompiles``,
Dynamo's own log of the plain program; with ``--count`` a JSON line of what Dynamo compiled
(a counting backend's frames and the compilation metrics grouped by frame)."""

import json
import sys

import torch
from transformers import T5Config, T5ForConditionalGeneration

torch.manual_seed(0)
config = T5Config(vocab_size=64, d_model=16, d_kv=8, d_ff=32, num_layers=1, num_decoder_layers=1,
                  num_heads=2, decoder_start_token_id=0, pad_token_id=0, eos_token_id=None)
model = T5ForConditionalGeneration(config).eval()
forward = model.forward

POINTS = ((1, 6), (2, 6), (2, 9))


def generate(fn, B, S):
    model.forward = fn
    try:
        ids = torch.randint(1, config.vocab_size, (B, S))
        with torch.no_grad():
            return model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=3,
                                  do_sample=False)
    finally:
        model.forward = forward


if __name__ == "__main__":
    from torch._dynamo.testing import CompileCounterWithBackend
    from torch._dynamo.utils import get_compilation_metrics

    counter = CompileCounterWithBackend("eager")
    compiled = torch.compile(forward, backend=counter)
    for B, S in POINTS:
        generate(compiled, B, S)
    if "--count" in sys.argv:
        metrics = list(get_compilation_metrics())
        frames = {str(m.compile_id).split("/")[0] for m in metrics}
        print(json.dumps({"frames": counter.frame_count, "compiles": len(metrics),
                          "failed": sum(m.fail_type is not None for m in metrics),
                          "frame_ids": sorted(frames)}))
