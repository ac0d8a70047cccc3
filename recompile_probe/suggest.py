"""`suggest`: the smallest marking that removes every avoidable recompile, found by measurement.

The flow: find the (argument, dim) pairs whose size varies over the scenario's points (from the
inputs the scenario really makes, a driver's calls included, not only from `dims:`); measure
candidate markings, each a probe run of every sequence like any `run` strategy (fresh Dynamo
state each time); rank them on the objective; prove the winner minimal with the measured runs
of its one-mark-less and unbacked-to-dynamic variants; then measure what the advice adds
(torch._check lines, the environment form) before printing any of it.

The objective, in order: status ok with outputs equal to eager; fewest compiles over every
sequence; fewest guards of the newest entry (guard_count, then shape_env_guard_count); lowest
steady-state µs/call, where two candidates whose [fastest, p90] sample ranges overlap count as
equally fast (a marking counts at its faster form: the marks, or the same dims named in
TORCH_COMPILE_*_SOURCES, which saves the per-call mark calls); fewest changed dims (a
whole-function strategy counts as every varying dim plus one); fewest unbacked marks.

The search: every marking (static / dynamic / unbacked per varying dim, 3^n) plus the
whole-function strategies this torch supports when n <= EXHAUSTIVE_MAX; otherwise greedy: start
unmarked, and at each step try marking (dynamic or unbacked) each dim the current best's
recompile reasons name (every dim when they name none), one at a time and all together (dims
that change at the same call need each other), keep the best step while it improves, then drop
or weaken marks while that does not make it worse. ``budget`` caps the
candidates measured; the result says whether the optimum is proven (exhaustive and complete).
"""

from __future__ import annotations

import inspect
import itertools
import math
import re
from dataclasses import replace
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Sequence

from . import __version__
from .errors import UsageError
from .model import Run, ScenarioRef, Tool
from .scenario import Scenario
from .sizes import Path as ArgPath
from .sizes import Point, dynamo_source
from .strategies import BUILTINS, MARKS, LocationMark, Strategy
from .suggestion import (Change, Evaluation, Location, MarkChoice, Necessity, Suggestion,
                         Unfixable)

#: What each varying dim may get; "static" = left unmarked (Dynamo's default applies).
CHOICES = ("static", "dynamic", "unbacked")
#: Whole-function alternatives to per-dim marks, measured when this torch supports them.
WHOLE_FUNCTION = ("dynamic_true", "unbacked_sources", "backed_size_oblivious", "auto_unbacked")
#: Up to this many varying dims the search is exhaustive (3^4 = 81 markings).
EXHAUSTIVE_MAX = 4
#: Nested containers followed when looking for tensors in the inputs.
MAX_DEPTH = 4

#: What to do about a recompile that no marking removed, by reason kind (reasons.KINDS).
REMEDIES = {
    "dtype_change": "a dtype change always recompiles: cast to one dtype before the call, or "
                    "warm up each dtype once",
    "requires_grad_change": "requires_grad is guarded: call with one setting (detach, or "
                            "torch.no_grad() around every call)",
    "python_scalar_change": "a Python number is a constant in the graph: pass it as a tensor "
                            "(torch.tensor(v)), or round it to a few buckets",
    "list_length_change": "a list's length is part of the graph: pad the list to a few fixed "
                          "lengths (buckets), or stack it into one tensor",
    "type_or_id_change": "the argument's type or identity changed: pass the same kind of object "
                         "every call",
    "global_or_config_change": "a global or config value changed between calls: set it once "
                               "before the first call",
    "stride_change": "the layout changed: make the input contiguous before the call",
    "backend_change": "the backend changed: compile once per backend",
    "recompile_limit_hit": "the recompile limit was hit: fix the recompiles above it first",
}
SIZE_REMEDY = ("no measured marking removed this size change: mark it by hand with the options "
               "(min/max) it needs, or pad the size to a few buckets")


class _BudgetSpent(Exception):
    pass


# --- the varying dims -----------------------------------------------------------------------------

def _walk(value: Any, path: ArgPath, depth: int, seen: set[int]) -> Iterator[tuple[ArgPath, Any]]:
    import torch

    if isinstance(value, torch.Tensor):
        yield path, value
        return
    if depth >= MAX_DEPTH or id(value) in seen:
        return
    seen.add(id(value))
    if isinstance(value, (list, tuple)):
        for i, item in enumerate(value):
            yield from _walk(item, ArgPath(path.head, (*path.steps, ("index", i))), depth + 1, seen)
    elif isinstance(value, dict):
        for key, item in value.items():
            if isinstance(key, str):
                yield from _walk(item, ArgPath(path.head, (*path.steps, ("key", key))),
                                 depth + 1, seen)
    elif hasattr(value, "__dict__") and not isinstance(value, (torch.nn.Module, type)) \
            and not callable(value):
        # A cache object (DynamicCache, a dataclass of tensors): its public attributes.
        for attr, item in vars(value).items():
            if not attr.startswith("_"):
                yield from _walk(item, ArgPath(path.head, (*path.steps, ("attr", attr))),
                                 depth + 1, seen)


