"""A tiny Qwen2 generating text, as a program calls it: transformers' `generate()` with greedy
decoding, the model's forward compiled. Built from a config with random weights (one layer,
hidden size 16): nothing is downloaded. Needs `transformers`.

`generate(fn, B, S)` is the scenario's driver: `fn` is `model.forward` compiled under a strategy;
it runs B prompts of S tokens and 3 new tokens each (one prefill call, then decode calls).
Run as a program (``python model.py``) it compiles the forward itself and calls generate() at
the scenario's points: with ``TORCH_LOGS=recompiles``, Dynamo's own log of the plain program."""

import torch
from transformers import Qwen2Config, Qwen2ForCausalLM

torch.manual_seed(0)
config = Qwen2Config(vocab_size=64, hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                     num_attention_heads=2, num_key_value_heads=2, max_position_embeddings=64,
                     eos_token_id=None)  # no early stop: every point makes the same calls
model = Qwen2ForCausalLM(config).eval()
forward = model.forward

POINTS = ((1, 6), (2, 6), (2, 9))


def generate(fn, B, S):
    model.forward = fn
    try:
        ids = torch.randint(1, config.vocab_size, (B, S))
        with torch.no_grad():
            return model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=3,
                                  do_sample=False, pad_token_id=0)
    finally:
        model.forward = forward


if __name__ == "__main__":
    compiled = torch.compile(forward, backend="eager")
    for B, S in POINTS:
        generate(compiled, B, S)
