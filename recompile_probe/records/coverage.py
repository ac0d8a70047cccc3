"""Coverage of a declared size range by a run's cache entries, as a record. No torch.

Built once, by cover/decide.py, while the run's cache entries are alive; read by the verdict,
the budgets and every renderer. The JSON field names are a contract (docs/coverage.md).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from .origin import Origin


class Method(str, Enum):
    """How the answer was reached, strongest first."""

    #: the entries' guards read as conditions on the sizes and decided over the whole range
    PROVED = "proved"
    #: the entries' guards evaluated at every point of the range
    ENUMERATED = "enumerated"
    #: evaluated (guards, or real calls under the fail-on-recompile stance) at chosen points only
    SAMPLED = "sampled"


class Scope(str, Enum):
    #: every frame the call runs through was decided (no other compiled frame, or every one
    #: sampled by real calls)
    EVERY_FRAME = "every frame"
    #: only the target's own frame: other frames (graph breaks, resume functions) were compiled
    #: and nothing decided them
    TOP_FRAME = "top frame only"


class Outcome(str, Enum):
    """What a call at an unserved size does."""

    RECOMPILE = "recompile"
    #: the frame is at its recompile limit: nothing compiles, the call runs eagerly
    EAGER = "eager"
    #: outside the range a mark declared (min/max): the compile raises
    RAISES = "raises"


#: which evidence decided a part of the range
GUARDS, STANCE = "guards", "stance"


@dataclass(frozen=True, kw_only=True)
class Unserved:
    """A box of sizes no cache entry serves, and what a call there does."""

    sizes: dict[str, tuple[int, int]]  #: symbol -> inclusive [lo, hi]
    outcome: str  #: an ``Outcome`` value
    #: the failing guard of the newest entry at the box's smallest point (check_verbose's words);
    #: where a real call decided it, the first guard the stance's refusal names
    guard: str | None = None
    reason_kind: str | None = None  #: reasons.KINDS of that guard
    origin: Origin | None = None  #: the user line behind that guard, where the run captured it
    decided_by: str = GUARDS  #: "guards" or "stance" (a real call at that size was refused)


@dataclass(frozen=True, kw_only=True)
class RuntimeRaise:
    """A served box where the compiled graph raises a runtime assertion (a mark's range, or a
    ``torch._check`` the graph keeps): a call there is served by a cache entry and fails."""

    sizes: dict[str, tuple[int, int]]  #: symbol -> (lo, hi)
    assertion: str  #: the graph's assertion, as sympy prints it


@dataclass(frozen=True, kw_only=True)
class Coverage:
    """Whether every size in ``ranges`` is served by an existing cache entry."""

    ranges: dict[str, tuple[int, int]]  #: as declared, symbol -> inclusive [lo, hi]
    #: a ``Method`` value; None when nothing could be decided (``why_na`` says why)
    method: str | None
    scope: str | None  #: a ``Scope`` value
    #: every point decided and served, over every frame: only a proved or enumerated answer of
    #: scope "every frame" is ever True
    proved: bool
    served: tuple[dict[str, tuple[int, int]], ...] = ()  #: boxes, smallest first
    unserved: tuple[Unserved, ...] = ()  #: boxes, smallest first
    #: the smallest unserved point found (in the ranges' symbol order); None: none found
    counterexample: dict[str, int] | None = None
    #: served boxes where the compiled graph raises a runtime assertion; None where the run's
    #: compiles were not read for them
    raises_at_runtime: tuple[RuntimeRaise, ...] | None = None
    points_checked: int = 0  #: guard evaluations and real calls made to decide it
    seconds: float | None = None  #: wall time of the decision
    #: served/unserved boxes left out of the lists because there were too many (a parity set
    #: over a huge range); the counterexample and ``proved`` still hold for the whole range
    boxes_left_out: int = 0
    #: served boxes that raise, left out of ``raises_at_runtime`` because there were too many;
    #: ``proved`` is False whenever any raise, listed or not
    raises_left_out: int = 0
    #: runtime assertions were checked at sampled sizes only (a range too large to enumerate,
    #: or real calls past a graph break): ``raises_at_runtime`` lists what the samples found
    raises_sampled: bool = False
    why_na: str | None = None
    #: served and unserved list every box of the range (False: z3 decided a range too large to
    #: enumerate and listed only part of it, the lists stopped at their length limit, or
    #: samples; the counterexample still holds)
    complete: bool = True
    notes: tuple[str, ...] = ()

    @property
    def decided(self) -> bool:
        return self.method is not None

    def covers(self, ranges: dict[str, tuple[int, int]]) -> bool | None:
        """Whether every point of ``ranges`` (inside this record's) is served; None: unknown."""
        if not self.decided:
            return None
        for box in self.unserved:
            if _meets(box.sizes, ranges):
                return False
        if self.method == Method.SAMPLED.value or not self.unserved_listed_for(ranges):
            return None
        return True

    def unserved_listed_for(self, ranges: dict[str, tuple[int, int]]) -> bool:
        """Whether ``unserved`` lists every unserved box that meets ``ranges`` (a part of this
        record's; a symbol it leaves out spans its whole range): the list is complete, or it
        stopped after ``ranges`` ends (boxes are listed smallest first). Not for a sampled
        answer, whose list is its samples'."""
        if self.complete or self.counterexample is None:  # none anywhere in the range
            return True
        return bool(self.unserved) and self._ends_before(ranges, self.unserved[-1].sizes)

    def raises_listed_for(self, ranges: dict[str, tuple[int, int]]) -> bool:
        """Whether ``raises_at_runtime`` lists every served box that raises and meets
        ``ranges``: every served size was checked, and the list did not stop before ``ranges``
        ends."""
        if self.raises_sampled:
            return False
        if not self.raises_left_out:
            return True
        listed = self.raises_at_runtime or ()
        return bool(listed) and self._ends_before(ranges, listed[-1].sizes)

    def _ends_before(
        self, ranges: dict[str, tuple[int, int]], last: dict[str, tuple[int, int]]
    ) -> bool:
        """Whether no box listed after ``last`` can meet ``ranges``. One symbol: the boxes are
        disjoint runs, so ``ranges`` ends within ``last``'s end; several: boxes are ordered by
        their lower corner, so ``ranges`` ends before ``last`` starts in the first symbol."""
        first = next(iter(self.ranges))
        hi = ranges.get(first, self.ranges[first])[1]
        lo_last, hi_last = last[first]
        return hi <= hi_last if len(self.ranges) == 1 else hi < lo_last


def _meets(sizes: dict[str, tuple[int, int]], ranges: dict[str, tuple[int, int]]) -> bool:
    """Whether the box ``sizes`` meets ``ranges`` (a symbol ``ranges`` leaves out: any size)."""
    return all(
        not (hi < ranges[s][0] or lo > ranges[s][1]) for s, (lo, hi) in sizes.items() if s in ranges
    )
