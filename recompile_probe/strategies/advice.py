"""What a strategy stands for, written out: the code, the environment and the scenario YAML.

The one generator: ``explain`` prints it as the measured fix a strategy of the run made, and
``suggest`` prints (and ``--write`` adds) it for its recommendation. Whether a line was measured
is the caller's to say: code lines are what a run did; torch._check lines are measured only
where the target that ran carried them. No torch.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..records.run import Run
from ..sizes.paths import Path, parse_path
from ..torch_compat.compile_keywords import SPEC_KEYWORDS, spec_keyword
from .model import BATCH_SOURCES, MARKS, LocationMark, Strategy, filled

#: (Dynamo source, dim, size symbol) of every dim a symbol moves, e.g. ("L['x']", 0, "B")
DimSources = Sequence[tuple[str, int, str]]

#: where marks go, said once above them
BEFORE_EACH_CALL = "# right before each call, in eager code (outside the compiled region):"

#: the environment variable of each sources config (torch.compiler.config)
ENVIRONMENT = {
    "torch.compiler.config.dynamic_sources": "TORCH_COMPILE_DYNAMIC_SOURCES",
    "torch.compiler.config.unbacked_sources": "TORCH_COMPILE_UNBACKED_SOURCES",
}
_SOURCES_OF_KIND = {
    "dynamic": "torch.compiler.config.dynamic_sources",
    "unbacked": "torch.compiler.config.unbacked_sources",
}


@dataclass(frozen=True)
class Arguments:
    """How the target's arguments are named: in the user's code and by Dynamo."""

    #: (Dynamo source, dim, symbol) of every dim a size symbol moves
    dims: DimSources = ()
    #: the positional (and keyword-only) parameter names, for marks on an argument by index
    param_names: Sequence[str | None] = ()
    #: symbol -> (smallest, largest size) the scenario gives it: the ``{min}``/``{max}`` of a
    #: strategy's options and a shapes spec's ranges (left out where unknown)
    ranges: Mapping[str, tuple[int, int]] = field(default_factory=dict)
    #: the scenario's ``driver:`` (``file.py:fn``): the program, not the user, makes each call
    #: and builds its inputs, so marks go in a wrapper it calls in the target's place
    driver: str | None = None


@dataclass(frozen=True)
class Definitions:
    """What one scenario's measured fixes are written with: its strategies by name (its custom
    ones included), the range its points give each symbol, and its driver."""

    strategies: Mapping[str, Strategy]
    ranges: Mapping[str, tuple[int, int]] = field(default_factory=dict)
    driver: str | None = None

    def arguments(self, runs: Iterable[Run]) -> Arguments:
        """The target's arguments as ``runs`` recorded them (none where they did not)."""
        return recorded(runs, self.ranges, self.driver) or Arguments(
            (), (), self.ranges, self.driver
        )


def recorded(
    runs: Iterable[Run], ranges: Mapping[str, tuple[int, int]], driver: str | None
) -> Arguments | None:
    """The target's arguments as the first run that recorded them named them (a saved report
    is advised on without importing the target); None where no run did (a report written before
    runs kept them)."""
    for run in runs:
        if run.argument_dims is not None and run.param_names is not None:
            dims = tuple((d.source, d.dim, d.symbol) for d in run.argument_dims)
            return Arguments(dims, run.param_names, ranges, driver)
    return None


def local_name(source: str | None) -> str:
    """``L['x']`` -> ``x``, ``L['cache'].keys[0]`` -> ``cache.keys[0]``: a source as code."""
    match = re.fullmatch(r"L\['([^']+)'\](.*)", source or "")
    return match.group(1) + match.group(2) if match else (source or "arg")


_IN_VAR_KEYWORD = re.compile(r"L\['([^']+)'\]\['([^']+)'\](.*)")


