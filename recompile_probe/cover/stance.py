"""Real calls under ``set_stance("fail_on_recompile")``: for frames no guard can vouch for.

After a graph break, sizes past the break may need a resume frame that was never compiled; the
target's own guards cannot see that. A real call under the fail-on-recompile stance raises on any
cache miss in any frame, compiles nothing and leaves the cache as it was (measured exact on the
five functions of dynamo-facts.md, graph break included), at the cost of executing the call: it
is only ever a sample, and is reported as one.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..torch_compat.stance import stance

#: what the stance's refusal says (torch 2.6 .. 2.15)
_REFUSED = ("fail_on_recompile", "Detected recompile")
_FUNCTION = re.compile(r"function name: '(?P<name>[^']+)'")
#: a listed failure: "- 1/1: 2 <= y.size()[0]  # ...", a compiled-autograd id "!0/1/0: ..."
_GUARD = re.compile(r"^\s*- (?P<guard>!?\d+(?:/\d+)+: .*)$", re.M)
#: a guard on how many arguments the frame got: the entries a shared wrapper (transformers'
#: ``wrapped_func``) compiled for another function it decorates reject the call there, at every
#: size, and are listed first
_ARITY = re.compile(r"^\S+: len\((?:L\[')?(?:args|kwargs)(?:'\])?\) == \d+$")


def _named(said: str) -> str | None:
    """The failing guard a refusal names: the first listed that is not an argument count (an
    entry compiled for another function); where every one is, the first."""
    guards = [g.split("  #")[0].strip() for g in _GUARD.findall(said)]
    return next((g for g in guards if not _ARITY.match(g)), guards[0] if guards else None)


@dataclass(frozen=True)
class Refusal:
    """A real call the stance refused: which frame missed, and its first failing guard."""

    function: str | None
    #: "1/1: 2 <= y.size()[0] <= 16", comment stripped; None: none named
    guard: str | None


@dataclass
class StanceSampler:
    """``call(args, kwargs)`` the compiled target; ``inputs(sizes)`` real inputs there."""

    call: Callable[[tuple, dict], Any]
    inputs: Callable[[Mapping[str, int]], tuple[tuple, dict]]
    calls: int = 0
    #: sizes -> the error a served call raised (a runtime assertion in the graph, ...)
    raised: dict[tuple[int, ...], str] = field(default_factory=dict)
    refused: dict[tuple[int, ...], Refusal] = field(default_factory=dict)
    asked: list[tuple[int, ...]] = field(default_factory=list)
    skipped: int = 0  #: sizes whose real inputs could not be made

    def served(self, sizes: Mapping[str, int]) -> bool | None:
        """None: no real inputs could be made at these sizes (the factory failed, or they do
        not fit in memory): that size stays undecided."""
        try:
            args, kwargs = self.inputs(sizes)
        except Exception:  # noqa: BLE001 - the factory's failure decides nothing
            self.skipped += 1
            return None
        self.calls += 1
        self.asked.append(tuple(sizes.values()))
        try:
            with stance("fail_on_recompile"):
                self.call(args, kwargs)
        except Exception as exc:  # noqa: BLE001 - the refusal, or the call's own failure
            said = str(exc)
            if any(word in said for word in _REFUSED):
                function = _FUNCTION.search(said)
                self.refused[tuple(sizes.values())] = Refusal(
                    function["name"] if function else None, _named(said)
                )
                return False
            first = said.strip().splitlines()[0] if said.strip() else ""
            self.raised[tuple(sizes.values())] = f"{type(exc).__name__}: {first}"
        return True
