"""Coverage predictions held to real calls, never to the tool's own reading of the guards.

Each case runs a scenario with a `coverage:` range; then, for every size it names, a plain program
(torch.compile and torch's own mark functions, written out here) replays the sequence in a fresh
Dynamo state and calls the function once at that size, counting compiles with a CompileCounter
and attempts with Dynamo's frame counter. A size the tool calls served must compile nothing; one
it calls unserved must make Dynamo try (or run eagerly at the recompile limit, or raise where a
mark's range ends); one it lists as raising at runtime must raise without a compile. A sampled
answer is checked at the sizes it names.
"""

from __future__ import annotations

import dataclasses
import textwrap
from collections.abc import Callable

import pytest
import torch
from torch._dynamo.testing import CompileCounter
from torch._dynamo.utils import counters

from helpers import PROGRAMS, import_file
from recompile_probe.analysis.budgets import uncovered as decide_budget
from recompile_probe.cover import decide
from recompile_probe.execution.session import run_scenario
from recompile_probe.records.coverage import Coverage
from recompile_probe.render.cells import covers as covers_cell
from recompile_probe.render.lines.coverage import section as lines_of
from recompile_probe.scenario.load import loads

CASES = PROGRAMS / "coverage" / "cases.py"
cases = import_file(CASES, "coverage_cases")
#: 0, 1, 2, the range's ends, powers of two and their neighbours, odd primes
SIZES = sorted(
    {0, 1, 2, 3, 5, 7, 11, 13, 97, 509, 4095, 4096}
    | {p + d for p in (4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048) for d in (-1, 0, 1)}
)
assert len(SIZES) >= 30
SEQUENCE = [4, 8]

#: strategy -> (torch.compile keywords, mark function or None): the plain program's own knobs
PLAIN: dict[str, tuple[dict, Callable | None]] = {
    "default": ({}, None),
    "dynamic_true": ({"dynamic": True}, None),
    "static": ({"dynamic": False}, None),
    "mark_dynamic": ({}, torch._dynamo.mark_dynamic),
    "mark_unbacked": ({}, torch._dynamo.decorators.mark_unbacked),
}
#: kind -> (target, factory, positional argument -> dims that follow B)
KINDS = {
    "compare_sum": ("compare_sum", "two_inputs", {0: [0], 1: [0]}),
    "reshape": ("reshape", "one_input", {0: [0]}),
    "branch": ("branch", "one_input", {0: [0]}),
    "matched": ("matched", "two_same", {0: [0], 1: [0]}),
    "block": ("block", "hidden", {0: [0]}),
}
#: a factory that derives an int argument from B (1 + B // 4), which guards then check
STEPS = ("steps", "with_steps", {0: [0]})
#: the same int inside a dict argument
STEPS_IN_DICT = ("steps_in_dict", "with_steps_in_dict", {0: [0]})


def _scenario(target, factory, dims, strategies, *, sequence=SEQUENCE, extra="", hi=4096):
    return loads(
        textwrap.dedent(
            f"""\
            target: {CASES}:{target}
            factory: {CASES}:{factory}
            batch_dims: {dims}
            sequences: {{s: {sequence}}}
            strategies: [{", ".join(strategies)}]
            repeats: 0
            coverage: {{B: [0, {hi}]}}
            """
        )
        + extra
    )


class Plain:
    """The function as a plain program runs it, after the sequence; sizes asked one by one
    (a call that compiled changes the cache: the next size starts again from a fresh replay)."""

    def __init__(self, target, factory, dims, strategy, sequence=SEQUENCE, compile_kw=None):
        self.fn, self.factory = getattr(cases, target), getattr(cases, factory)
        self.dims, self.sequence = dims, sequence
        self.kwargs, self.mark = PLAIN[strategy]
        self.kwargs = {**self.kwargs, **(compile_kw or {})}
        self.fresh = False

    def _call(self, size):
        args = self.factory(size)
        if self.mark is not None:
            for index, dims in self.dims.items():
                for dim in dims:
                    self.mark(args[index], dim)
        return self.compiled(*args)

    def _replay(self):
        torch._dynamo.reset()
        self.counter = CompileCounter()
        self.compiled = torch.compile(self.fn, backend=self.counter, **self.kwargs)
        for size in self.sequence:
            try:
                self._call(size)
            except Exception:  # noqa: BLE001 - a sequence the program itself fails on
                pass
        self.fresh = True

    def at(self, size) -> tuple[int, int, str | None]:
        """(frame attempts, compiles, error) of one call at this size."""
        if not self.fresh:
            self._replay()
        frames, graphs = counters["frames"]["total"], self.counter.frame_count
        error = None
        try:
            self._call(size)
        except Exception as exc:  # noqa: BLE001 - what the call does is the finding
            error = type(exc).__name__
        attempts = counters["frames"]["total"] - frames
        if attempts:
            self.fresh = False
        return attempts, self.counter.frame_count - graphs, error


