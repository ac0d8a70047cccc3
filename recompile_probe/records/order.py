"""The order runs are reported in, in one place. No torch.

Sequence-major, strategies as the scenario lists them: ``run``, ``check``, shards, ``merge`` and
the pytest items all report (and plan) runs in this order.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence

from .run import Run


def planned(sequences: Iterable[str], strategies: Sequence[str]) -> Iterator[tuple[str, str]]:
    """(sequence, strategy) of every run, in report order."""
    for sequence in sequences:
        for strategy in strategies:
            yield sequence, strategy


def ordered(
    runs: Iterable[Run], sequences: Iterable[str], strategies: Iterable[str]
) -> tuple[Run, ...]:
    """``runs`` in report order (a run of an unknown sequence or strategy goes first); the
    runs of one strategy and sequence on several ranks by rank."""
    seq_rank = {name: i for i, name in enumerate(sequences)}
    strat_rank = {name: i for i, name in enumerate(strategies)}
    return tuple(
        sorted(
            runs,
            key=lambda r: (
                seq_rank.get(r.sequence_name, 0),
                strat_rank.get(r.strategy, 0),
                -1 if r.rank is None else r.rank,
            ),
        )
    )