def tensors_in(args: Sequence[Any], kwargs: dict[str, Any]) -> Iterator[tuple[ArgPath, Any]]:
    """Every tensor of a call's inputs, with its path (index, keyword, then steps)."""
    seen: set[int] = set()
    for i, value in enumerate(args):
        yield from _walk(value, ArgPath(i), 0, seen)
    for key, value in kwargs.items():
        yield from _walk(value, ArgPath(key), 0, seen)


def _observations(target: Any, sequences: dict[str, tuple[Point, ...]]
                  ) -> list[tuple[Point, dict[ArgPath, tuple[int, ...]]]]:
    """(point, path -> shape) for every call the scenario makes, eagerly."""
    from . import compat

    out: list[tuple[Point, dict[ArgPath, tuple[int, ...]]]] = []
    done: set[Point] = set()
    for points in sequences.values():
        for point in points:
            if point in done:
                continue
            done.add(point)
            if target.driver is None:
                args, kwargs = target.make_inputs(point)
                out.append((point, {p: tuple(t.shape) for p, t in tensors_in(args, kwargs)}))
                continue

            def fn(*args: Any, _point: Point = point, **kwargs: Any) -> Any:
                out.append((_point, {p: tuple(t.shape) for p, t in tensors_in(args, kwargs)}))
                return target.fn(*args, **kwargs)

            with compat.eager_stance():
                target.driver(fn, **point.as_dict())
    return out


def _symbol_of(values: list[int], points: list[Point], symbols: Sequence[str]) -> str | None:
    """The symbol whose value determines this size (and is told apart by it), if exactly one."""
    fits = []
    for symbol in symbols:
        forward: dict[Any, int] = {}
        backward: dict[int, Any] = {}
        ok = True
        for size, point in zip(values, points):
            v = point.get(symbol)
            if forward.setdefault(v, size) != size or backward.setdefault(size, v) != v:
                ok = False
                break
        if ok and len(forward) > 1:
            fits.append(symbol)
    return fits[0] if len(fits) == 1 else None


def _name(path: ArgPath, param_names: Sequence[str | None]) -> str:
    head = path.head
    if isinstance(head, int):
        head = param_names[head] if head < len(param_names) and param_names[head] else \
            f"args[{head}]"
    return str(ArgPath(head, path.steps))


def discover(scenario: Scenario, target: Any, sequences: dict[str, tuple[Point, ...]]
             ) -> tuple[tuple[Location, ...], tuple[str, ...]]:
    """The varying (argument, dim) pairs, and notes on what was left out and why."""
    observed = _observations(target, sequences)
    notes: list[str] = []
    paths: dict[ArgPath, None] = {}
    for _, shapes in observed:
        paths.update(dict.fromkeys(shapes))
    declared = {(dynamo_source(ref.path, target.param_names, target.var_keyword), d): ref.symbol
                for ref in target.dims for d in ref.dims}
    locations: list[Location] = []
    for path in paths:
        seen = [(point, shapes[path]) for point, shapes in observed if path in shapes]
        ranks = {len(shape) for _, shape in seen}
        name = _name(path, target.param_names)
        if len(seen) < len(observed) and len(ranks) == 1 and \
                len({shape for _, shape in seen}) > 1:
            notes.append(f"{name} is not in every call: its dims are searched where it is")
        if len(ranks) > 1:
            notes.append(f"{name} changes rank between calls: no mark can keep one graph")
            continue
        for dim in range(ranks.pop()):
            values = [shape[dim] for _, shape in seen]
            distinct = tuple(dict.fromkeys(values))
            if len(distinct) < 2:
                continue
            argument: int | str = path.head if isinstance(path.head, int) and not path.steps \
                else str(path)
            source = dynamo_source(path, target.param_names, target.var_keyword)
            # `dims:` says which symbol moves it; else the one symbol its sizes follow
            symbol = declared.get((source, dim)) or _symbol_of(
                values, [p for p, _ in seen], scenario.symbols)
            locations.append(Location(argument, dim, symbol, name, source, distinct))
    return tuple(locations), tuple(notes)


# --- measuring ------------------------------------------------------------------------------------

def _aggregate(name: str, marks: tuple[MarkChoice, ...], whole: str | None, runs: list[Run],
               checks: tuple[str, ...], cost: int) -> Evaluation:
    from .render.cells import reason as reason_text

    def total(field: str) -> int | None:
        values = [getattr(r, field) for r in runs]
        return None if any(v is None for v in values) else sum(values)

    def largest(field: str) -> int | None:
        values = [getattr(r, field) for r in runs]
        return None if any(v is None for v in values) else max(values)

    def timing(field: str) -> float | None:
        values = [getattr(r, field) for r in runs]
        return None if any(v is None for v in values) else round(sum(values), 3)

    statuses = [r.status for r in runs]
    matches = [r.outputs_match for r in runs]
    status = next((s for s in ("unsupported", "error") if s in statuses), "ok")
    if status == "ok" and False in matches:
        status = "mismatch"
    outputs = False if False in matches else None if None in matches else True
    error = next((f"{r.error.type}: {r.error.message}" for r in runs if r.error), None)
    reasons = tuple(dict.fromkeys(
        reason_text(e.reason).splitlines()[0] for r in runs for e in r.compile_events
        if e.recompile and e.reason))
    return Evaluation(name, marks, whole, status, total("compiles"), total("recompiles"),
                      total("graphs"), largest("guard_count"), largest("shape_env_guard_count"),
                      timing("steady_state_us"), timing("steady_state_min_us"),
                      timing("steady_state_p90_us"), outputs, reasons, checks, error, cost)


