"""What a stopped search says: what it did not try and how to go on. A limit (--budget,
--time-limit) stops the measuring between candidates; every phase after that point that would
have measured something is reported here as not measured, never shown as if it had been."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Skips:
    """The phases a limit cut short (records.suggestion.PHASES), each with the sentence that
    says what is missing."""

    phases: list[str] = field(default_factory=list)
    said: list[str] = field(default_factory=list)

    def add(self, phase: str, sentence: str) -> None:
        if phase not in self.phases:
            self.phases.append(phase)
        if sentence not in self.said:
            self.said.append(sentence)


def limit_text(stopped_by: str, budget: int | None, time_limit: float | None) -> str:
    if stopped_by == "budget":
        return f"--budget {budget}"
    return f"--time-limit {time_limit:g} s"


def search_sentence(exhaustive: bool, planned: int | None, measured: int) -> str:
    if exhaustive and planned is not None:
        return (
            f"not tried: {max(0, planned - measured)} of the {planned} candidates of the "
            "exhaustive search"
        )
    return (
        "not tried: the rest of the greedy search (how many candidates it would still have "
        "measured is not known in advance)"
    )


def necessity_sentence(measured: int, total: int) -> str:
    return (
        f"not measured: {total - measured} of the {total} runs that show each mark is needed "
        "(a mark without its line under 'Why each mark is needed' is not shown to be needed)"
    )


TIMING = (
    "not measured: µs/call of the candidates tied for first (they are ranked on the figures "
    "after it: dims changed, unbacked marks)"
)
CONFIRMATION = (
    "not confirmed: a win on µs/call alone over a cheaper candidate (unconfirmed, it does not "
    "count: the cheaper candidate is recommended)"
)
CHECKS = "not measured: the torch._check lines (so the code leaves them out)"
CHECKS_UNCONFIRMED = (
    "not confirmed: the torch._check lines, which differ from none in µs/call only (measured once; "
    "unconfirmed, the code leaves them out)"
)
ENVIRONMENT = (
    "not measured: the environment form (the TORCH_COMPILE_*_SOURCES lines are shown, unmeasured)"
)


def notes(
    *,
    stopped_by: str,
    budget: int | None,
    time_limit: float | None,
    elapsed: float,
    exhaustive: bool,
    planned: int | None,
    measured: int,
    per: float | None,
    sequences: int,
    skips: Skips,
) -> tuple[str, ...]:
    """The sentences a stopped search puts first in its notes. ``measured``: the candidates that
    compete; ``per``: seconds per candidate measured, None where none was."""
    limit = limit_text(stopped_by, budget, time_limit)
    if exhaustive and planned is not None:
        counted = f"{measured} of {planned} planned candidates measured"
    else:
        finished = "had not finished" if "search" in skips.phases else "had finished"
        counted = f"{measured} candidates measured (the greedy search {finished})"
    head = f"stopped by {limit} after {elapsed:.0f} s: {counted}"
    if stopped_by == "budget":
        how = "to go on: rerun with a larger --budget, or without --budget"
    else:
        how = "to go on: rerun with --time-limit 0 (no limit) or a larger --time-limit"
        if per is not None:
            how += f" (about {per:.1f} s per candidate here"
            if exhaustive and planned is not None and planned > measured:
                how += f"; the {planned - measured} not tried: about "
                how += f"{(planned - measured) * per:.0f} s more"
            how += ")"
    if sequences > 1:
        how += "; or measure one sequence of the scenario (--sequence NAME)"
    return (head, *skips.said, how)
