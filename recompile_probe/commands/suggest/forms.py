"""What the advice adds, measured before it is printed: the environment form of the marks, the
torch._check lines, each mark's necessity, and a win on speed alone confirmed."""

from __future__ import annotations

import inspect
import math
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from ...reasons import frameworks
from ...reasons.kinds import remedy
from ...reasons.text import without_comments
from ...records.run import Run
from ...records.suggestion import Evaluation, Location, MarkChoice, Necessity, Unfixable
from ...scenario.model import Scenario
from ...strategies import advice
from ...strategies.builtins import BUILTINS
from ...strategies.model import Strategy
from .bench import Bench, Stopped
from .objective import primary, ranked, unbacked_count, worse
from .search import Search, candidate_strategy, label


def check_lines(
    marks: tuple[MarkChoice, ...],
    locations: tuple[Location, ...],
    param_names: Sequence[str | None],
) -> tuple[str, ...]:
    """The torch._check lines of the unbacked marks (strategies/advice.py's one rule): the dims
    of one symbol tied together, ``>= 1`` unless a size of 0 was seen. Only top-level arguments
    (the lines go inside the target, where only its parameters have names)."""
    sizes = {(loc.argument, loc.dim): loc.sizes for loc in locations}
    groups: dict[object, list[tuple[str, bool]]] = {}
    for m in marks:
        name = (
            param_names[m.argument]
            if isinstance(m.argument, int) and m.argument < len(param_names)
            else m.argument
            if isinstance(m.argument, str)
            and m.argument.isidentifier()
            and m.argument in param_names
            else None
        )
        if m.kind != "unbacked" or not name:
            continue
        zero = min(sizes.get((m.argument, m.dim), (0,))) < 1
        groups.setdefault(m.symbol or (m.argument, m.dim), []).append(
            (f"{name}.shape[{m.dim}]", zero)
        )
    return tuple(advice.checks(groups.values()))


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
    source = f"def {fn_name}({', '.join(params)}):\n{body}    return __target({', '.join(call)})\n"
    import torch

    scope: dict[str, Any] = {"torch": torch, "__target": fn, "__defaults": defaults}
    exec(compile(source, f"<recompile-probe checks for {target.name}>", "exec"), scope)  # noqa: S102
    wrapper = scope[fn_name]
    return replace(target, fn=wrapper, compiled=None)


def environment_form(
    marks: tuple[MarkChoice, ...], locations: tuple[Location, ...]
) -> tuple[dict[str, str], str | None]:
    """The env-var form of the marks (TORCH_COMPILE_{DYNAMIC,UNBACKED}_SOURCES, per dim)."""
    source = {(loc.argument, loc.dim): loc.source for loc in locations}
    return advice.environment(
        (m.kind, source.get((m.argument, m.dim)), m.dim, m.name) for m in marks
    )


def code_for(
    e: Evaluation,
    target_name: str,
    checks: tuple[str, ...],
    param_names: Sequence[str | None],
    locations: tuple[Location, ...] = (),
    ranges: dict[str, tuple[int, int]] | None = None,
    driver: str | None = None,
) -> tuple[str, ...]:
    """The recommendation as code: its marks (strategies/advice.py), the measured checks; a
    whole-function winner as the lines its strategy stands for (the compile keyword, config
    lines, marks or a ShapesSpec) over the varying dims (``locations``) it acted on."""
    if e.whole_function:
        # a dim that follows no symbol (each layer's cache length) stands for itself
        dims = tuple(
            (loc.source, loc.dim, loc.symbol or f"{loc.name}:{loc.dim}")
            for loc in locations
            if loc.source is not None
        )
        lines = advice.code(
            BUILTINS[e.whole_function],
            advice.Arguments(
                dims=dims, param_names=param_names, ranges=dict(ranges or {}), driver=driver
            ),
            tuple(dict.fromkeys(sym for _, _, sym in dims)),
            before=f"# in eager code, right before each call of {target_name}:",
        )
        return (f"# the {e.whole_function} strategy, as measured:", *lines)
    if not e.marks:
        return ("# nothing to add: no marking measured better than none",)
    lines = advice.code(
        candidate_strategy(e.name, e.marks),
        advice.Arguments(param_names=param_names, driver=driver),
        (),
        before=f"# in eager code, right before each call of {target_name}:",
    )
    if checks:
        lines.append(f"# first lines inside {target_name} (measured: they helped):")
        lines.extend(checks)
    return tuple(lines)


