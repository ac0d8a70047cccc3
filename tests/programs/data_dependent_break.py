"""Two kinds of graph break. `branchy` branches on an unbacked size (mark_unbacked): Dynamo
cannot guard on the data-dependent expression, breaks the graph, and lists the break, but its
graph_break counter stays at 0. `explicit` calls torch._dynamo.graph_break(), which the counter
counts; it is compiled once per size (static), so it breaks twice.

With --truth it prints, as JSON, per function: the growth of counters["graph_break"] over its
calls in a plain run, and the graph breaks torch._dynamo.explain reports for each call's input
(a fresh Dynamo state each time), summed."""

import json
import sys

import torch
from torch._dynamo.utils import counters


def branchy(x):
    y = x * 2
    if x.shape[0] > 2:
        return y + 1
    return y - 1


def explicit(x):
    y = x + 1
    torch._dynamo.graph_break()
    return y * x.sum()


def unbacked(n):
    x = torch.ones(n)
    torch._dynamo.decorators.mark_unbacked(x, 0)
    return x


CALLS = {
    "branchy": (branchy, [lambda: unbacked(3), lambda: unbacked(4)], {}),
    "explicit": (explicit, [lambda: torch.ones(1), lambda: torch.ones(2)], {"dynamic": False}),
}


def run():
    for fn, inputs, options in CALLS.values():
        compiled = torch.compile(fn, backend="eager", **options)
        for make in inputs:
            compiled(make())


def truth():
    out = {}
    for name, (fn, inputs, options) in CALLS.items():
        torch._dynamo.reset()
        before = sum(counters["graph_break"].values())
        compiled = torch.compile(fn, backend="eager", **options)
        for make in inputs:
            compiled(make())
        counted = sum(counters["graph_break"].values()) - before
        explained = 0
        for make in inputs[: 1 if not options else None]:  # unbacked: one compile serves all
            torch._dynamo.reset()
            explained += torch._dynamo.explain(fn)(make()).graph_break_count
        out[name] = {"counter": counted, "explain": explained}
    print("TRUTH " + json.dumps(out))


if __name__ == "__main__":
    truth() if "--truth" in sys.argv else run()