def _inf(value: int | None) -> float:
    return math.inf if value is None else value


def primary(e: Evaluation) -> tuple:
    """The objective before speed: ok first, then compiles, guards, shape-env guards."""
    return (e.status != "ok", _inf(e.compiles), _inf(e.guard_count),
            _inf(e.shape_env_guard_count))


def same_speed(a: Evaluation, b: Evaluation) -> bool:
    """Within the measured noise: the [fastest, p90] sample ranges overlap (n/a never decides)."""
    if None in (a.steady_state_min_us, a.steady_state_p90_us, b.steady_state_min_us,
                b.steady_state_p90_us):
        return True
    return a.steady_state_min_us <= b.steady_state_p90_us and \
        b.steady_state_min_us <= a.steady_state_p90_us  # type: ignore[operator]


def _unbacked(e: Evaluation) -> int:
    return sum(m.kind == "unbacked" for m in e.marks)


def ranked(evaluations: Iterable[Evaluation]) -> list[Evaluation]:
    """Best first, by the objective (see the module's docstring)."""
    evaluations = list(evaluations)
    fastest: dict[tuple, Evaluation] = {}
    for e in evaluations:
        held = fastest.get(primary(e))
        if held is None or (e.steady_state_us or math.inf) < (held.steady_state_us or math.inf):
            fastest[primary(e)] = e
    return sorted(evaluations, key=lambda e: (
        primary(e), not same_speed(e, fastest[primary(e)]), e.cost, _unbacked(e),
        e.steady_state_us or math.inf, e.name))


def worse(a: Evaluation, b: Evaluation) -> str | None:
    """How ``a`` is worse than ``b`` on the objective, in words; None when it is not."""
    if a.status != "ok" and b.status == "ok":
        return f"status {a.status}" + (f" ({a.error})" if a.error else "")
    for field, what in (("compiles", "compile"), ("guard_count", "guard"),
                        ("shape_env_guard_count", "shape-env guard")):
        x, y = getattr(a, field), getattr(b, field)
        if _inf(x) != _inf(y):
            if _inf(x) < _inf(y):
                return None
            return f"{x} {what}s instead of {y}" if x is not None else f"{what}s n/a"
    if not same_speed(a, b) and (a.steady_state_us or 0) > (b.steady_state_us or 0):
        return (f"{a.steady_state_us:.1f} µs/call instead of {b.steady_state_us:.1f} "
                "(beyond the measured spread)")
    return None


class Bench:
    """Measures candidates: the target loaded once, eager outputs once per sequence, a probe run
    per (candidate, sequence). Each candidate is measured at most once."""

    def __init__(self, scenario: Scenario, sequences: dict[str, tuple[Point, ...]],
                 budget: int | None = None,
                 on_measured: Callable[[Evaluation, int], None] | None = None,
                 pool: Any = None) -> None:
        from . import probe
        from .targets import loader

        self.scenario, self.sequences, self.budget = scenario, sequences, budget
        self.on_measured, self.pool = on_measured, pool
        self.target = loader.load(scenario)
        probe.warm_up(scenario.backend, scenario.backend_mode,
                      dict(scenario.backend_options or {}) or None)
        self.references = {name: probe.eager_reference(self.target, points, scenario.repeats)
                           for name, points in sequences.items()}
        self.measured: dict[Any, Evaluation] = {}
        self.runs: dict[str, list[Run]] = {}
        self._strategies: dict[Any, tuple[Strategy, Any]] = {}
        #: extra measurements that confirmed or undid a win on speed alone
        self.confirmations = 0

    def measure(self, key: Any, strategy: Strategy, marks: tuple[MarkChoice, ...],
                whole: str | None, cost: int, target: Any = None,
                checks: tuple[str, ...] = ()) -> Evaluation:
        if key in self.measured:
            return self.measured[key]
        if self.budget is not None and len(self.measured) >= self.budget:
            raise _BudgetSpent
        runs = self._probe_all(strategy, target)
        evaluation = _aggregate(strategy.name, marks, whole, runs, checks, cost)
        self.measured[key] = evaluation
        self.runs[strategy.name] = runs
        if self.on_measured is not None:
            self.on_measured(evaluation, len(self.measured))
        self._strategies[key] = (strategy, target)
        return evaluation

    def _probe_all(self, strategy: Strategy, target: Any = None) -> list[Run]:
        """One probe run per sequence, in a fresh Dynamo state each (as `run` does)."""
        from . import probe

        return [probe.probe(self.scenario, target or self.target, name, points, strategy,
                            self.references[name]) for name, points in self.sequences.items()]

    def measure_all(self, wanted: list[tuple[Any, Strategy, tuple[MarkChoice, ...], str | None,
                                             int]]) -> list[Evaluation]:
        """Several candidates of the plain target: on the pool's workers when there is one (each
        a probe run per sequence, as inline), else one after the other. Stops at the budget."""
        todo = [w for w in dict((w[0], w) for w in wanted).values() if w[0] not in self.measured]
        room = None if self.budget is None else max(0, self.budget - len(self.measured))
        spent = room is not None and len(todo) > room
        todo = todo[:room] if room is not None else todo
        if self.pool is None or len(todo) < 2:
            for key, strategy, marks, whole, cost in todo:
                self.measure(key, strategy, marks, whole, cost)
        else:
            self._on_pool(todo)
        if spent:
            raise _BudgetSpent
        return [self.measured[w[0]] for w in wanted]

    def _on_pool(self, todo: list) -> None:
        from .session import run_jobs
        from .isolation import Job

        # One scenario for the whole batch: a worker prepares it (target, eager outputs) once.
        variant = replace(self.scenario,
                          custom_strategies={**self.scenario.custom_strategies,
                                             **{t[1].name: t[1] for t in todo}},
                          strategies=tuple(t[1].name for t in todo),
                          points=dict(self.sequences))
        jobs = [Job(variant, t[1].name, name) for t in todo for name in self.sequences]
        runs: dict[str, list[Run]] = {}
        for run in run_jobs(jobs, pool=self.pool):
            runs.setdefault(run.strategy, []).append(run)
        for key, strategy, marks, whole, cost in todo:
            evaluation = _aggregate(strategy.name, marks, whole, runs.get(strategy.name, []), (),
                                    cost)
            self.measured[key] = evaluation
            self.runs[strategy.name] = runs.get(strategy.name, [])
            self._strategies[key] = (strategy, None)
            if self.on_measured is not None:
                self.on_measured(evaluation, len(self.measured))

    def candidates(self) -> list[Evaluation]:
        """What competes: markings and whole-function strategies, not the runs that only
        measure a form of one (environment, torch._check wrappers)."""
        return [v for k, v in self.measured.items() if k[0] not in ("env", "checks")]

    def again(self, e: Evaluation) -> Evaluation:
        """``e`` measured once more; its timing ranges widened by the new samples (a speed
        difference must survive the machine's drift between two measurements)."""
        key = next(k for k, v in self.measured.items() if v.name == e.name)
        strategy, target = self._strategies[key]
        runs = self._probe_all(strategy, target)
        self.confirmations += 1
        fresh = _aggregate(e.name, e.marks, e.whole_function, runs, e.checks, e.cost)
        if primary(fresh) != primary(e):  # not the same figures twice: keep the worse
            return max((e, fresh), key=primary)
        low = [v for v in (e.steady_state_min_us, fresh.steady_state_min_us) if v is not None]
        high = [v for v in (e.steady_state_p90_us, fresh.steady_state_p90_us) if v is not None]
        mid = [v for v in (e.steady_state_us, fresh.steady_state_us) if v is not None]
        widened = replace(e, steady_state_min_us=min(low) if low else None,
                          steady_state_p90_us=max(high) if high else None,
                          steady_state_us=round(sum(mid) / len(mid), 3) if mid else None)
        self.measured[key] = widened
        return widened


