"""kwargs_model.py with a real Hugging Face model: a tiny Llama built from a config (one layer,
hidden size 16: nothing is downloaded), called as generation code calls it, with keyword tensors,
batch 1 then 2. Needs `transformers`; the test skips it where that is not installed."""

import torch
from transformers import LlamaConfig, LlamaForCausalLM

if __name__ == "__main__":
    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=64, hidden_size=16, intermediate_size=32,
                         num_hidden_layers=1, num_attention_heads=2, num_key_value_heads=2,
                         max_position_embeddings=32)
    model = LlamaForCausalLM(config).eval()
    compiled = torch.compile(model, backend="eager")
    with torch.no_grad():
        for batch in (1, 2):
            compiled(input_ids=torch.zeros(batch, 5, dtype=torch.long),
                     attention_mask=torch.ones(batch, 5, dtype=torch.long), use_cache=False)
    print("done")