def _outcome(coverage: Coverage, size: int) -> str | None:
    """What the report says of this size: served, an unserved outcome, "raises at runtime";
    None where a sampled answer says nothing of it."""
    for miss in coverage.unserved:
        lo, hi = miss.sizes["B"]
        if lo <= size <= hi:
            return miss.outcome
    for failure in coverage.raises_at_runtime or ():
        lo, hi = failure.sizes["B"]
        if lo <= size <= hi:
            return "raises at runtime"
    served = any(b["B"][0] <= size <= b["B"][1] for b in coverage.served)
    # a size no listed raise holds may still raise where the raises were sampled or cut short
    raises_known = not (coverage.raises_sampled or coverage.raises_left_out)
    if coverage.method == "sampled" or not coverage.complete:
        return "served" if served and raises_known else None
    return "served" if raises_known else None


def _held_to_real_calls(coverage: Coverage, plain: Plain, sizes=SIZES) -> list:
    wrong = []
    for size in sizes:
        said = _outcome(coverage, size)
        if said is None:
            continue
        attempts, compiles, error = plain.at(size)
        if said == "served":
            ok = attempts == 0 and error is None
        elif said == "raises at runtime":
            ok = attempts == 0 and error is not None
        elif said == "recompile":
            ok = attempts >= 1 and (compiles >= 1 or error is not None)
        elif said == "eager":
            ok = compiles == 0 and error is None
        else:  # raises: the compile is refused
            ok = error is not None and compiles == 0
        if not ok:
            wrong.append((size, said, attempts, compiles, error))
    return wrong


def _runs(kind, strategies, **kw):
    target, factory, dims = KINDS[kind]
    report = run_scenario(_scenario(target, factory, dims, strategies, **kw))
    return {run.strategy: run for run in report.runs}, (target, factory, dims)


@pytest.mark.parametrize("kind", list(KINDS))
def test_every_answer_is_what_a_real_call_does(kind):
    strategies = ["default", "dynamic_true", "mark_unbacked"]
    runs, (target, factory, dims) = _runs(kind, strategies)
    for name in strategies:
        coverage = runs[name].coverage
        assert coverage is not None and coverage.decided, (name, coverage)
        wrong = _held_to_real_calls(coverage, Plain(target, factory, dims, name))
        assert wrong == [], (kind, name, coverage.method, wrong)


@pytest.mark.exhaustive
@pytest.mark.parametrize("kind", list(KINDS))
def test_every_answer_is_what_a_real_call_does_under_every_marking(kind):
    strategies = ["static", "mark_dynamic"]
    runs, (target, factory, dims) = _runs(kind, strategies)
    for name in strategies:
        coverage = runs[name].coverage
        assert coverage is not None and coverage.decided
        wrong = _held_to_real_calls(coverage, Plain(target, factory, dims, name))
        assert wrong == [], (kind, name, coverage.method, wrong)


def test_the_seed_ops_zero_one_specialisation_is_the_counterexample_and_unbacked_is_proved():
    runs, _ = _runs("compare_sum", ["default", "mark_unbacked"])
    default, unbacked = runs["default"].coverage, runs["mark_unbacked"].coverage
    assert default.method == "proved" and default.scope == "every frame"
    assert default.counterexample == {"B": 0} and not default.proved
    assert [u.sizes for u in default.unserved] == [{"B": (0, 1)}]
    assert default.unserved[0].reason_kind == "zero_one_specialization"
    assert default.served == ({"B": (2, 4096)},)
    assert unbacked.proved and unbacked.method == "proved" and unbacked.unserved == ()