def _label(marks: tuple[MarkChoice, ...]) -> str:
    if not marks:
        return "no marks"
    return " ".join(f"{m.name}:{m.dim}={m.kind}" for m in marks)


def _marks(locations: Sequence[Location], choice: dict[int, str]) -> tuple[MarkChoice, ...]:
    return tuple(MarkChoice(locations[i].argument, locations[i].dim, locations[i].symbol, kind,
                            locations[i].name)
                 for i, kind in sorted(choice.items()) if kind != "static")


def _strategy(name: str, marks: tuple[MarkChoice, ...]) -> Strategy:
    return Strategy(name, f"suggest candidate: {name}",
                    marks=tuple(LocationMark(m.argument, m.dim, m.kind) for m in marks))


class Search:
    def __init__(self, bench: Bench, locations: tuple[Location, ...]) -> None:
        self.bench, self.locations = bench, locations

    def _wanted(self, choice: dict[int, str]) -> tuple:
        choice = {i: k for i, k in choice.items() if k != "static"}
        marks = _marks(self.locations, choice)
        return (("marks", frozenset(choice.items())), _strategy(_label(marks), marks), marks,
                None, len(marks))

    def marking(self, choice: dict[int, str]) -> Evaluation:
        return self.bench.measure(*self._wanted(choice))

    def markings(self, choices: list[dict[int, str]], whole: bool = False) -> list[Evaluation]:
        """Several markings (and the whole-function strategies) at once: in parallel on a pool."""
        # A whole-function strategy changes every varying dim and every other compiled frame
        # of the process: at equal figures, marking every dim (local, explicit) ranks first.
        extra = [(("whole", name), BUILTINS[name], (), name, len(self.locations) + 1)
                 for name in WHOLE_FUNCTION] if whole else []
        return self.bench.measure_all([*(self._wanted(c) for c in choices), *extra])

    def exhaustive(self) -> None:
        n = len(self.locations)
        self.markings([dict(enumerate(combo)) for combo in itertools.product(CHOICES, repeat=n)],
                      whole=True)

    def greedy(self) -> None:
        current: dict[int, str] = {}
        best = self.markings([current], whole=True)[0]
        while True:
            named = self._named(best)
            group = named or list(range(len(self.locations)))
            tries = [{**current, i: k} for i in group for k in ("dynamic", "unbacked")
                     if current.get(i) != k]
            # Dims that change at the same call: no single mark removes that recompile, all of
            # them together may (minimise() drops the ones that turn out not to be needed).
            tries += [{**current, **{i: k for i in group}} for k in ("dynamic", "unbacked")
                      if len(group) > 1 and any(current.get(i) != k for i in group)]
            if not tries:
                break
            step = ranked(self.markings(tries))[0]
            if ranked([step, best])[0] is best:
                break
            best, current = step, self._choice(step)
        self.minimise(current)

    def minimise(self, choice: dict[int, str]) -> dict[int, str]:
        """Drop or weaken marks while that does not make it worse (the greedy result's polish)."""
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
        for i, kind in sorted(choice.items()):
            out.append({j: k for j, k in choice.items() if j != i})
            if kind == "unbacked":
                out.append({**choice, i: "dynamic"})
        return out

    def _choice(self, e: Evaluation) -> dict[int, str]:
        index = {(loc.argument, loc.dim): i for i, loc in enumerate(self.locations)}
        return {index[(m.argument, m.dim)]: m.kind for m in e.marks}

    def _named(self, e: Evaluation) -> list[int]:
        """Varying dims that the candidate's recompile reasons name (by Dynamo source and dim)."""
        runs = self.bench.runs.get(e.name, [])
        named = {(d.get("source"), d.get("dim")) for r in runs for ev in r.compile_events
                 if ev.recompile and (d := ev.reason_detail)}
        return [i for i, loc in enumerate(self.locations) if (loc.source, loc.dim) in named]


