"""The search over markings: exhaustive up to EXHAUSTIVE_MAX varying dims (the optimum is
proven), greedy beyond.

Greedy works on groups, not dims: the dims that vary together (those that follow the same size
symbol, or, following none, take the same sizes at the same calls: every layer's cache length)
are marked together, so the search grows with what varies independently, not with the number of
tensors (a model with 8 cache tensors has 3 groups, not 20 dims). Start unmarked, with the
whole-function strategies measured right after it (before any marking, in both searches); at
each step try marking (dynamic or unbacked) each group whose dims the current best's recompile
reasons name (every group when they name none), one group at a time and all of them together
(groups that change at the same call need each other); keep the best step while it improves,
then drop or weaken whole groups while that does not make it worse.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

from ...records.suggestion import Evaluation, Location, MarkChoice
from ...strategies.builtins import BUILTINS
from ...strategies.model import LocationMark, Strategy
from .bench import Bench
from .objective import ranked, worse

#: What each varying dim may get; "static" = left unmarked (Dynamo's default applies).
CHOICES = ("static", "dynamic", "unbacked")
#: Whole-function alternatives to per-dim marks, measured when this torch supports them. Of the
#: knob strategies only shapes_spec can lower the objective: static_sources only adds compiles,
#: isolate_recompiles changes what other compile calls share (not this function's figures), and
#: recompile_limit trades compiles for calls run eagerly.
WHOLE_FUNCTION = (
    "dynamic_true",
    "unbacked_sources",
    "backed_size_oblivious",
    "auto_unbacked",
    "shapes_spec",
)
#: Up to this many varying dims the search is exhaustive (3^4 = 81 markings).
EXHAUSTIVE_MAX = 4


def unmarked_key() -> tuple:
    """The measured-candidates key of the marking that marks nothing."""
    return ("marks", frozenset())


def whole_key(name: str) -> tuple:
    """The measured-candidates key of a whole-function strategy."""
    return ("whole", name)


def label(marks: tuple[MarkChoice, ...]) -> str:
    if not marks:
        return "no marks"
    return " ".join(f"{m.name}:{m.dim}={m.kind}" for m in marks)


def _marks(locations: Sequence[Location], choice: dict[int, str]) -> tuple[MarkChoice, ...]:
    return tuple(
        MarkChoice(
            locations[i].argument, locations[i].dim, locations[i].symbol, kind, locations[i].name
        )
        for i, kind in sorted(choice.items())
        if kind != "static"
    )


def candidate_strategy(name: str, marks: tuple[MarkChoice, ...]) -> Strategy:
    return Strategy(
        name,
        f"suggest candidate: {name}",
        marks=tuple(LocationMark(m.argument, m.dim, m.kind) for m in marks),
    )


def groups(locations: Sequence[Location]) -> list[tuple[int, ...]]:
    """Indexes of the locations that vary together: the same size symbol, or, without one, the
    same sizes in the same order (each layer's cache length), in order of first appearance."""
    found: dict[tuple, list[int]] = {}
    for i, loc in enumerate(locations):
        key = ("symbol", loc.symbol) if loc.symbol else ("sizes", tuple(loc.sizes))
        found.setdefault(key, []).append(i)
    return [tuple(g) for g in found.values()]


class Search:
    def __init__(self, bench: Bench, locations: tuple[Location, ...]) -> None:
        self.bench, self.locations = bench, locations
        #: what the search marks together: each dim alone where it is exhaustive (every
        #: combination is measured anyway), the dims that vary together beyond
        self.groups = (
            groups(locations)
            if len(locations) > EXHAUSTIVE_MAX
            else [(i,) for i in range(len(locations))]
        )

    def _wanted(self, choice: dict[int, str]) -> tuple:
        choice = {i: k for i, k in choice.items() if k != "static"}
        marks = _marks(self.locations, choice)
        return (
            ("marks", frozenset(choice.items())),
            candidate_strategy(label(marks), marks),
            marks,
            None,
            len(marks),
        )

    def is_measured(self, choice: dict[int, str]) -> bool:
        return self._wanted(choice)[0] in self.bench.measured

    def marking(self, choice: dict[int, str]) -> Evaluation:
        return self.bench.measure(*self._wanted(choice))

    def markings(self, choices: list[dict[int, str]], whole: bool = False) -> list[Evaluation]:
        """Several markings (and the whole-function strategies) at once: in parallel on a pool."""
        # A whole-function strategy changes every varying dim and every other compiled frame
        # of the process: at equal figures, marking every dim (local, explicit) ranks first.
        extra = (
            [
                (whole_key(name), BUILTINS[name], (), name, len(self.locations) + 1)
                for name in WHOLE_FUNCTION
            ]
            if whole
            else []
        )
        wanted = [self._wanted(c) for c in choices]
        # Measured first, after the unmarked baseline: the whole-function strategies are few,
        # each costs one candidate and they are often the answer, so a limit that stops the
        # search has them measured rather than cut.
        first = [w for w in wanted if w[0] == unmarked_key()]
        rest = [w for w in wanted if w[0] != unmarked_key()]
        self.bench.measure_all([*first, *extra, *rest])
        return [self.bench.measured[w[0]] for w in wanted]

    def exhaustive(self) -> None:
        n = len(self.locations)
        self.markings(
            [dict(enumerate(combo)) for combo in itertools.product(CHOICES, repeat=n)], whole=True
        )

    def greedy(self) -> None:
        current: dict[int, str] = {}
        best = self.markings([current], whole=True)[0]
        while True:
            named = set(self._named(best))
            chosen = [g for g in self.groups if named & set(g)] or list(self.groups)
            tries = [
                {**current, **{i: k for i in g}}
                for g in chosen
                for k in ("dynamic", "unbacked")
                if any(current.get(i) != k for i in g)
            ]
            # Groups that change at the same call: no one group's marks remove that recompile,
            # all of them together may (minimise() drops the groups not needed).
            every = [i for g in chosen for i in g]
            tries += [
                {**current, **{i: k for i in every}}
                for k in ("dynamic", "unbacked")
                if len(chosen) > 1 and any(current.get(i) != k for i in every)
            ]
            if not tries:
                break
            step = ranked(self.markings(tries))[0]
            if ranked([step, best])[0] is best:
                break
            best, current = step, self._choice(step)
        self.minimise(current)

    def minimise(self, choice: dict[int, str]) -> dict[int, str]:
        """Drop or weaken whole groups while that does not make it worse (the greedy result's
        polish); a group's dims stay marked together."""
        best = self.marking(choice)
        changed = True
        while changed:
            changed = False
            for variant in self._variants(choice):
                candidate = self.marking(variant)
                if worse(candidate, best) is None:
                    best, choice, changed = candidate, variant, True
                    break
        return choice

    def _variants(self, choice: dict[int, str]) -> list[dict[int, str]]:
        out = []
        for g in self.groups:
            marked = [i for i in g if i in choice]
            if not marked:
                continue
            out.append({j: k for j, k in choice.items() if j not in g})
            if any(choice[i] == "unbacked" for i in marked):
                out.append({**choice, **{i: "dynamic" for i in marked}})
        return out

    def _choice(self, e: Evaluation) -> dict[int, str]:
        index = {(loc.argument, loc.dim): i for i, loc in enumerate(self.locations)}
        return {index[(m.argument, m.dim)]: m.kind for m in e.marks}

    def _named(self, e: Evaluation) -> list[int]:
        """Varying dims that the candidate's recompile reasons name (by Dynamo source and dim)."""
        runs = self.bench.runs.get(e.name, [])
        named = {
            (d.source, d.dim)
            for r in runs
            for ev in r.compile_events
            if ev.recompile and (d := ev.reason_detail)
        }
        return [i for i, loc in enumerate(self.locations) if (loc.source, loc.dim) in named]
