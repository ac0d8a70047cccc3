"""`explain`: why each recompile happened, which guard changed, and which strategy measurably
removed it in the same run. Pure functions over result records (no torch).
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import asdict, dataclass, field
from typing import Any, Mapping

from . import analysis
from .model import SHAPE_ENV, CacheEntry, GuardLine, Report, Run
from .strategies import BATCH_SOURCES, MARKS, Strategy

#: guards compared field by field when their source is the same in both entries
_TENSOR_FIELDS = re.compile(
    r"(?P<key>size|stride|device|requires_grad)=(?P<value>\[[^\]]*\]|[^,)]+)")
_DTYPE = re.compile(r"\btorch\.(?P<value>[a-z]+\d*)\b")

#: why no strategy can remove a recompile of this kind by marking or config
NO_FIX_WHY = {
    "dtype_change": "a dtype change cannot be removed by marking dims: each dtype gets its own "
                    "graph. Cast the inputs to one dtype before the call.",
    "requires_grad_change": "requires_grad is part of every tensor guard: keep it the same "
                            "across calls (e.g. detach, or run under torch.no_grad()).",
    "stride_change": "the input's layout changed: make it contiguous (or the same layout) before "
                     "the call.",
    "python_scalar_change": "a Python number is specialized as a constant: pass it as a tensor, "
                            "or let Dynamo treat it as dynamic (e.g. "
                            "torch._dynamo.config.specialize_float = False for floats).",
    "global_or_config_change": "global state (grad mode, autocast, a config) differs between "
                               "calls: keep it the same, or compile one function per state.",
    "recompile_limit_hit": "the frame ran out of recompiles: remove the recompiles above it, or "
                           "raise compile: {recompile_limit: N} if they are intended.",
    "zero_one_specialization": "no strategy in this run kept the batch dim symbolic through "
                               "sizes 0 and 1; try mark_unbacked or unbacked_sources.",
    "static_size_change": "no strategy in this run made the changing dim dynamic.",
    "shape_env_guard": "a symbolic guard failed; no strategy in this run avoided it. Read the "
                       "expression: it names the relation the new sizes break.",
    "duck_sizing": "two unrelated dims had the same size at the first compile, so Dynamo "
                   "equated them (duck sizing); give them different sizes in the first call, "
                   "or set torch.fx.experimental._config.use_duck_shape = False.",
    "user_specialization": "the user's code forces it to a constant (the line below).",
    "type_or_id_change": "an argument's type or identity changed (a module or object swapped): "
                         "pass the same object each call, or compile one function per type.",
    "backend_change": "the same code was compiled with another backend callable: reuse one "
                      "backend object (or functools.partial) for every torch.compile.",
    "other": "no strategy in this run removed it.",
}


@dataclass(frozen=True)
class FieldChange:
    kind: str
    source: str | None
    before: str
    after: str
    fields: dict[str, tuple[str, str]] = field(default_factory=dict)
    #: the user line behind the guard (the new entry's; a tensor's first use), or None
    origin: dict | None = None

    def describe(self) -> str:
        if self.fields:
            changes = "; ".join(f"{k}={a} → {k}={b}" for k, (a, b) in self.fields.items())
            return f"{self.kind} {self.source or ''} {changes}".replace("  ", " ")
        return f"{self.kind} {self.before} → {self.after}"


@dataclass(frozen=True)
class GuardDiff:
    function: str
    old: str | None  #: compile id
    new: str | None
    added: tuple[GuardLine, ...]
    removed: tuple[GuardLine, ...]
    changed: tuple[FieldChange, ...]


def _tensor_fields(text: str) -> dict[str, str]:
    fields = {m.group("key"): m.group("value").strip() for m in _TENSOR_FIELDS.finditer(text)}
    dtype = _DTYPE.search(text)
    if dtype:
        fields["dtype"] = dtype.group("value")
    return fields


def _keyed(entry: CacheEntry) -> dict[tuple, GuardLine]:
    """TENSOR_MATCH guards are keyed by source (so a change is one change); others by text."""
    out: dict[tuple, GuardLine] = {}
    for g in entry.guards:
        key = (g.kind, g.source) if g.kind == "TENSOR_MATCH" else (g.kind, g.source, g.text)
        out.setdefault(key, g)
    return out


def guard_diff(old: CacheEntry, new: CacheEntry) -> GuardDiff:
    before, after = _keyed(old), _keyed(new)
    added = tuple(g for k, g in after.items() if k not in before)
    removed = tuple(g for k, g in before.items() if k not in after)
    changed = []
    for key in before.keys() & after.keys():
        a, b = before[key], after[key]
        if a.text != b.text:
            fa, fb = _tensor_fields(a.text), _tensor_fields(b.text)
            diff = {k: (fa.get(k, "-"), fb.get(k, "-")) for k in {**fa, **fb}
                    if fa.get(k) != fb.get(k)}
            changed.append(FieldChange(a.kind, a.source, a.text, b.text, diff,
                                       b.origin or a.origin))
    changed.sort(key=lambda c: (c.kind, c.source or ""))
    return GuardDiff(new.function, old.compile_id, new.compile_id, added, removed, tuple(changed))


def diffs(run: Run) -> list[GuardDiff]:
    """Between consecutive entries of each frame, oldest first."""
    by_frame: dict[tuple, list[CacheEntry]] = {}
    for entry in run.entries:
        by_frame.setdefault((entry.function, entry.filename, entry.line), []).append(entry)
    return [guard_diff(a, b) for entries in by_frame.values() for a, b in zip(entries, entries[1:])]


def kinds(entry: CacheEntry) -> dict[str, int]:
    return dict(Counter(g.kind for g in entry.guards).most_common())


def shape_env_guards(entry: CacheEntry) -> list[str]:
    return [g.text for g in entry.guards if g.kind == SHAPE_ENV]


# --- measured fixes -------------------------------------------------------------------------------

def _name(source: str | None) -> str:
    match = re.fullmatch(r"L\['([^']+)'\](.*)", source or "")
    return match.group(1) + match.group(2) if match else (source or "arg")


#: Targets that already carry the torch._check lines of the vLLM fix: with them, mark_unbacked's
#: checks were part of what ran, so they are measured, not advice.
CHECKED_TARGETS = frozenset({"logprobs.count_greater_than_checked"})


#: (Dynamo source, dim, size symbol) of every dim a symbol moves, e.g. ("L['x']", 0, "B")
DimSources = list[tuple[str, int, str]]


def _triples(dims: Any) -> DimSources:
    """(source, dim) pairs are batch dims: (source, dim, "B")."""
    return [tuple(d) if len(d) == 3 else (d[0], d[1], "B") for d in dims]  # type: ignore[misc]


def acting_symbols(run: Run) -> tuple[str, ...]:
    """The symbols a one-kind mark acted on in this run: those that vary over its points."""
    from .sizes import Point, varying

    points = [Point.of(p) for p in run.points] or [Point.batch(b) for b in run.sequence]
    return varying(points)


def checks_for(strategy: Strategy, dims: DimSources, acting: tuple[str, ...] = ("B",)
               ) -> list[str]:
    """The torch._check lines that go with mark_unbacked (one symbol per size, no 0/1 guard, no
    runtime Eq assert), written from a template: no run executes them unless the target has them."""
    lines, dims = [], _triples(dims)
    for symbol, (kind, _) in strategy.plan(acting).items():
        group = [(s, d) for s, d, sym in dims if sym == symbol]
        if kind != "unbacked" or not group:
            continue
        (first, d0), rest = group[0], group[1:]
        lines.append(f"torch._check({_name(first)}.shape[{d0}] >= 1)")
        lines += [f"torch._check({_name(first)}.shape[{d0}] == {_name(s)}.shape[{d}])"
                  for s, d in rest]
    return lines


def change_for(strategy: Strategy, dims: DimSources, checks_measured: bool = False,
               acting: tuple[str, ...] = ("B",)) -> list[str]:
    """The concrete change to the user's code that this strategy stands for.

    ``dims``: (Dynamo source, dim, symbol) of every dim that follows a size symbol; ``acting``:
    the symbols a one-kind mark applies to. The torch._check lines are part of it only when
    ``checks_measured`` (the target that ran has them); otherwise they are advice
    (``checks_for``).
    """
    lines: list[str] = []
    dims = _triples(dims)
    if strategy.dynamic is not None:
        lines.append(f"torch.compile(fn, dynamic={strategy.dynamic})")
    plan = strategy.plan(acting)
    if plan:
        lines.append("# right before each call, in eager code (outside the compiled region):")
        for source, dim, symbol in dims:
            if symbol not in plan:
                continue
            kind, options = plan[symbol]
            module, fn = MARKS[kind]
            opts = "".join(f", {k}={v!r}" for k, v in options.items())
            lines.append(f"{module}.{fn}({_name(source)}, {dim}{opts})")
        checks = checks_for(strategy, dims, acting)
        if checks and checks_measured:
            lines.append("# inside the compiled function (already in the target that ran):")
            lines += checks
    sources = ",".join(dict.fromkeys(f"{s}:{d}" for s, d, sym in dims if sym in acting))
    for dotted, value in strategy.config.items():
        value = sources if value == BATCH_SOURCES else value
        lines.append(f"{dotted} = {value!r}")
    if strategy.stance:
        lines.append(f"torch.compiler.set_stance({strategy.stance!r})")
    for key, value in strategy.compile.items():
        lines.append(f"torch.compile(fn, {key}={value!r})")
    if strategy.as_is:
        lines.append("keep the target's own torch.compile decoration")
    return lines or ["torch.compile(fn)  # the defaults"]


@dataclass(frozen=True)
class Fix:
    strategy: str
    change: tuple[str, ...]  #: what the measured run did, as a change to the user's code
    compiles: int | None
    steady_state_us: float | None
    #: lines no run of this report executed (e.g. mark_unbacked's torch._check template)
    advice: tuple[str, ...] = ()


@dataclass(frozen=True)
class Recompile:
    call_index: int
    batch_before: int | None
    batch_after: int
    compile_id: str | None
    reason: str | None
    reason_kind: str | None
    reason_detail: dict | None
    fixes: tuple[Fix, ...]
    no_fix_why: str | None
    #: what moved at this call: "B 1 → 2", "S 7 → 33", "step 1 at B 2, S 7" (analysis.moved)
    change: str = ""
    #: the point of the call, every size symbol -> size; None in a report written before points
    sizes: dict | None = None
    #: per failing guard line of ``reason``: the user line behind it (an origin dict) or None
    reason_origins: tuple[dict | None, ...] | None = None
    #: user_specialization: the line to change, why marking alone cannot help, and what a run
    #: of this report that marked the dim did (measured), or that none measured it
    specialization: str | None = None


def recompiles(run: Run, runs: list[Run], strategies: Mapping[str, Strategy],
               dims: DimSources) -> list[Recompile]:
    """Each recompile of ``run``, with the strategies of the same sequence that measurably did
    not recompile on that call and matched eager."""
    out = []
    events = {e.compile_id: e for e in run.compile_events}
    for t in analysis.transitions(run):
        event = events.get(t.compile_id)
        fixes = []
        for other in runs:
            if other is run or not analysis.eligible(other) or other.outputs_match is not True:
                continue
            call = other.calls[t.call_index] if t.call_index < len(other.calls) else None
            if call is None or call.event in ("recompile", "error", "eager"):
                continue
            strategy = strategies.get(other.strategy)
            if strategy is None:
                continue
            measured = other.target in CHECKED_TARGETS
            acting = acting_symbols(other)
            fixes.append(Fix(other.strategy, tuple(change_for(strategy, dims, measured, acting)),
                             other.compiles, other.steady_state_us,
                             () if measured else tuple(checks_for(strategy, dims, acting))))
        fixes.sort(key=lambda f: (f.compiles if f.compiles is not None else 1 << 30,
                                  f.steady_state_us or 0.0))
        kind = event.reason_kind if event else None
        call = run.calls[t.call_index] if t.call_index < len(run.calls) else None
        found = event.reason_origins if event else None
        special = None
        if kind == "user_specialization":
            special = specialization_fix(event.reason_detail or {}, (found or (None,))[0],
                                         t.call_index, run, runs, strategies)
        out.append(Recompile(t.call_index, t.batch_before, t.batch_after, t.compile_id, t.reason,
                             kind, event.reason_detail if event else None, tuple(fixes),
                             None if fixes else NO_FIX_WHY.get(kind or "other",
                                                               NO_FIX_WHY["other"]),
                             analysis.moved(run, t), call.sizes if call else None,
                             None if found is None else tuple(found), special))
    return out


def _marks(strategy: Strategy | None) -> bool:
    """The strategy marks dims (mark_dynamic, mark_unbacked, ...) or names them as sources."""
    return strategy is not None and (strategy.mark is not None or any(
        v == BATCH_SOURCES for v in strategy.config.values()))


def specialization_fix(detail: Mapping[str, Any], origin: Mapping[str, Any] | None,
                       call_index: int, run: Run, runs: list[Run],
                       strategies: Mapping[str, Strategy]) -> str:
    """The fix for a size the user's code forced to a constant: the line to change, why marking
    cannot help, and what each marking run of the same sequence measurably did at that call."""
    source = detail.get("source") or "the value"
    if detail.get("what") == "size" and detail.get("dim") is not None:
        source = f"{source}.size()[{detail['dim']}]"
    value = detail.get("expected")
    if origin and origin.get("line") is not None:
        import os

        code = f" `{origin['code']}`" if origin.get("code") else ""
        line = f"{os.path.basename(str(origin['file']))}:{origin['line']}{code}"
        head = (f"change {line}: it needs {source} as a concrete int"
                f"{f' (== {value})' if value else ''}, so every new value compiles again "
                "(e.g. keep the loop or branch on tensors, or pass the count as a tensor).")
    else:
        head = (f"the user's code needs {source} as a concrete int (the line is n/a in this "
                "torch): change that code.")
    why = ("Marking alone cannot help: a marked dim that user code specializes raises a "
           "constraint violation (mark_dynamic) or is specialized and recompiles anyway.")
    measured = []
    for other in runs:
        if other is run or not _marks(strategies.get(other.strategy)):
            continue
        if other.status == "error" and other.error is not None and (
                other.error.call_index is None or other.error.call_index <= call_index):
            measured.append(f"{other.strategy} raised {other.error.type}: "
                            f"{other.error.message}")
            continue
        call = other.calls[call_index] if call_index < len(other.calls) else None
        if call is None or other.status != "ok":
            continue
        if call.event == "recompile":
            measured.append(f"{other.strategy} recompiled anyway at call {call_index}")
        elif call.event == "hit":
            measured.append(f"{other.strategy} did not recompile at call {call_index}")
    tail = ("Measured in this report: " + "; ".join(m.rstrip(".") for m in measured) + "."
            if measured else
            "No run of this report marked that dim: not measured.")
    return f"{head} {why} {tail}"


# --- cost -----------------------------------------------------------------------------------------

def slow_winner(runs: list[Run], ratio: float = 1.2) -> str | None:
    """A note when a strategy with the fewest compiles is the slowest to run (by >= ratio).

    "Slowest" is a claim about every timed run: none is made while any of them is too noisy to
    rank (analysis.noisy); ``noise_note`` says which.
    """
    timed = [r for r in runs if analysis.eligible(r) and r.steady_state_us is not None]
    if len(timed) < 2 or any(analysis.noisy(r) for r in timed):
        return None
    fewest = min(r.compiles for r in timed)  # type: ignore[type-var]
    slowest = max(timed, key=lambda r: r.steady_state_us)  # type: ignore[arg-type,return-value]
    fastest = min(timed, key=lambda r: r.steady_state_us)  # type: ignore[arg-type,return-value]
    if slowest.compiles == fewest and any(r.compiles != fewest for r in timed) and \
            slowest.steady_state_us >= ratio * fastest.steady_state_us:
        return (f"{slowest.strategy} compiles least ({slowest.compiles}) but runs slowest: "
                f"{slowest.steady_state_us:.1f} µs/call vs {fastest.steady_state_us:.1f} "
                f"({fastest.strategy}).")
    return None


def noise_note(runs: list[Run]) -> str | None:
    """Which runs' µs/call is too noisy to rank on, with the spread that says so."""
    loud = [r for r in runs if r.status == "ok" and analysis.noisy(r)]
    if not loud:
        return None
    return (f"µs/call too noisy to rank (~; median > {analysis.NOISE_RATIO}x the fastest "
            f"sample): {'; '.join(analysis.noisy_line(r) for r in loud)}. Such a figure decides "
            "no winner; rerun with OMP_NUM_THREADS=1 on a quiet machine, or more repeats.")