# --- what the advice adds, measured -------------------------------------------------------------

def check_lines(marks: tuple[MarkChoice, ...], locations: tuple[Location, ...],
                param_names: Sequence[str | None]) -> tuple[str, ...]:
    """torch._check lines that tie marked dims of one symbol together (the vLLM fix's second
    half), plus ``>= 1`` for unbacked dims never seen below 1. Only top-level arguments."""
    sizes = {(loc.argument, loc.dim): loc.sizes for loc in locations}
    lines: list[str] = []
    groups: dict[str, list[MarkChoice]] = {}
    for m in marks:
        if isinstance(m.argument, int) and m.argument < len(param_names) and \
                param_names[m.argument] or isinstance(m.argument, str) and \
                m.argument.isidentifier() and m.argument in param_names:
            if m.kind == "unbacked" and min(sizes.get((m.argument, m.dim), (0,))) >= 1:
                lines.append(f"torch._check({_expr(m, param_names)} >= 1)")
            if m.symbol:
                groups.setdefault(m.symbol, []).append(m)
    for members in groups.values():
        first = members[0]
        for other in members[1:]:
            lines.append(f"torch._check({_expr(first, param_names)} == "
                         f"{_expr(other, param_names)})")
    return tuple(lines)


def _expr(m: MarkChoice, param_names: Sequence[str | None]) -> str:
    name = param_names[m.argument] if isinstance(m.argument, int) else m.argument
    return f"{name}.shape[{m.dim}]"


def checked_target(target: Any, lines: tuple[str, ...]) -> Any:
    """The target behind a wrapper with the same parameters that runs ``lines`` first (none:
    the bare wrapper, the fair comparison). Dynamo traces the wrapper and inlines the target,
    so sources stay L['x'] and only the lines differ between the two."""
    fn = target.fn
    signature = inspect.signature(fn)
    params, call = [], []
    defaults: dict[str, Any] = {}
    for p in signature.parameters.values():
        text = p.name
        if p.default is not p.empty:
            defaults[p.name] = p.default
            text += f"=__defaults[{p.name!r}]"
        if p.kind == p.VAR_POSITIONAL:
            params.append("*" + p.name)
            call.append("*" + p.name)
        elif p.kind == p.VAR_KEYWORD:
            params.append("**" + p.name)
            call.append("**" + p.name)
        elif p.kind == p.KEYWORD_ONLY:
            if not any(x.startswith("*") for x in params):
                params.append("*")
            params.append(text)
            call.append(f"{p.name}={p.name}")
        else:
            params.append(text)
            call.append(p.name)
    body = "".join(f"    {line}\n" for line in lines)
    fn_name = getattr(fn, "__name__", "target")
    if not fn_name.isidentifier() or fn_name.startswith("__"):
        fn_name = "target"
    source = (f"def {fn_name}({', '.join(params)}):\n{body}"
              f"    return __target({', '.join(call)})\n")
    import torch

    scope: dict[str, Any] = {"torch": torch, "__target": fn, "__defaults": defaults}
    exec(compile(source, f"<recompile-probe checks for {target.name}>", "exec"), scope)  # noqa: S102
    wrapper = scope[fn_name]
    return replace(target, fn=wrapper, compiled=None)


def _environment(marks: tuple[MarkChoice, ...], locations: tuple[Location, ...]
                 ) -> tuple[dict[str, str], str | None]:
    """The env-var form of the marks (TORCH_COMPILE_{DYNAMIC,UNBACKED}_SOURCES, per dim)."""
    source = {(loc.argument, loc.dim): loc.source for loc in locations}
    by_kind: dict[str, list[str]] = {}
    for m in marks:
        src = source.get((m.argument, m.dim))
        if src is None or m.kind not in ("dynamic", "unbacked"):
            return {}, f"{m.name} has no plain Dynamo source: no environment form"
        by_kind.setdefault(m.kind, []).append(f"{src}:{m.dim}")
    env = {}
    if "dynamic" in by_kind:
        env["TORCH_COMPILE_DYNAMIC_SOURCES"] = ",".join(by_kind["dynamic"])
    if "unbacked" in by_kind:
        env["TORCH_COMPILE_UNBACKED_SOURCES"] = ",".join(by_kind["unbacked"])
    return env, None