def yaml_for(e: Evaluation, name: str, runs: list[Run]) -> str:
    """The recommendation as scenario YAML (a custom strategy with its marks) and its budget."""
    budget: dict[str, object] = {
        "max_compiles": max((r.compiles or 0) for r in runs) if runs else 0,
        "max_recompiles": max((r.recompiles or 0) for r in runs) if runs else 0,
    }
    # only a budget this search verified: outputs that were not compared cannot promise a match
    if runs and all(r.outputs_match is True for r in runs):
        budget["outputs_match"] = True
    if e.whole_function or not e.marks:
        return advice.yaml(e.whole_function or "default", "", (), budget)
    return advice.yaml(
        name, f"suggest: {label(e.marks)}", candidate_strategy(e.name, e.marks).marks, budget
    )


def _hinted(found: str, e: Any) -> str:
    files = [e.filename, *(o.file for o in e.reason_origins or () if o)]
    hint = frameworks.hints(e.reason_kind, e.reason_detail, files)
    return f"{found}. {hint}" if hint else found


def unfixable(runs: dict[str, list[Run]], name: str) -> tuple[Unfixable, ...]:
    """The recompiles the recommendation still has, each with the remedy of its kind (advice,
    not measured)."""
    out = []
    for run in runs.get(name, []):
        for e in run.compile_events:
            if not e.recompile:
                continue
            text = (
                without_comments(e.reason).splitlines()[0] if e.reason else (e.fail_reason or "?")
            )
            out.append(
                Unfixable(
                    run.sequence_name,
                    e.call_index,
                    text,
                    e.reason_kind,
                    _hinted(remedy(e.reason_kind, text, e.reason_detail), e),
                )
            )
    return tuple(out)


def fastest_form(bench: Bench, locations: tuple[Location, ...]) -> tuple[Evaluation, str] | None:
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
    env, _ = environment_form(leader.marks, locations)
    if not env:
        return None
    measured, note = measure_environment(bench, leader, env)
    if primary(measured) == primary(leader) and (measured.steady_state_us or math.inf) < (
        leader.steady_state_us or math.inf
    ):
        key = next(k for k, v in bench.measured.items() if v.name == leader.name)
        bench.measured[key] = replace(
            leader,
            steady_state_us=measured.steady_state_us,
            steady_state_min_us=measured.steady_state_min_us,
            steady_state_p90_us=measured.steady_state_p90_us,
            form="environment",
            marks_steady_state_us=leader.steady_state_us,
        )
    return measured, note


def settle(bench: Bench, rounds: int = 3) -> Evaluation | None:
    """The winner, with any win on speed alone over a cheaper candidate confirmed: both are
    measured again (alternating) and their ranges widened; if they then overlap, the cheaper one
    wins. This machine drifts between two measurements more than within one."""
    for _ in range(rounds):
        order = ranked(bench.candidates())
        if not order:
            return None
        best = order[0]
        cheaper = [
            e
            for e in order[1:]
            if primary(e) == primary(best)
            and (e.cost, unbacked_count(e)) < (best.cost, unbacked_count(best))
        ]
        if not cheaper:
            return best
        rival = cheaper[0]
        try:
            bench.again(rival)
            bench.again(best)
        except Stopped:
            # Unconfirmed, a win on speed alone does not count: the cheaper candidate stands.
            bench.unconfirmed += 1
            return next(e for e in ranked(bench.candidates()) if e.name == rival.name)
    return ranked(bench.candidates())[0]