# --- the whole explanation ------------------------------------------------------------------------

@dataclass(frozen=True)
class Explanation:
    run: Run
    diffs: tuple[GuardDiff, ...]
    recompiles: tuple[Recompile, ...]


def explain(report: Report, strategies: Mapping[str, Strategy], dims: DimSources,
            chosen: list[str] | None = None,
            sequence: str | None = None) -> tuple[list[Explanation], list[str]]:
    """Explanations for the chosen strategies (default: every one that compiled more than once),
    and the cost notes per sequence."""
    out, notes = [], []
    for name, _ in report.sequences():
        if sequence is not None and name != sequence:
            continue
        runs = report.runs_for(name)
        for note in (slow_winner(runs), noise_note(runs)):
            if note:
                notes.append(f"{name}: {note}")
        for run in runs:
            wanted = (run.strategy in chosen if chosen is not None
                      else (run.compiles or 0) > 1)
            if wanted:
                out.append(Explanation(run, tuple(diffs(run)),
                                       tuple(recompiles(run, runs, strategies, dims))))
    return out, notes


def to_dict(report: Report, explanations: list[Explanation], notes: list[str]) -> dict[str, Any]:
    from .model import to_dict as report_dict

    def entry(e: CacheEntry) -> dict[str, Any]:
        return {"compile_id": e.compile_id, "function": e.function, "call_index": e.call_index,
                "batch_size": e.batch_size, "sizes": e.sizes, "guard_count": e.guard_count,
                "leaf_guard_count": e.leaf_guard_count, "guards_by_kind": kinds(e),
                "shape_env_guards": shape_env_guards(e),
                "guards": [asdict(g) for g in e.guards]}

    return {
        "schema_version": 1,
        "explanations": [{
            "sequence_name": x.run.sequence_name, "sequence": list(x.run.sequence),
            "points": [p.as_dict() for p in analysis.run_points(x.run)],
            "strategy": x.run.strategy, "compiles": x.run.compiles,
            "recompiles": x.run.recompiles,
            "steady_state_us": x.run.steady_state_us, "eager_us": x.run.eager_us,
            "steady_state_noisy": x.run.steady_state_noisy,
            "guard_check_us": x.run.guard_check_us,
            "guard_latency_us_cold": x.run.guard_latency_us,
            "entries": [entry(e) for e in x.run.entries],
            "diffs": [asdict(d) for d in x.diffs],
            "recompile_reasons": [asdict(r) for r in x.recompiles],
            "specializations": x.run.specializations,
            "graph_breaks": x.run.graph_breaks,
        } for x in explanations],
        "costs": [{"sequence_name": r.sequence_name, "strategy": r.strategy,
                   "compiles": r.compiles, "steady_state_us": r.steady_state_us,
                   "steady_state_min_us": r.steady_state_min_us,
                   "steady_state_p90_us": r.steady_state_p90_us,
                   "steady_state_noisy": r.steady_state_noisy,
                   "eager_us": r.eager_us, "guard_check_us": r.guard_check_us,
                   "guard_latency_us_cold": r.guard_latency_us} for r in report.runs],
        "notes": notes,
        "report": report_dict(report),
    }