_ENV_CONFIG = {"TORCH_COMPILE_DYNAMIC_SOURCES": "torch.compiler.config.dynamic_sources",
               "TORCH_COMPILE_UNBACKED_SOURCES": "torch.compiler.config.unbacked_sources"}


def _code(e: Evaluation, target_name: str, checks: tuple[str, ...]) -> tuple[str, ...]:
    if e.whole_function:
        s = BUILTINS[e.whole_function]
        return (f"# no marks: the {e.whole_function} strategy ({s.summary()})",)
    if not e.marks:
        return ("# nothing to add: no marking measured better than none",)
    lines = [f"# in eager code, right before each call of {target_name}:"]
    for m in e.marks:
        module, fn = MARKS[m.kind]
        lines.append(f"{module}.{fn}({m.name}, {m.dim})")
    if checks:
        lines.append(f"# first lines inside {target_name} (measured: they helped):")
        lines.extend(checks)
    return tuple(lines)


def _yaml(e: Evaluation, name: str, runs: list[Run]) -> str:
    max_compiles = max((r.compiles or 0) for r in runs) if runs else 0
    max_recompiles = max((r.recompiles or 0) for r in runs) if runs else 0
    lines = []
    if e.whole_function or not e.marks:
        strategy = e.whole_function or "default"
        lines.append(f"# {strategy} needs no custom strategy: list it in `strategies:`")
    else:
        strategy = name
        lines += ["custom_strategies:", f"  {name}:",
                  f"    description: \"suggest: {_label(e.marks)}\"", "    marks:"]
        lines += [f"      - {{argument: {_yaml_scalar(m.argument)}, dim: {m.dim}, kind: {m.kind}}}"
                  for m in e.marks]
    lines += ["expect:", f"  {strategy}:", f"    max_compiles: {max_compiles}",
              f"    max_recompiles: {max_recompiles}", "    outputs_match: true"]
    return "\n".join(lines) + "\n"


def _yaml_scalar(value: int | str) -> str:
    if isinstance(value, int):
        return str(value)
    return value if re.fullmatch(r"[A-Za-z_]\w*", value) else '"' + value.replace('"', '\\"') + '"'


def _unfixable(runs: dict[str, list[Run]], name: str) -> tuple[Unfixable, ...]:
    from .render.cells import reason as reason_text

    out = []
    for run in runs.get(name, []):
        for e in run.compile_events:
            if not e.recompile:
                continue
            kind = e.reason_kind
            text = reason_text(e.reason).splitlines()[0] if e.reason else (e.fail_reason or "?")
            if kind in ("python_scalar_change", "other") and "len(" in text:
                kind_for_remedy = "list_length_change"
            else:
                kind_for_remedy = kind
            out.append(Unfixable(run.sequence_name, e.call_index, text, kind,
                                 REMEDIES.get(kind_for_remedy or "", SIZE_REMEDY)))
    return tuple(out)


# --- the whole command ----------------------------------------------------------------------------

def suggest(scenario: Scenario, *, sequence: str | None = None, budget: int | None = None,
            strategy_name: str = "suggested", pool: Any = None,
            on_measured: Callable[[Evaluation, int], None] | None = None,
            on_plan: Callable[[str, int | None], None] | None = None) -> Suggestion:
    from .session import environment

    sequences = dict(scenario.points)
    if sequence is not None:
        if sequence not in sequences:
            from .spec import suggest as did_you_mean

            raise UsageError(f"--sequence: no sequence named {sequence!r} in the scenario",
                             did_you_mean(sequence, list(sequences)) or
                             f"Sequences: {', '.join(sequences)}.")
        sequences = {sequence: sequences[sequence]}
    if budget is not None and budget < 1:
        raise UsageError("--budget: at least 1 candidate")
    bench = Bench(scenario, sequences, budget, on_measured, pool)
    locations, notes = discover(scenario, bench.target, sequences)
    search = Search(bench, locations)
    exhaustive = len(locations) <= EXHAUSTIVE_MAX
    planned = 3 ** len(locations) + len(WHOLE_FUNCTION) if exhaustive else None
    if on_plan is not None:
        on_plan("exhaustive" if exhaustive else "greedy", planned)
    complete = True
    try:
        search.exhaustive() if exhaustive else search.greedy()
    except _BudgetSpent:
        complete = False
    env_first = None
    try:
        env_first = _fastest_form(bench, locations)
    except _BudgetSpent:
        complete = False
    best = _settle(bench)
    necessity: list[Necessity] = []
    checks_with = checks_without = None
    verdict = None
    change = None
    if best is not None and best.status == "ok":
        try:
            necessity = _necessity(search, best)
        except _BudgetSpent:
            complete = False
            notes += ("the budget ran out before every mark's necessity was measured",)
        lines = check_lines(best.marks, locations, bench.target.param_names) \
            if not best.whole_function else ()
        checks_used: tuple[str, ...] = ()
        if lines:
            try:
                checks_with, checks_without, verdict = _measure_checks(bench, best, lines)
                if worse(checks_without, checks_with) is not None:
                    checks_used = lines
            except _BudgetSpent:
                complete = False
                notes += ("the budget ran out before the torch._check lines were measured",)
        env, env_note = _environment(best.marks, locations) if not best.whole_function \
            else ({}, None)
        env_measured = None
        if env:
            try:
                env_measured, env_note = env_first if env_first and env_first[0].name == \
                    best.name + " (environment)" else _measure_environment(bench, best, env)
            except _BudgetSpent:
                env_note = "not measured: the budget ran out"
        change = Change(_code(best, _target_name(scenario), checks_used), env, env_measured,
                        env_note, _yaml(best, _free_name(scenario, strategy_name),
                                        bench.runs.get(best.name, [])))
    if bench.confirmations:
        notes += (f"{bench.confirmations} confirmation runs: a win on µs/call alone over a "
                  "cheaper candidate was measured again before it counted",)
    # Only what competes (Bench.candidates): the forms measured for the recommendation are shown
    # with it, not ranked against it.
    candidates = tuple(ranked(bench.candidates()))
    if best is not None:  # later re-measurements (necessity) must not reorder the table under it
        best = next((c for c in candidates if c.name == best.name), best)
        candidates = (*(c for c in candidates if c.name == best.name),
                      *(c for c in candidates if c.name != best.name))
    return Suggestion(
        Tool("recompile-probe", __version__), environment(),
        ScenarioRef(scenario.name, scenario.path), tuple(sequences), scenario.backend,
        locations, "exhaustive" if exhaustive else "greedy", exhaustive and complete, budget,
        best, candidates, tuple(necessity), checks_with, checks_without, verdict,
        _unfixable(bench.runs, best.name) if best is not None else (), change,
        tuple(notes), complete)