def test_a_graph_break_is_sampled_by_real_calls_and_never_called_a_proof():
    runs, (target, factory, dims) = _runs("branch", ["default", "mark_unbacked"])
    for name, run in runs.items():
        coverage = run.coverage
        assert coverage.method == "sampled" and not coverage.proved
        assert coverage.scope == "every frame"
        assert any("fail-on-recompile stance" in n for n in coverage.notes)
        # the stance's refusals are real calls past the break: B > 16 takes the other branch
        by_stance = [u for u in coverage.unserved if u.decided_by == "stance"]
        assert by_stance, name
        assert _held_to_real_calls(coverage, Plain(target, factory, dims, name)) == []


def test_a_size_the_stance_refuses_names_the_guard_dynamo_names_when_it_recompiles():
    """After a graph break, B = 12 changes the int the loop runs over (1 + B // 4): the stance
    refuses it, and the guard named is the one Dynamo's own compile record gives as the
    recompile's reason, not the size guard of the static entry listed after it."""
    from torch._dynamo.utils import clear_compilation_metrics, get_compilation_metrics

    target, factory, dims = STEPS
    report = run_scenario(_scenario(*STEPS, ["default"], sequence=[8, 9], hi=16))
    runs = {run.strategy: run for run in report.runs}
    (miss,) = [
        u for u in runs["default"].coverage.unserved if u.sizes["B"][0] <= 12 <= u.sizes["B"][1]
    ]
    assert miss.decided_by == "stance"
    plain = Plain(target, factory, dims, "default", sequence=[8, 9])
    plain._replay()
    clear_compilation_metrics()
    assert plain.at(12)[1] == 1  # it recompiles there
    (record,) = [m for m in get_compilation_metrics() if m.co_name == "steps"]
    first = record.recompile_reason.splitlines()[0].split("  #")[0].split(": ", 1)[1].strip()
    assert miss.guard == first == "n_steps == 3"
    assert miss.reason_kind == "python_scalar_change"


@pytest.mark.parametrize(
    "case, named", [(STEPS, "argument 1"), (STEPS_IN_DICT, "argument 1['n_steps']")]
)
def test_a_factorys_int_that_follows_the_size_is_decided_by_real_calls(case, named):
    """Guards asked with the last call's n_steps (3 at B = 8) would call B = 4 unserved; the
    program passes 2 there, which an entry of the sequence serves. Real calls with the
    factory's inputs decide instead, every answer as the plain program does, never a proof."""
    (run,) = run_scenario(_scenario(*case, ["static"], hi=16)).runs
    coverage = run.coverage
    assert coverage.method == "sampled" and not coverage.proved
    (note,) = [n for n in coverage.notes if "non-tensor argument" in n]
    assert f"{named}: 2 at B = 4, 3 at B = 8" in note and "real call(s)" in note
    assert {"B": (4, 4)} in coverage.served and {"B": (8, 8)} in coverage.served
    plain = Plain(*case, "static")
    assert plain.at(4)[:2] == (0, 0)  # served, with the 2 the factory makes there
    assert _held_to_real_calls(coverage, plain, sizes=range(0, 17)) == []
    # a factory whose other arguments are all tensors leaves no such note
    (plain_run,) = run_scenario(_scenario(*KINDS["reshape"], ["static"], hi=16)).runs
    assert not any("non-tensor argument" in n for n in plain_run.coverage.notes)


def test_a_budget_that_holds_on_samples_only_says_so_in_every_check_format():
    from recompile_probe.analysis.check import Outcome
    from recompile_probe.render.formats import Document, render

    target, factory, dims = KINDS["branch"]
    # B > 16 takes the other branch past the break: the budget's range stops before it
    budget = "expect: {mark_unbacked: {no_recompile_in: {B: [2, 16]}}}\n"
    scenario = _scenario(target, factory, dims, ["mark_unbacked"], extra=budget, hi=16)
    outcome = Outcome()
    judged = outcome.add(run_scenario(scenario), scenario)
    run = judged.runs[0]
    assert run.coverage.method == "sampled" and run.violations == ()
    assert outcome.budgets_checked == 1
    assert [(h.strategy, h.budget) for h in outcome.sampled] == [
        ("mark_unbacked", "no_recompile_in B ∈ [2, 16]")
    ]
    # the plain program: every size of the budget's range is served after the sequence
    plain = Plain(target, factory, dims, "mark_unbacked")
    assert [plain.at(size)[:2] for size in range(2, 17)] == [(0, 0)] * 15
    for fmt in ("table", "markdown", "html"):
        text = render(Document.CHECK, fmt, outcome)
        assert "1 held on samples only" in text, fmt
        assert "no_recompile_in B ∈ [2, 16] held on samples only, not a proof" in text, fmt