def caller_name(source: str | None, param_names: Sequence[str | None]) -> str:
    """A source as the caller's code names it, where marks go (before the call): a value of the
    frame's ``**kwargs`` dict by the keyword it is passed as (``L['kwargs']['input_ids']`` ->
    ``input_ids``). A local indexed by a string that is no named parameter can only be that
    dict; a named parameter's entries keep their path (``cfg['scale']``)."""
    match = _IN_VAR_KEYWORD.fullmatch(source or "")
    if match and match.group(1) not in param_names:
        return match.group(2) + match.group(3)
    return local_name(source)


def path_name(path: Path, param_names: Sequence[str | None]) -> str:
    """An argument path as the user's code names it: ``x``, ``kwargs['input_ids']``,
    ``cache.keys[0]`` (``args[2]`` for a positional argument with no name)."""
    head = path.head
    if isinstance(head, int):
        named = param_names[head] if head < len(param_names) else None
        head = named or f"args[{head}]"
    return str(Path(head, path.steps))


def mark_call(kind: str, name: str, dim: int, options: Mapping[str, Any] | None = None) -> str:
    module, fn = MARKS[kind]
    opts = "".join(f", {k}={v!r}" for k, v in (options or {}).items())
    return f"{module}.{fn}({name}, {dim}{opts})"


def _located(strategy: Strategy, args: Arguments) -> list[tuple[LocationMark, str, str | None]]:
    """(mark, the tensor's name, its symbol where dims name that dim) of the location marks."""
    out = []
    for m in strategy.marks:
        name = path_name(parse_path("marks", m.argument), args.param_names)
        symbol = next(
            (
                sym
                for src, d, sym in args.dims
                if d == m.dim and caller_name(src, args.param_names) == name
            ),
            None,
        )
        out.append((m, name, symbol))
    return out


def checks(groups: Iterable[Sequence[tuple[str, bool]]]) -> list[str]:
    """torch._check lines for unbacked dims: per group of dims that follow one symbol, the first
    ``>= 1`` (unless a size of 0 was seen: ``(expr, zero_seen)``) and ``first == other`` for each
    other one. The vLLM fix's two lines: no 0/1 guard, one symbol, no runtime Eq assert."""
    lines: list[str] = []
    for group in groups:
        if not group:
            continue
        (first, zero), rest = group[0], group[1:]
        if not zero:
            lines.append(f"torch._check({first} >= 1)")
        lines += [f"torch._check({first} == {other})" for other, _ in rest]
    return lines


def check_lines(strategy: Strategy, args: Arguments, acting: Sequence[str] = ("B",)) -> list[str]:
    """The torch._check lines that go with a strategy's unbacked marks."""
    groups: dict[str | None, list[tuple[str, bool]]] = {}
    for planned, (kind, _) in strategy.plan(acting).items():
        if kind == "unbacked":
            groups.setdefault(planned, []).extend(
                (f"{local_name(s)}.shape[{d}]", False) for s, d, sym in args.dims if sym == planned
            )
    for m, name, symbol in _located(strategy, args):
        if m.kind == "unbacked":
            key = symbol if symbol is not None else f"@{name}:{m.dim}"
            expr = f"{name}.shape[{m.dim}]"
            if (expr, False) not in groups.setdefault(key, []):
                groups[key].append((expr, False))
    return checks(groups.values())