def _fastest_form(bench: Bench, locations: tuple[Location, ...]
                  ) -> tuple[Evaluation, str] | None:
    """A marking is as fast as its faster form. The marks cost a Python call per mark per call
    in eager code; the same marking as TORCH_COMPILE_*_SOURCES costs none. Without this, a
    whole-function unbacked_sources naming the same dims would beat the marks on µs/call alone,
    while it is the same marking. The leading marking gets its environment form measured, and
    its timing becomes that form's when the form gives the same figures and is faster."""
    order = ranked(bench.candidates())
    if not order:
        return None
    marked = [e for e in order if primary(e) == primary(order[0]) and e.marks]
    if not marked or marked[0].status != "ok":
        return None
    leader = marked[0]
    env, _ = _environment(leader.marks, locations)
    if not env:
        return None
    measured, note = _measure_environment(bench, leader, env)
    if primary(measured) == primary(leader) and \
            (measured.steady_state_us or math.inf) < (leader.steady_state_us or math.inf):
        key = next(k for k, v in bench.measured.items() if v.name == leader.name)
        bench.measured[key] = replace(leader, steady_state_us=measured.steady_state_us,
                                      steady_state_min_us=measured.steady_state_min_us,
                                      steady_state_p90_us=measured.steady_state_p90_us,
                                      form="environment",
                                      marks_steady_state_us=leader.steady_state_us)
    return measured, note


def _settle(bench: Bench, rounds: int = 3) -> Evaluation | None:
    """The winner, with any win on speed alone over a cheaper candidate confirmed: both are
    measured again (alternating) and their ranges widened; if they then overlap, the cheaper one
    wins. This machine drifts between two measurements more than within one."""
    for _ in range(rounds):
        order = ranked(bench.candidates())
        if not order:
            return None
        best = order[0]
        cheaper = [e for e in order[1:] if primary(e) == primary(best)
                   and (e.cost, _unbacked(e)) < (best.cost, _unbacked(best))]
        if not cheaper:
            return best
        rival = cheaper[0]
        bench.again(rival)
        bench.again(best)
    return ranked(bench.candidates())[0]


def _necessity(search: Search, best: Evaluation) -> list[Necessity]:
    """For each mark: the measured variant without it (and unbacked -> dynamic), and how it is
    worse. A variant that is not worse would have won: the list then shows it plainly."""
    if best.whole_function:
        return []
    choice = search._choice(best)
    out = []
    for i, kind in sorted(choice.items()):
        mark = next(m for m in best.marks if (m.argument, m.dim) == (
            search.locations[i].argument, search.locations[i].dim))
        changes = [("dropped", {j: k for j, k in choice.items() if j != i})]
        if kind == "unbacked":
            changes.append(("dynamic", {**choice, i: "dynamic"}))
        for what, variant in changes:
            e = search.marking(variant)
            if primary(e) == primary(best) and worse(e, best):  # slower only: confirm it
                e, best = search.bench.again(e), search.bench.again(best)
            why = worse(e, best) or "not worse (ties on every measured figure)"
            out.append(Necessity(mark, what, e.name, why, e.reasons[0] if e.reasons else None))
    return out


def _measure_checks(bench: Bench, best: Evaluation, lines: tuple[str, ...]
                    ) -> tuple[Evaluation, Evaluation, str]:
    strategy = _strategy(best.name + " +checks", best.marks)
    bare = _strategy(best.name + " (wrapped)", best.marks)
    without = bench.measure(("checks", False, best.name), bare, best.marks, None, best.cost,
                            checked_target(bench.target, ()))
    with_ = bench.measure(("checks", True, best.name), strategy, best.marks, None, best.cost,
                          checked_target(bench.target, lines), lines)
    if primary(with_) == primary(without) and (worse(with_, without) or worse(without, with_)):
        with_, without = bench.again(with_), bench.again(without)  # a speed-only difference
    how = worse(with_, without)
    if how is not None:
        verdict = f"made it worse: {how}"
    else:
        better = worse(without, with_)
        verdict = (f"helped: without them {better}" if better else
                   "changed nothing measured (same status, compiles and guards; µs/call within "
                   "the spread)")
    return with_, without, verdict