def test_served_sizes_whose_graph_asserts_are_said_to_raise():
    runs, (target, factory, dims) = _runs("reshape", ["mark_unbacked"])
    coverage = runs["mark_unbacked"].coverage
    failing = [f.sizes["B"] for f in coverage.raises_at_runtime]
    assert (0, 1) in failing and (7, 7) in failing  # view(B // 2, 2, -1) of [B, 8]
    assert all("B" in f.assertion for f in coverage.raises_at_runtime)
    assert coverage.method == "proved" and coverage.unserved == ()
    assert not coverage.proved  # every size is served, and some of them raise: not a guarantee
    assert _held_to_real_calls(coverage, Plain(target, factory, dims, "mark_unbacked")) == []


def test_duck_sizing_serves_only_the_size_it_was_compiled_at():
    # dynamic=True after one call at B = 8 with inputs [B, 8]: dim 0 is tied to dim 1
    runs, (target, factory, dims) = _runs("reshape", ["dynamic_true"], sequence=[8])
    coverage = runs["dynamic_true"].coverage
    assert coverage.served == ({"B": (8, 8)},)
    assert coverage.counterexample == {"B": 0}
    plain = Plain(target, factory, dims, "dynamic_true", sequence=[8])
    assert _held_to_real_calls(coverage, plain) == []


def test_at_the_recompile_limit_an_unserved_size_runs_eagerly():
    extra = "compile: {recompile_limit: 2}\n"
    runs, (target, factory, dims) = _runs("compare_sum", ["static"], extra=extra)
    coverage = runs["static"].coverage
    assert {u.outcome for u in coverage.unserved} == {"eager"}
    assert any("recompile limit" in n for n in coverage.notes)
    torch._dynamo.config.recompile_limit, old = 2, torch._dynamo.config.recompile_limit
    try:
        plain = Plain(target, factory, dims, "static")
        assert _held_to_real_calls(coverage, plain, sizes=[0, 1, 5, 9, 4096]) == []
    finally:
        torch._dynamo.config.recompile_limit = old


def test_outside_a_marks_declared_range_the_compile_raises():
    runs, _ = _runs("compare_sum", ["mark_unbacked_ranges"])
    coverage = runs["mark_unbacked_ranges"].coverage
    assert {u.sizes["B"]: u.outcome for u in coverage.unserved} == {
        (0, 3): "raises",
        (9, 4096): "raises",
    }
    fn = torch.compile(cases.compare_sum, backend=CompileCounter())
    torch._dynamo.reset()
    for size, raises in ((4, False), (8, False), (3, True), (9, True)):
        args = cases.two_inputs(size)
        for t in args:
            torch._dynamo.decorators.mark_unbacked(t, 0, min=4, max=8)
        try:
            fn(*args)
            raised = False
        except Exception:  # noqa: BLE001
            raised = True
        assert raised is raises, size


def test_outside_mark_dynamics_declared_range_a_marked_call_raises():
    """mark_dynamic(min=4, max=8): the entry serves 4..8, and a call marked the same way
    outside it raises (2.13 and 2.15, where the entry also refuses another range)."""
    extra = textwrap.dedent(
        """\
        custom_strategies:
          dynamic_4_8: {mark: dynamic, mark_options: {min: 4, max: 8}}
        """
    )
    target, factory, dims = KINDS["compare_sum"]
    scenario = _scenario(target, factory, dims, ["dynamic_4_8"], extra=extra)
    coverage = run_scenario(scenario).runs[0].coverage
    assert coverage.served == ({"B": (4, 8)},)
    assert {u.sizes["B"]: u.outcome for u in coverage.unserved} == {
        (0, 3): "raises",
        (9, 4096): "raises",
    }
    torch._dynamo.reset()
    counter = CompileCounter()
    fn = torch.compile(cases.compare_sum, backend=counter)

    def call(size):
        args = getattr(cases, factory)(size)
        for t in args:
            torch._dynamo.mark_dynamic(t, 0, min=4, max=8)
        fn(*args)

    for size in (4, 8):  # the sequence, as the plain program runs it
        call(size)
    for size in (5, 3, 9, 6, 4096, 0):
        before = counter.frame_count
        try:
            call(size)
            raised = False
        except Exception:  # noqa: BLE001
            raised = True
        served = bool(coverage.covers({"B": (size, size)}))
        assert raised is not served, size
        if served:  # and without a compile
            assert counter.frame_count == before, size


