"""The suite's truth, recorded by the suite itself (copied as its conftest.py).

Per test (setup and teardown included): Dynamo's compilation metrics (its deque, made large
enough at session start and emptied before each test; metrics logging stays as TestCase sets it),
the graphs the suite's counting backend received, Dynamo's graph-break list (read before each
reset empties it) and Dynamo's own "hit config.recompile_limit" warnings, which name the function.
A record without a name (a compile that failed before tracing) belongs to the function its frame
id named earlier since the last reset. Written as one JSON line per test to $TRUTH_OUT; without
it, the plugin does nothing (the plain and the watched runs both carry it).
"""

import json
import logging
import os
import re

import pytest
import suite_truth
import torch
import torch._dynamo.test_case as test_case

OUT = os.environ.get("TRUTH_OUT")
_LIMIT = re.compile(r"hit config\.recompile_limit.*?function: '([^']+)' \((.+):(\d+)\)", re.S)


class _Limits(logging.Handler):
    def __init__(self):
        super().__init__(logging.WARNING)
        self.hits = []

    def emit(self, record):
        match = _LIMIT.search(record.getMessage())
        if match:
            self.hits.append((match.group(1), match.group(2), int(match.group(3))))


LIMITS = _Limits()
STATE = {"boundaries": [], "breaks": []}


def _reset_wrapper(original):
    def reset():
        from torch._dynamo.utils import get_compilation_metrics, graph_break_reasons

        STATE["boundaries"].append(len(get_compilation_metrics()))
        STATE["breaks"].extend(r.user_stack[-1].name for r in graph_break_reasons if r.user_stack)
        suite_truth.reset_count()
        original()

    return reset


def pytest_configure(config):
    if not OUT:
        return
    torch._dynamo.utils.set_compilation_metrics_limit(1_000_000)
    logging.getLogger("torch._dynamo.convert_frame").addHandler(LIMITS)
    wrapped = _reset_wrapper(torch._dynamo.reset)
    torch._dynamo.reset = wrapped
    test_case.reset = wrapped


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    if not OUT:
        yield
        return
    from torch._dynamo.utils import clear_compilation_metrics, get_compilation_metrics

    torch._dynamo.reset()  # what the previous test left in Dynamo's lists is not this test's
    clear_compilation_metrics()
    STATE["boundaries"].clear()
    STATE["breaks"].clear()
    LIMITS.hits.clear()
    first_epoch = suite_truth.EPOCH[0]
    graphs_from = len(suite_truth.GRAPHS)
    yield
    from torch._dynamo.utils import graph_break_reasons

    breaks = STATE["breaks"] + [r.user_stack[-1].name for r in graph_break_reasons if r.user_stack]
    records = list(get_compilation_metrics())
    cuts = STATE["boundaries"]
    functions = {}
    names = {}  # (epoch, frame id) -> identity
    for i, m in enumerate(records):
        epoch = first_epoch + sum(1 for c in cuts if c <= i)
        cid = str(m.compile_id)
        frame = cid.rsplit("/", 1)[0]
        if m.co_name is not None:
            names[(epoch, frame)] = (m.co_name, m.co_filename, m.co_firstlineno)
        who = names.get((epoch, frame))
        f = functions.setdefault(
            "|".join(map(str, who)),
            {"compiles": 0, "recompiles": 0, "failed": 0, "graphs": 0, "graph_breaks": 0,
             "limit_hits": 0, "reasons": []},
        )
        f["compiles"] += 1
        f["failed"] += int(m.fail_type is not None)
        f["recompiles"] += int((m.cache_size or 0) > 0 or (m.fail_type is not None and frame_seen(
            names, epoch, frame, records[:i], cuts, first_epoch)))
        f["graphs"] += sum(1 for g in suite_truth.GRAPHS[graphs_from:] if g == (epoch, cid))
        if m.recompile_reason and m.fail_type is None:
            f["reasons"].append(m.recompile_reason)
    for key, f in functions.items():
        f["graph_breaks"] = breaks.count(key.split("|")[0])
    for name, filename, line in LIMITS.hits:
        functions["|".join(map(str, (name, filename, line)))]["limit_hits"] += 1
    with open(OUT, "a", encoding="utf-8") as handle:
        handle.write(json.dumps({"nodeid": item.nodeid, "functions": functions}) + "\n")


def frame_seen(names, epoch, frame, earlier, cuts, first_epoch):
    """Whether the frame compiled successfully before, in the same epoch (a failed compile of
    such a frame is a recompile that failed)."""
    for j, m in enumerate(earlier):
        e = first_epoch + sum(1 for c in cuts if c <= j)
        if e == epoch and str(m.compile_id).rsplit("/", 1)[0] == frame and m.fail_type is None:
            return True
    return False
