"""A tiny random-weight BERT classifier trained with labels, as a program trains it. Its first
forward with labels sets ``config.problem_type``, and Dynamo guards on it: the program's second
compiled call recompiles on that guard. Built from a config: nothing is downloaded.

Run as a program (``python model.py STRATEGY``) it prints, as JSON, Dynamo's compiles of its
own run: the truth the tool's ``run`` must equal. STRATEGY: ``default`` or ``dynamic_true``.

``make_points`` is the same model over batch and sequence length (classify_bs.yaml: B x S with
an attention mask, 5 varying dims): ``python model.py --bs CHANGE`` runs its points, forward
only, with CHANGE ``dynamic_true`` or marks such as ``input_ids:0=dynamic,labels:0=unbacked``
put on the inputs in eager code before each call, as a user pastes what ``suggest`` wrote."""

import json
import sys

import torch
from transformers import BertConfig, BertForSequenceClassification

torch.manual_seed(0)
config = BertConfig(vocab_size=64, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                    intermediate_size=32, max_position_embeddings=32, num_labels=3)
model = BertForSequenceClassification(config).eval()  # eval: no dropout, outputs comparable

#: the scenario's sequence: two full batches of 4, then a ragged last batch of 3
BATCHES = (4, 4, 3)
SEQ = 8


def make_inputs(batch_size):
    ids = torch.randint(1, config.vocab_size, (batch_size, SEQ))
    labels = torch.randint(0, config.num_labels, (batch_size,))
    return (), {"input_ids": ids, "labels": labels}


#: classify_bs.yaml's points: B x S, a longer batch, then a ragged last one
POINTS = ((4, 8), (4, 12), (3, 8))


def make_points(B, S):
    return (), {"input_ids": torch.randint(1, config.vocab_size, (B, S)),
                "attention_mask": torch.ones(B, S, dtype=torch.long),
                "labels": torch.randint(0, config.num_labels, (B,))}


def _by_hand(change):
    """The --bs run: the change applied by hand, Dynamo's compiles of it."""
    from torch._dynamo.decorators import mark_unbacked
    from torch._dynamo.testing import CompileCounter
    from torch._dynamo.utils import get_compilation_metrics

    counter = CompileCounter()
    dynamic = True if change == "dynamic_true" else None
    marks = [] if change in ("dynamic_true", "none") else [m.split("=") for m in change.split(",")]
    compiled = torch.compile(model, backend=counter, dynamic=dynamic)
    mark = {"dynamic": torch._dynamo.mark_dynamic, "unbacked": mark_unbacked}
    for B, S in POINTS:  # forward only, grad mode on: as the tool calls the target
        _, kwargs = make_points(B, S)
        for where, kind in marks:
            name, dim = where.split(":")
            mark[kind](kwargs[name], int(dim))
        compiled(**kwargs)
    metrics = get_compilation_metrics()
    return {"frames": counter.frame_count, "compiles": len(metrics),
            "failed": sum(m.fail_type is not None for m in metrics)}


if __name__ == "__main__" and sys.argv[1] == "--bs":
    print(json.dumps(_by_hand(sys.argv[2])))
elif __name__ == "__main__":
    from torch._dynamo.testing import CompileCounter
    from torch._dynamo.utils import get_compilation_metrics

    torch._dynamo.config.log_compilation_metrics = True
    counter = CompileCounter()
    dynamic = {"default": None, "dynamic_true": True}[sys.argv[1]]
    compiled = torch.compile(model, backend=counter, dynamic=dynamic)
    for b in BATCHES:
        args, kwargs = make_inputs(b)
        compiled(*args, **kwargs).loss.backward()
    metrics = get_compilation_metrics()
    print(json.dumps({"frames": counter.frame_count, "compiles": len(metrics),
                      "failed": sum(m.fail_type is not None for m in metrics)}))