def _measure_environment(bench: Bench, best: Evaluation, env: dict[str, str]
                         ) -> tuple[Evaluation, str]:
    config = {_ENV_CONFIG[k]: v for k, v in env.items()}
    strategy = Strategy(best.name + " (environment)", "suggest: the environment form",
                        config=config)
    e = bench.measure(("env", best.name), strategy, (), None, best.cost)
    if e.status == "unsupported":
        return e, f"not available here: {e.error}"
    if primary(e) == primary(best):  # equivalence is about what Dynamo did; µs drift apart
        return e, "measured: the same status, compiles and guards as the marks"
    how = worse(e, best) or "fewer compiles or guards than the marks"
    return e, f"measured: not equivalent to the marks ({how})"


def _target_name(scenario: Scenario) -> str:
    return scenario.target.rpartition(":")[2].rpartition(".")[2] or scenario.target


def _free_name(scenario: Scenario, wanted: str) -> str:
    known = set(scenario.known_strategies())
    name, n = wanted, 2
    while name in known:
        name, n = f"{wanted}_{n}", n + 1
    return name


# --- --write --------------------------------------------------------------------------------------

def write_into(path: Path, yaml_text: str, strategy: str) -> None:
    """Add the suggested custom strategy, its budget, and its name in `strategies:` to the
    scenario file, keeping every other line (comments, layout) as it is. The file is re-validated
    and put back as it was if the result does not load."""
    from . import scenario as scenario_mod
    from .artefacts import write_atomic

    import yaml

    original = path.read_text(encoding="utf-8")
    data = yaml.safe_load(original) or {}
    if strategy in (data.get("expect") or {}):
        raise UsageError(f"--write: {path} already has an expect: budget for {strategy!r}",
                         "Edit that budget by hand with the figures above, or write the "
                         "suggestion under another name with --name.")
    text = original
    blocks = _split_blocks(yaml_text)
    for key, body in blocks.items():
        text = _add_to_mapping(text, key, body, path)
    import yaml

    listed = (yaml.safe_load(original) or {}).get("strategies")
    if not (isinstance(listed, list) and strategy in listed):  # a built-in may be listed already
        text = _add_to_list(text, "strategies", strategy, path)
    write_atomic(path, text)
    try:
        scenario_mod.load(path)
    except Exception:
        write_atomic(path, original)
        raise


def _split_blocks(yaml_text: str) -> dict[str, list[str]]:
    blocks: dict[str, list[str]] = {}
    current = None
    for line in yaml_text.splitlines():
        if line.startswith("#"):
            continue
        if not line.startswith(" ") and line.endswith(":"):
            current = line[:-1]
            blocks[current] = []
        elif current is not None:
            blocks[current].append(line)
    return blocks


def _top_level(text: str, key: str) -> re.Match | None:
    return re.search(rf"(?m)^{re.escape(key)}:[ \t]*(?P<rest>[^\n]*)$", text)


def _add_to_mapping(text: str, key: str, body: list[str], path: Path) -> str:
    found = _top_level(text, key)
    if found is None:
        sep = "" if text.endswith("\n") or not text else "\n"
        return text + sep + f"{key}:\n" + "\n".join(body) + "\n"
    rest = found.group("rest").split("#", 1)[0].strip()
    if rest:
        raise UsageError(f"--write: `{key}:` in {path} is written inline ({rest[:30]}...)",
                         "Paste the suggested block by hand, or write the key as a block.")
    end = _block_end(text, found.end())
    insert = "\n".join(body) + "\n"
    return text[:end] + insert + text[end:]


def _block_end(text: str, start: int) -> int:
    """Where the block that starts after ``start`` ends: the next top-level line (or the end),
    after the block's last non-blank line."""
    pos = text.find("\n", start)
    if pos == -1:
        return len(text)
    pos += 1
    last = pos
    for match in re.finditer(r"(?m)^(?P<line>[^\n]*)\n?", text[pos:]):
        line = match.group("line")
        if line and not line[0].isspace() and not line.startswith("#"):
            break
        if line.strip() and not line.lstrip().startswith("#"):
            last = pos + match.end()
    return last


def _add_to_list(text: str, key: str, item: str, path: Path) -> str:
    found = _top_level(text, key)
    rest = found.group("rest").split("#", 1)[0].strip() if found else ""
    if found is None or (rest and not rest.startswith("[")):
        return text  # no list, or "all": every custom strategy runs already
    if rest.startswith("["):
        close = text.find("]", found.start())
        if close == -1:
            raise UsageError(f"--write: cannot read `{key}:` in {path}")
        return text[:close] + f", {item}" + text[close:]
    end = _block_end(text, found.end())
    indent = re.search(r"(?m)^([ \t]*)- ", text[found.end():end])
    prefix = indent.group(1) if indent else "  "
    return text[:end] + f"{prefix}- {item}\n" + text[end:]