def test_two_symbols_are_decided_as_boxes():
    scenario = loads(
        textwrap.dedent(
            f"""\
            target: {CASES}:masked
            factory: {CASES}:two_symbols
            dims: {{B: {{0: [0], 1: [0]}}, S: {{0: [1], 1: [1]}}}}
            sequences: {{s: [{{B: 4, S: 8}}, {{B: 8, S: 16}}]}}
            strategies: [default]
            repeats: 0
            coverage: {{B: [0, 64], S: [0, 64]}}
            """
        )
    )
    coverage = run_scenario(scenario).runs[0].coverage
    assert coverage.method == "proved"
    assert coverage.counterexample == {"B": 0, "S": 0}
    assert coverage.served == ({"B": (2, 64), "S": (2, 64)},)
    torch._dynamo.reset()
    counter = CompileCounter()
    fn = torch.compile(cases.masked, backend=counter)
    for b, s in ((4, 8), (8, 16)):
        fn(*cases.two_symbols(b, s))
    for b, s in ((2, 2), (64, 3), (17, 64), (1, 5), (5, 1), (0, 0)):
        before = counter.frame_count
        fn(*cases.two_symbols(b, s))
        served = coverage.covers({"B": (b, b), "S": (s, s)})
        assert (counter.frame_count == before) is bool(served), (b, s)
        if counter.frame_count != before:  # that call compiled: start again from the sequence
            torch._dynamo.reset()
            counter = CompileCounter()
            fn = torch.compile(cases.masked, backend=counter)
            for bb, ss in ((4, 8), (8, 16)):
                fn(*cases.two_symbols(bb, ss))


def test_floor_and_mod_guards_are_proved_with_z3_and_enumerated_without(monkeypatch):
    pytest.importorskip("z3")
    runs, _ = _runs("reshape", ["default"])
    with_z3 = runs["default"].coverage
    assert with_z3.method == "proved"
    monkeypatch.setattr(decide, "z3_available", lambda: False)
    runs, _ = _runs("reshape", ["default"])
    without = runs["default"].coverage
    assert without.method == "enumerated"
    assert any("z3" in n for n in without.notes)
    assert [u.sizes for u in with_z3.unserved] == [u.sizes for u in without.unserved]
    assert with_z3.served == without.served


def test_a_range_of_two_to_the_forty_is_decided_without_enumerating_it():
    scenario = _scenario("compare_sum", "two_inputs", {0: [0], 1: [0]}, ["default"])
    scenario = dataclasses.replace(scenario, coverage={"B": (0, 2**40)})
    coverage = run_scenario(scenario).runs[0].coverage
    assert coverage.method == "proved" and coverage.counterexample == {"B": 0}
    assert coverage.served == ({"B": (2, 2**40)},)
    assert coverage.points_checked < 1000


def _view_fails(b: int) -> bool:
    """Whether ``x.view(b // 2, 2, -1)`` of a [b, 8] tensor fails: no rows, or 8b elements that
    2 * (b // 2) does not divide (the reshape case's own arithmetic, not the tool's)."""
    return b // 2 == 0 or (8 * b) % (2 * (b // 2)) != 0


