"""static_cache_model.py with a real Hugging Face model: a tiny Llama built from a config (one
layer, hidden size 16: nothing is downloaded), its forward compiled as transformers' docs show,
generating with a static cache at batch 1, then batch 2, then a longer prompt. Needs
`transformers`; the test skips it where that is not installed."""

import torch
from transformers import LlamaConfig, LlamaForCausalLM

if __name__ == "__main__":
    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=64, hidden_size=16, intermediate_size=32,
                         num_hidden_layers=1, num_attention_heads=2, num_key_value_heads=2,
                         max_position_embeddings=64)
    model = LlamaForCausalLM(config).eval()
    model.forward = torch.compile(model.forward, backend="eager")
    with torch.no_grad():
        for batch, prompt in ((1, 5), (2, 5), (1, 20)):
            ids = torch.ones(batch, prompt, dtype=torch.long)
            model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=3,
                           do_sample=False, cache_implementation="static", pad_token_id=0)
    print("done")
