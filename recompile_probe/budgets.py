"""Budgets (a scenario's `expect:` section and `check`'s flags) and their evaluation. No torch.

A budget applies to one strategy or all ("*"), one sequence or all ("*"). For each key the most
specific budget wins: strategy+sequence, then strategy, then sequence, then "*"; a command-line
flag overrides them all.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Iterable, Mapping

from . import analysis
from .model import STATUSES, Run, Violation
from .spec import Context, suggest

#: budget key -> the Run field it caps
MAX_KEYS: Mapping[str, str] = MappingProxyType({
    "max_compiles": "compiles",
    "max_recompiles": "recompiles",
    "max_graphs": "graphs",
    "max_guards": "guard_count",
    "max_shape_env_guards": "shape_env_guard_count",
})
EXACT_KEYS = ("outputs_match", "status")
KEYS = (*MAX_KEYS, *EXACT_KEYS)
ANY = "*"


@dataclass(frozen=True)
class Budget:
    strategy: str  #: a strategy name or "*"
    sequence: str  #: a sequence name or "*"
    key: str  #: one of KEYS
    limit: Any
    source: str | None = None  #: "scenario.yaml:12" or the flag that set it
    from_flag: bool = False

    @property
    def rank(self) -> int:
        return 4 if self.from_flag else 2 * (self.strategy != ANY) + (self.sequence != ANY)

    def applies_to(self, run: Run) -> bool:
        return self.strategy in (ANY, run.strategy) and self.sequence in (ANY, run.sequence_name)


def effective(run: Run, budgets: Iterable[Budget]) -> dict[str, Budget]:
    """key -> the budget that governs it for this run."""
    chosen: dict[str, Budget] = {}
    for budget in budgets:
        if budget.applies_to(run):
            held = chosen.get(budget.key)
            if held is None or budget.rank >= held.rank:
                chosen[budget.key] = budget
    return chosen


def _recompile_reasons(run: Run) -> tuple[str, ...]:
    from .render.cells import reason

    return tuple(f"call {t.call_index} ({analysis.moved(run, t)}): {reason(t.reason)}"
                 for t in analysis.transitions(run))


def _why(run: Run, key: str) -> tuple[str, ...]:
    if key == "outputs_match":
        return tuple(f"call {c.index} ({analysis.at_call(run, c.index)}): "
                     f"{'differs from eager' if c.outputs_match is False else 'not compared'}"
                     for c in run.calls if c.outputs_match is not True and c.event != "error")
    if key == "status" and run.error is not None:
        return (f"{run.error.type}: {run.error.message}",)
    return _recompile_reasons(run)


def evaluate(run: Run, budgets: Iterable[Budget]) -> tuple[Violation, ...]:
    violations = []
    for key, budget in effective(run, budgets).items():
        if key in MAX_KEYS:
            actual = getattr(run, MAX_KEYS[key])
            broken = actual is None or actual > budget.limit
        else:
            actual = getattr(run, key)
            broken = actual != budget.limit
        if broken:
            violations.append(Violation(key, budget.limit, actual, _why(run, key), budget.source))
    return tuple(sorted(violations, key=lambda v: KEYS.index(v.budget)))


def describe(violation: Violation) -> str:
    """One line, e.g. "max_recompiles: 1 > 0"."""
    actual = "n/a" if violation.actual is None else violation.actual
    if violation.budget in MAX_KEYS:
        return f"{violation.budget}: {actual} > {violation.limit}"
    return f"{violation.budget}: {actual} (expected {violation.limit})"


# --- parsing (a scenario's `expect:` section) ----------------------------------------------------

def parse(ctx: Context, value: Any, known: list[str],
          sequences: Mapping[str, Any]) -> tuple[Budget, ...]:
    """expect: {STRATEGY|"*": {BUDGET: limit, SEQUENCE|"*": {BUDGET: limit}}}"""
    ctx.expect("expect", value, dict, 'a mapping of strategy (or "*") -> budgets')
    out: list[Budget] = []
    for strategy, spec in value.items():
        key = f"expect.{strategy}"
        strategy = str(strategy)
        if strategy != ANY and strategy not in known:
            raise ctx.fail(key, f"unknown strategy {strategy!r}", suggest(strategy, known) or
                           'Budgets apply to a strategy name or "*" (all).')
        ctx.expect(key, spec, dict, "a mapping of budgets, e.g. {max_recompiles: 0}")
        for name, sub in spec.items():
            name = str(name)
            if name in KEYS:
                out.append(_parse_one(ctx, f"{key}.{name}", strategy, ANY, name, sub))
            elif name == ANY or name in sequences:
                skey = f"{key}.{name}"
                ctx.expect(skey, sub, dict, "a mapping of budgets")
                for bname, limit in sub.items():
                    bname = str(bname)
                    if bname not in KEYS:
                        raise ctx.fail(f"{skey}.{bname}", f"unknown budget {bname!r}",
                                       suggest(bname, KEYS) or f"Budgets: {', '.join(KEYS)}.")
                    out.append(_parse_one(ctx, f"{skey}.{bname}", strategy, name, bname, limit))
            else:
                raise ctx.fail(f"{key}.{name}", f"{name!r} is neither a budget nor a sequence of "
                               "this scenario", suggest(name, [*KEYS, *sequences]) or
                               f"Budgets: {', '.join(KEYS)}; sequences: {', '.join(sequences)}.")
    return tuple(out)


def _parse_one(ctx: Context, key: str, strategy: str, sequence: str, name: str,
               limit: Any) -> Budget:
    if name in MAX_KEYS:
        ctx.expect(key, limit, int, "a non-negative integer")
        if limit < 0:
            raise ctx.fail(key, f"expected a non-negative integer, got {limit}")
    elif name == "outputs_match":
        ctx.expect(key, limit, bool, "true or false")
    else:
        ctx.expect(key, limit, str, f"one of {', '.join(STATUSES)}")
        if limit not in STATUSES:
            raise ctx.fail(key, f"unknown status {limit!r}", suggest(limit, STATUSES) or
                           f"Statuses: {', '.join(STATUSES)}.")
    return Budget(strategy, sequence, name, limit, ctx.where(key))