def code(
    strategy: Strategy,
    args: Arguments,
    acting: Sequence[str] = ("B",),
    *,
    checks_measured: bool = False,
    before: str = BEFORE_EACH_CALL,
) -> list[str]:
    """The change to the user's code that this strategy stands for.

    ``acting``: the symbols a one-kind mark applies to (those that vary in the sequence). The
    torch._check lines are part of it only when ``checks_measured`` (the target that ran has
    them); otherwise they are advice (``check_lines``). ``before``: the comment above the marks.
    """
    lines: list[str] = []
    plan = strategy.plan(acting)
    located = _located(strategy, args)
    keywords = [
        *([f"dynamic={strategy.dynamic}"] if strategy.dynamic is not None else []),
        *(f"{key}={value!r}" for key, value in strategy.compile.items()),
    ]
    # A driver wrapper compiles fn itself: the keywords go on its torch.compile line, so that
    # the change compiles fn once, not once per line.
    wrapped = bool(args.driver and (plan or located))
    if not wrapped and strategy.dynamic is not None:
        lines.append(f"torch.compile(fn, dynamic={strategy.dynamic})")
    if plan or located:
        marks: list[tuple[str, str, int, Mapping[str, Any] | None]] = [
            (kind, caller_name(source, args.param_names), dim, filled(opts, sym, args.ranges))
            for source, dim, sym in args.dims
            if sym in plan
            for kind, opts in (plan[sym],)
        ]
        marks += [(m.kind, name, m.dim, None) for m, name, _ in located]
        if args.driver:
            calls = [mark_call(k, bound_name(n), d, o) for k, n, d, o in marks]
            lines += driven(calls, args.driver, keywords)
        else:
            lines += [before, *(mark_call(*m) for m in marks)]
        found = check_lines(strategy, args, acting)
        if found and checks_measured:
            lines.append("# inside the compiled function (already in the target that ran):")
            lines += found
    sources = ",".join(dict.fromkeys(f"{s}:{d}" for s, d, sym in args.dims if sym in acting))
    for dotted, value in strategy.config.items():
        value = sources if value == BATCH_SOURCES else value
        lines.append(f"{dotted} = {value!r}")
    if strategy.stance:
        lines.append(f"torch.compiler.set_stance({strategy.stance!r})")
    if strategy.guard_collectives:
        lines.append("torch.compiler.set_enable_guard_collectives(True)  # on every rank")
    if not wrapped:
        lines += [f"torch.compile(fn, {key}={value!r})" for key, value in strategy.compile.items()]
    if strategy.shapes_spec:
        lines += spec_lines(args, acting)
    if strategy.as_is:
        lines.append("keep the target's own torch.compile decoration")
    if strategy.driver_options:
        given = ", ".join(f"{k}={v!r}" for k, v in strategy.driver_options.items())
        lines.append(f"# in the program (what the driver did with its options): {given}")
    return lines or ["torch.compile(fn)  # the defaults"]


#: a caller's name, split at its head: ``input_ids``, ``cache`` + ``.keys[0]``
_HEAD_NAME = re.compile(r"([A-Za-z_]\w*)(.*)", re.S)


def bound_name(name: str) -> str:
    """A caller's name as the driver wrapper (``driven``) finds it: ``a['input_ids']``,
    ``a['cache'].keys[0]``; an unnamed positional argument stays ``args[2]``."""
    head = _HEAD_NAME.fullmatch(name)
    if head is None or name.startswith("args["):
        return name
    return f"a[{head.group(1)!r}]{head.group(2)}"


def driven(marks: Sequence[str], driver: str, keywords: Sequence[str] = ()) -> list[str]:
    """Marks for a target a driver calls: the driver builds the tensors, so the marks go in a
    wrapper the driver is handed in the target's place, as the tool's own run did. The wrapper
    keeps ``fn``'s signature (``generate()`` reads ``model.forward``'s to choose its keyword
    arguments) and finds each argument however the driver passed it. ``keywords``: the
    strategy's own ``torch.compile`` keywords (``dynamic=False``), on the wrapper's one compile."""
    given = "".join(f", {k}" for k in keywords)
    return [
        f"# {driver} calls fn and builds its inputs: mark them in a wrapper",
        "# that it calls in fn's place, right before the compiled call (as the run did):",
        f"compiled = torch.compile(fn{given})",
        "@functools.wraps(fn)  # keeps fn's signature, which a driver may read",
        "def marked(*args, **kwargs):",
        "    target = fn.forward if isinstance(fn, torch.nn.Module) else fn",
        "    bound = inspect.signature(target).bind(*args, **kwargs)",
        "    a = {**bound.arguments, **bound.kwargs}  # a **kwargs entry by its keyword too",
        *(f"    {line}" for line in marks),
        "    return compiled(*args, **kwargs)",
        "# then pass `marked` where the program passed fn (e.g. model.forward = marked)",
    ]


