"""A tiny Hugging Face-style decoder with a static cache, written in torch (nothing to install or
download), called the way generation code calls it: keyword tensors only, a forward wrapped by a
functools.wraps decorator like transformers' ``deprecate_kwarg``, a prefill with 6 keyword
arguments and decode steps with 7 (``position_ids`` appears), ``past_key_values`` holding key and
value tensors preallocated to ``max_cache_len``. Three generations: batch 1, then batch 2, then
batch 1 with a longer prompt that needs a longer cache. The real causes of its recompiles are
the batch size and the cache length; the first failing guard of each entry is ``len(kwargs)``."""

import functools

import torch
from torch import nn


def deprecate_kwarg(old_name, new_name):
    """transformers.utils.deprecation.deprecate_kwarg, reduced: same wrapper shape and names."""
    def wrapper(func):
        @functools.wraps(func)
        def wrapped_func(*args, **kwargs):
            if old_name in kwargs:
                kwargs[new_name] = kwargs.pop(old_name)
            return func(*args, **kwargs)
        return wrapped_func
    return wrapper


class StaticCache:
    def __init__(self, batch, max_cache_len, heads=2, head_dim=4):
        self.max_cache_len = max_cache_len
        self.key_cache = torch.zeros(batch, heads, max_cache_len, head_dim)
        self.value_cache = torch.zeros(batch, heads, max_cache_len, head_dim)

    def update(self, key, value, cache_position):
        self.key_cache.index_copy_(2, cache_position, key)
        self.value_cache.index_copy_(2, cache_position, value)
        return self.key_cache, self.value_cache


class TinyDecoder(nn.Module):
    def __init__(self, vocab=32, heads=2, head_dim=4):
        super().__init__()
        self.heads, self.head_dim = heads, head_dim
        hidden = heads * head_dim
        self.embed = nn.Embedding(vocab, hidden)
        self.qkv = nn.Linear(hidden, 3 * hidden)
        self.out = nn.Linear(hidden, vocab)

    @deprecate_kwarg("past_key_value", "past_key_values")
    def forward(self, input_ids=None, attention_mask=None, past_key_values=None,
                cache_position=None, position_ids=None, use_cache=True, **kwargs):
        b, s = input_ids.shape
        h = self.embed(input_ids)
        q, k, v = self.qkv(h).view(b, s, 3, self.heads, self.head_dim).permute(2, 0, 3, 1, 4)
        keys, values = past_key_values.update(k, v, cache_position)
        scores = q @ keys.transpose(-1, -2) / self.head_dim ** 0.5
        visible = torch.arange(past_key_values.max_cache_len) <= cache_position[-1]
        scores = scores.masked_fill(~visible, float("-inf"))
        attn = (scores.softmax(-1) @ values).transpose(1, 2).reshape(b, s, -1)
        return self.out(attn)


def generate(model, batch, prompt_len, max_cache_len, new_tokens=2):
    cache = StaticCache(batch, max_cache_len)
    ids = torch.ones(batch, prompt_len, dtype=torch.long)
    mask = torch.ones(batch, prompt_len, dtype=torch.long)
    # prefill: 6 keyword arguments
    logits = model(input_ids=ids, attention_mask=mask, past_key_values=cache,
                   cache_position=torch.arange(prompt_len), use_cache=True, return_dict=True)
    for step in range(new_tokens):
        pos = prompt_len + step
        ids = logits[:, -1:].argmax(-1)
        mask = torch.ones(batch, pos + 1, dtype=torch.long)
        # decode: 7 (position_ids appears)
        logits = model(input_ids=ids, attention_mask=mask, past_key_values=cache,
                       cache_position=torch.tensor([pos]),
                       position_ids=torch.tensor([[pos]]).expand(batch, 1), use_cache=True,
                       return_dict=True)
    return logits


if __name__ == "__main__":
    torch.manual_seed(0)
    model = TinyDecoder().eval()
    compiled = torch.compile(model, backend="eager")
    with torch.no_grad():
        generate(compiled, batch=1, prompt_len=5, max_cache_len=16)
        generate(compiled, batch=2, prompt_len=5, max_cache_len=16)
        generate(compiled, batch=1, prompt_len=20, max_cache_len=32)
    print("done")
