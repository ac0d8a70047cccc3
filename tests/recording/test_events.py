"""EventBuilder: the kind of a recompile whose guards all pass on Dynamo's re-check.

The records are shaped as Dynamo's compilation metrics are (the fields the builder reads), with
the texts torch writes: 2.13's "Unexpected recompilation ..." and 2.9's "Unable to find
recompilation reasons" (the two-rank truth that these come from a peer under guard collectives is
tests/execution/test_ranks.py, on 2.13 here and on 2.9.1 in the compat run). Without guard
collectives no peer can have forced the recompile: torch's source calls it a bug.
"""

from __future__ import annotations

import pytest

from recompile_probe.recording.events import EventBuilder

UNEXPECTED = (
    "0/0: Unexpected recompilation: runtime guards failed even though they passed during "
    "recompilation-reason analysis. Please open an issue with a minimal repro: "
    "https://github.com/pytorch/pytorch"
)
UNABLE_29 = "Unable to find recompilation reasons"


def _record(compile_id: str, cache_size: int, reason: str | None = None) -> dict:
    return {
        "compile_id": compile_id,
        "co_name": "step",
        "co_filename": "model.py",
        "co_firstlineno": 3,
        "cache_size": cache_size,
        "recompile_reason": reason,
        "fail_type": None,
        "fail_reason": None,
    }


@pytest.mark.parametrize("text", [UNEXPECTED, UNABLE_29, "0/0:"])
def test_an_unexplained_recompile_is_a_peers_only_under_guard_collectives(text):
    kinds = {}
    for collectives in (True, False):
        builder = EventBuilder()
        first = builder.build(_record("0/0", 0), guard_collectives=collectives)
        assert first.reason_kind is None  # a first compile has no reason
        again = builder.build(_record("0/1", 1, text), guard_collectives=collectives)
        kinds[collectives] = again.reason_kind
    assert kinds[True] == "peer_rank_recompiled"
    # off: torch's own bug, except 2.9's bare entry, which says nothing at all
    assert kinds[False] == ("other" if text == "0/0:" else "torch_internal_error")


def test_a_named_guard_keeps_its_kind_either_way():
    for collectives in (True, False):
        builder = EventBuilder()
        builder.build(_record("0/0", 0), guard_collectives=collectives)
        event = builder.build(
            _record("0/1", 1, "0/0: tensor 'x' size mismatch at index 0. expected 8, actual 3"),
            guard_collectives=collectives,
        )
        assert event.reason_kind == "static_size_change"


def test_where_guard_collectives_are_not_known_the_text_reads_as_it_says():
    # a trace file read afterwards (recording/trace.py) does not say whether they were on
    builder = EventBuilder()
    builder.build(_record("0/0", 0))
    assert builder.build(_record("0/1", 1, UNEXPECTED)).reason_kind == "peer_rank_recompiled"