def test_boxes_past_the_lists_end_are_counted_and_no_budget_passes_on_the_partial_lists():
    """Over B in [0, 20000] after 4 -> 8, default leaves most odd sizes unserved and under
    mark_unbacked most odd sizes are served by a graph that raises: more boxes than a list
    holds. What is left out is counted, and a budget over sizes past a list's end is n/a."""
    hi = 20_000
    runs, _ = _runs("reshape", ["default", "mark_unbacked"], hi=hi)
    boxes: list[tuple[int, int]] = []
    for b in range(hi + 1):
        if _view_fails(b):
            if boxes and boxes[-1][1] == b - 1:
                boxes[-1] = (boxes[-1][0], b)
            else:
                boxes.append((b, b))
    for b in (7, hi - 1, hi):  # the arithmetic is what torch does
        try:
            cases.reshape(torch.randn(b, 8))
        except RuntimeError:
            assert _view_fails(b), b
        else:
            assert not _view_fails(b), b
    late = boxes[-1][0]

    raised = runs["mark_unbacked"].coverage
    listed = [f.sizes["B"] for f in raised.raises_at_runtime]
    assert len(listed) == 4096 < len(boxes)  # the list stops at 4,096 boxes (docs/coverage.md)
    assert listed == boxes[:4096]
    assert raised.raises_left_out == len(boxes) - 4096
    assert any("raises_left_out" in n for n in raised.notes)
    assert not raised.proved
    verdict, why = decide_budget(raised, {"B": (late, late)})
    assert verdict is None and "stops before this range ends" in why[0]  # n/a: not judged
    assert decide_budget(raised, {"B": (0, hi)})[0] == "served but raises"
    # inside the listed part the lists still answer, as the plain program does
    plain = Plain("reshape", "one_input", {0: [0]}, "mark_unbacked")
    assert plain.at(2)[2] is None and decide_budget(raised, {"B": (2, 2)}) is None
    assert plain.at(7)[2] is not None
    assert decide_budget(raised, {"B": (7, 7)})[0] == "served but raises"

    missed = runs["default"].coverage
    assert len(missed.unserved) == 4096 and not missed.complete
    # every size asked of the plain program's own cache entries, with torch's guard check:
    # the parts are the runs of sizes with one answer, and what the lists leave out is the rest
    torch._dynamo.reset()
    compiled = torch.compile(cases.reshape, backend="eager")
    for b in SEQUENCE:
        compiled(torch.randn(b, 8))
    entries = torch._dynamo.eval_frame._debug_get_cache_entry_list(cases.reshape.__code__)
    answers = [
        any(e.guard_manager.check({"x": torch.empty(b, 8)}) for e in entries) for b in range(hi + 1)
    ]
    parts = 1 + sum(a != b for a, b in zip(answers, answers[1:]))
    listed = len(missed.unserved) + len(missed.served)
    assert missed.boxes_left_out == parts - listed > 0
    assert any("boxes_left_out" in n for n in missed.notes)
    # the size past the list's end is unserved: the plain program compiles there
    plain = Plain("reshape", "one_input", {0: [0]}, "default")
    assert plain.at(late)[0] > 0 and missed.unserved[-1].sizes["B"][1] < late
    verdict, why = decide_budget(missed, {"B": (late, late)})
    assert verdict is None and "unserved list stops before this range ends" in why[0]
    assert missed.covers({"B": (late, late)}) is None
    # inside the listed part: judged, as the plain program does
    assert plain.at(2)[0] == 0 and decide_budget(missed, {"B": (2, 2)}) is None
    assert missed.covers({"B": (2, 2)}) is True
    assert plain.at(7)[0] > 0 and decide_budget(missed, {"B": (7, 7)})[0] == "B = 7 recompiles"
    assert covers_cell(runs["default"]).endswith(
        f" +4095 listed (proved: a partial list, {missed.boxes_left_out} parts not listed)"
    )

    text = "\n".join(lines_of([runs["mark_unbacked"], runs["default"]]))
    assert f"{len(boxes) - 4096} more served part(s) that raise, not listed anywhere" in text
    assert f"{missed.boxes_left_out} more served or unserved part(s), not listed anywhere" in text


def test_runtime_assertions_checked_at_samples_decide_no_budget_they_did_not_sample():
    """Over a range too large to enumerate, the graph's assertions are evaluated at samples
    only: a budget over a size no sample found raising is n/a, not passed (B = 299999 is odd:
    the view raises there, as torch says)."""
    hi = 300_000
    runs, _ = _runs("reshape", ["mark_unbacked"], hi=hi)
    coverage = runs["mark_unbacked"].coverage
    assert coverage.raises_sampled and coverage.raises_at_runtime
    assert any("sampled served sizes" in n for n in coverage.notes)
    b = hi - 1
    assert _view_fails(b) and not any(
        f.sizes["B"][0] <= b <= f.sizes["B"][1] for f in coverage.raises_at_runtime
    )
    with pytest.raises(RuntimeError):
        cases.reshape(torch.randn(b, 8))
    verdict, why = decide_budget(coverage, {"B": (b, b)})
    assert verdict is None and "sampled sizes only" in why[0]