def spec_lines(args: Arguments, acting: Sequence[str]) -> list[str]:
    """A shapes spec as code: one ShapeVar per acting symbol (its range the scenario's), a
    TensorSpec per top-level tensor argument that one of them moves."""
    per_param: dict[str, dict[int, str]] = {}
    for source, dim, symbol in args.dims:
        name = local_name(source)
        if symbol in acting and name.isidentifier():
            per_param.setdefault(name, {})[dim] = symbol
    if not per_param:
        return ["# no top-level tensor argument has a dim to put in a shapes spec"]
    lines = ["from torch.fx.experimental.dynamic_spec import ShapesSpec, ShapeVar, TensorSpec"]
    for symbol in dict.fromkeys(s for dims in per_param.values() for s in dims.values()):
        lo_hi = args.ranges.get(symbol)
        bounds = f", min={lo_hi[0]}, max={lo_hi[1]}" if lo_hi else ""
        lines.append(f"{symbol} = ShapeVar({symbol!r}{bounds})")
    specs = []
    for name, dims in per_param.items():
        last = max(dims)
        listed = ", ".join(dims.get(d, "None") for d in range(last + 1))
        specs.append(f"{name!r}: TensorSpec([{listed}, *[None] * ({name}.dim() - {last + 1})])")
    # the keyword this torch takes, so that the line runs as pasted; the other release's named
    keyword = spec_keyword() or SPEC_KEYWORDS[0]
    other = next(k for k in SPEC_KEYWORDS if k != keyword)
    release = "torch 2.13" if other == "shapes_spec" else "torch 2.14 and later"
    lines.append(
        f"torch.compile(fn, {keyword}=ShapesSpec({{{', '.join(specs)}}}))  # {other}= on {release}"
    )
    return lines


def environment(
    marks: Iterable[tuple[str, str | None, int, str]],
) -> tuple[dict[str, str], str | None]:
    """The marks as TORCH_COMPILE_{DYNAMIC,UNBACKED}_SOURCES (per dim), from (kind, Dynamo
    source, dim, name) per mark; ({}, why) when a mark has no environment form."""
    by_kind: dict[str, list[str]] = {}
    for kind, source, dim, name in marks:
        if source is None or kind not in _SOURCES_OF_KIND:
            return {}, f"{name} has no plain Dynamo source: no environment form"
        by_kind.setdefault(kind, []).append(f"{source}:{dim}")
    return {
        ENVIRONMENT[_SOURCES_OF_KIND[kind]]: ",".join(found)
        for kind, found in sorted(by_kind.items())
    }, None


def config_of(env: Mapping[str, str]) -> dict[str, str]:
    """The environment form as the config patches it stands for (to measure it as a strategy)."""
    back = {var: dotted for dotted, var in ENVIRONMENT.items()}
    return {back[var]: value for var, value in env.items()}


def scalar(value: int | str) -> str:
    """A YAML scalar for an argument (an index, a keyword or a quoted path)."""
    if isinstance(value, int):
        return str(value)
    return value if re.fullmatch(r"[A-Za-z_]\w*", value) else '"' + value.replace('"', '\\"') + '"'


def yaml(
    name: str, description: str, marks: Sequence[LocationMark], budget: Mapping[str, Any]
) -> str:
    """A ``custom_strategies`` entry with these marks, and its ``expect:`` budget, as YAML text;
    without marks only the budget of ``name`` (a strategy that needs no custom entry)."""
    lines = []
    if marks:
        lines += [
            "custom_strategies:",
            f"  {name}:",
            f'    description: "{description}"',
            "    marks:",
        ]
        lines += [
            f"      - {{argument: {scalar(m.argument)}, dim: {m.dim}, kind: {m.kind}}}"
            for m in marks
        ]
    else:
        lines.append(f"# {name} needs no custom strategy: list it in `strategies:`")
    lines += ["expect:", f"  {name}:"] + [
        f"    {key}: {str(value).lower() if isinstance(value, bool) else value}"
        for key, value in budget.items()
    ]
    return "\n".join(lines) + "\n"
