"""The `fail_on_recompile` stance: a call that would recompile raises instead, before Dynamo writes
any metrics record or recompiles log line. The program reports what it caught, one JSON line per
error, to the file named by $PROGRAM_CAUGHT_OUT (the reference harness counts it from there)."""

import json
import os

import torch


def scale(x):
    return x * 2


def shift(x):
    return x + 1


def report(exc):
    path = os.environ.get("PROGRAM_CAUGHT_OUT")
    if path:
        with open(path, "a", encoding="utf-8") as handle:
            handle.write(json.dumps({"type": type(exc).__name__, "message": str(exc)}) + "\n")


if __name__ == "__main__":
    compiled = torch.compile(scale, backend="eager")
    compiled(torch.ones(1))
    with torch.compiler.set_stance("fail_on_recompile"):
        try:
            compiled(torch.ones(2))
        except RuntimeError as exc:
            report(exc)
            print("caught", type(exc).__name__)
    compiled(torch.ones(2))  # outside the stance: the real recompile
    other = torch.compile(shift, backend="eager")
    other(torch.ones(1))
    print("done")