def necessity_variants(
    search: Search, best: Evaluation
) -> list[tuple[MarkChoice, str, dict[int, str]]]:
    """Per mark of ``best``: the marking without it, and with unbacked turned into dynamic.
    Dims that vary together (search.groups) are dropped or weakened together, as the search
    marked them: the marks of one group share one variant (measured once)."""
    if best.whole_function:
        return []
    choice = search._choice(best)
    out = []
    for group in search.groups:
        marked = [i for i in group if i in choice]
        for i in marked:
            mark = next(
                m
                for m in best.marks
                if (m.argument, m.dim) == (search.locations[i].argument, search.locations[i].dim)
            )
            out.append((mark, "dropped", {j: k for j, k in choice.items() if j not in marked}))
            if any(choice[j] == "unbacked" for j in marked):
                out.append((mark, "dynamic", {**choice, **{j: "dynamic" for j in marked}}))
    return out


def necessity(
    search: Search, best: Evaluation, out: list[Necessity] | None = None
) -> list[Necessity]:
    """For each mark: the measured variant without it (and unbacked -> dynamic), and how it is
    worse. A variant that is not worse would have won: the list then shows it plainly. Each entry
    goes into ``out`` as it is measured, so a stopped search keeps the ones it has."""
    out = [] if out is None else out
    for mark, what, variant in necessity_variants(search, best):
        e = search.marking(variant)
        if primary(e) == primary(best) and worse(e, best):  # slower only: confirm it
            e, best = search.bench.again(e), search.bench.again(best)
        why = worse(e, best) or "not worse (ties on every measured figure)"
        together = len(best.marks) - len(e.marks) if what == "dropped" else 0
        if together > 1:
            why = f"with the {together} marks that vary with it, at once: {why}"
        out.append(Necessity(mark, what, e.name, why, e.reasons[0] if e.reasons else None))
    return out


def measure_checks(
    bench: Bench, best: Evaluation, lines: tuple[str, ...]
) -> tuple[Evaluation, Evaluation, str, bool]:
    """The recommendation with and without the lines, through the same wrapper; the verdict;
    and whether the lines helped (a difference in µs/call alone only once confirmed)."""
    strategy = candidate_strategy(best.name + " +checks", best.marks)
    bare = candidate_strategy(best.name + " (wrapped)", best.marks)
    without = bench.measure(
        ("checks", False, best.name),
        bare,
        best.marks,
        None,
        best.cost,
        checked_target(bench.target, ()),
    )
    with_ = bench.measure(
        ("checks", True, best.name),
        strategy,
        best.marks,
        None,
        best.cost,
        checked_target(bench.target, lines),
        lines,
    )
    if primary(with_) == primary(without) and (worse(with_, without) or worse(without, with_)):
        try:  # a speed-only difference
            with_, without = bench.again(with_), bench.again(without)
        except Stopped:
            bench.unconfirmed += 1
            return (
                with_,
                without,
                "differ in µs/call only, not confirmed (the search was stopped): left out",
                False,
            )
    how = worse(with_, without)
    if how is not None:
        verdict = f"made it worse: {how}"
    else:
        better = worse(without, with_)
        verdict = (
            f"helped: without them {better}"
            if better
            else "changed nothing measured (same status, compiles and guards; µs/call within "
            "the spread)"
        )
    return with_, without, verdict, worse(without, with_) is not None


def measure_environment(
    bench: Bench, best: Evaluation, env: dict[str, str]
) -> tuple[Evaluation, str]:
    config = advice.config_of(env)
    strategy = Strategy(
        best.name + " (environment)", "suggest: the environment form", config=config
    )
    e = bench.measure(("env", best.name), strategy, (), None, best.cost)
    if e.status == "unsupported":
        return e, f"not available here: {e.error}"
    if primary(e) == primary(best):  # equivalence is about what Dynamo did; µs drift apart
        return e, "measured: the same status, compiles and guards as the marks"
    how = worse(e, best) or "fewer compiles or guards than the marks"
    return e, f"measured: not equivalent to the marks ({how})"


def target_name(scenario: Scenario) -> str:
    return scenario.target.rpartition(":")[2].rpartition(".")[2] or scenario.target


def free_name(scenario: Scenario, wanted: str) -> str:
    known = set(scenario.known_strategies())
    name, n = wanted, 2
    while name in known:
        name, n = f"{wanted}_{n}", n + 1
    return name
