"""A Hugging Face-style call with no download: a module whose forward takes keyword tensors and
**kwargs, called through a wrapper that forwards **kwargs (the reason then names
`kwargs['input_ids']`: a source with quotes inside), with batch 1 then 2."""

import torch


class TinyLM(torch.nn.Module):
    def __init__(self, vocab=32, hidden=8):
        super().__init__()
        self.embed = torch.nn.Embedding(vocab, hidden)
        self.head = torch.nn.Linear(hidden, vocab)

    def forward(self, input_ids=None, attention_mask=None, **kwargs):
        h = self.embed(input_ids) * attention_mask.unsqueeze(-1)
        return self.head(h)


def generate_step(model, **kwargs):
    return model(**kwargs).argmax(-1)


if __name__ == "__main__":
    torch.manual_seed(0)
    model = TinyLM().eval()
    step = torch.compile(generate_step, backend="eager")
    with torch.no_grad():
        for batch in (1, 2):
            inputs = {"input_ids": torch.zeros(batch, 5, dtype=torch.long),
                      "attention_mask": torch.ones(batch, 5)}
            step(model, **inputs)
    print("done")
