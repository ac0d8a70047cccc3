"""A tiny Llama generating text, as a program calls it: transformers' `generate()` with greedy
decoding, the model's forward compiled the way transformers' docs show. Built from a config with
random weights (one layer, hidden size 16): nothing is downloaded. Needs `transformers`.

`generate(fn, B, S)` is the scenario's driver: `fn` is `model.forward` compiled under a strategy;
it runs B prompts of S tokens and 3 new tokens each (one prefill call, then decode calls)."""

import torch
from transformers import LlamaConfig, LlamaForCausalLM, StaticCache

torch.manual_seed(0)
config = LlamaConfig(vocab_size=64, hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                     num_attention_heads=2, num_key_value_heads=2, max_position_embeddings=64,
                     eos_token_id=None)  # no early stop: every point makes the same calls
model = LlamaForCausalLM(config).eval()
forward = model.forward  # the target: what `model.forward = torch.compile(model.forward)` compiles


def generate(fn, B, S, cache_implementation=None):
    """`cache_implementation="static"`: a static cache preallocated to the longest sequence the
    server allows, built here so that every call starts from the same state (generate() would
    otherwise size it from the longest of its earlier calls, kept on the model)."""
    model.forward = fn
    try:
        ids = torch.randint(1, config.vocab_size, (B, S))
        static = cache_implementation == "static"
        cache = StaticCache(config=config, max_cache_len=32) if static else None
        with torch.no_grad():
            return model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=3,
                                  do_sample=False, pad_token_id=0, cache=cache)
    finally:
        model.forward = forward


if __name__ == "__main__":  # the plain program, outside the tool
    compiled = torch.compile(forward, backend="eager")
    for B, S in ((1, 6), (2, 6), (2, 9)):
        print(generate(compiled, B, S).shape)
