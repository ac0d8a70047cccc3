"""Provenance on real compiles: each guard, specialization and graph break of user code whose
line is known (found by its text in tests/fixtures/origin_programs.py) maps to that exact file and
line; and the lines agree with what torch itself prints for the same program in a fresh process
(TORCHDYNAMO_EXTENDED_DEBUG_GUARD_ADDED, and the guard_added_fast / symbolic_shape_specialization
events of a TORCH_TRACE file)."""

from __future__ import annotations

import contextlib
import importlib.util
import inspect
import json
import linecache
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from helpers import FIXTURES
from recompile_probe.provenance.capture import Collector, capture, capture_hook
from recompile_probe.provenance.files import FileResolver
from recompile_probe.provenance.first_use import first_uses
from recompile_probe.provenance.graph_breaks import graph_break_mark, graph_breaks
from recompile_probe.provenance.locations import (
    UserLoc,
    locs_in_comment,
    parse_user_loc,
    split_guard_text,
    user_function_name,
)
from recompile_probe.reasons.parse import DUCK_MARK
from recompile_probe.reasons.text import entry_line, strip_local_scope, tensor_of
from recompile_probe.records import encode
from recompile_probe.records.origin import Origin
from recompile_probe.torch_compat.files import shorten

FIXTURE = FIXTURES / "origin_programs.py"
ISSUE_KEYS = {"file", "line", "function", "code", "role"}


def _load(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


P = _load(FIXTURE, "origin_programs")


def line_of(fn, text: str) -> int:
    """The line of fn's source holding text (exactly one), found without the tool."""
    lines, start = inspect.getsourcelines(fn)
    hits = [start + i for i, line in enumerate(lines) if text in line]
    assert len(hits) == 1, (text, hits)
    return hits[0]


def assert_at(origin: Origin | None, fn, text: str, role: str) -> None:
    assert origin is not None
    assert (origin.file, origin.line, origin.role) == (str(FIXTURE), line_of(fn, text), role)
    assert origin.file_exact and origin.code == text and origin.function == fn.__name__


class Compiled:
    """fn compiled with a backend that captures each compile's ShapeEnv (eager underneath)."""

    def __init__(self, fn, *calls, duck=True, **options):
        torch._dynamo.reset()
        self.fn, self.collector, self.graphs = fn, Collector(), 0
        self.break_mark = graph_break_mark()

        def backend(gm, example_inputs):
            self.graphs += 1
            self.collector.capture()
            return gm.forward

        compiled = torch.compile(fn, backend=backend, **options)
        with torch.fx.experimental._config.patch(use_duck_shape=duck):
            for args in calls:
                compiled(*args)
        self.entries = torch._dynamo.eval_frame._debug_get_cache_entry_list(fn.__code__)

    def origins(self, entry=None):
        entry = entry if entry is not None else self.entries[0]
        return self.collector.get(str(entry.compile_id))

    def shape_parts(self, entry=None):
        entry = entry if entry is not None else self.entries[0]
        return [
            p
            for g in entry.guard_manager.root.get_epilogue_lambda_guards()
            for p in g.verbose_code_parts()
        ]

    def attribute(self, guard: str, entry=None):
        """The attribution of the entry's shape guard whose code is exactly ``guard``."""
        entry = entry if entry is not None else self.entries[0]
        parts = [p for p in self.shape_parts(entry) if split_guard_text(p)[0] == guard]
        assert len(parts) == 1, (guard, self.shape_parts(entry))
        return self.origins(entry).attribute(parts[0], first_uses(entry, self.fn.__code__))


@pytest.fixture(autouse=True)
def _fresh_dynamo():
    yield
    torch._dynamo.reset()


# --- seven programs with known user lines ---------------------------------------------------------


def test_shape_branch_guard_and_its_final_range():
    run = Compiled(P.shape_branch, (torch.randn(8, 3),), dynamic=True)
    (guard,) = [g for g in run.origins().guards if g.expr.endswith("> 4")]
    assert guard.sources == ("L['x'].size()[0]",)
    assert_at(guard.origin, P.shape_branch, "if x.shape[0] > 4:", "created")
    # Dynamo folds `> 4` into the range guard; the range maps back to the same line
    found = run.attribute("5 <= L['x'].size()[0]")
    assert_at(found.origin, P.shape_branch, "if x.shape[0] > 4:", "created")
    assert found.origins == found.credited == (found.origin,)
    # the default lower bound of the other dim is 0/1 specialization: shown as first use only
    other = run.attribute("2 <= L['x'].size()[1]")
    assert_at(other.origin, P.shape_branch, "y = x * 2", "first_use")


def test_range_loop_specializes_the_size_at_the_loop():
    run = Compiled(P.range_loop, (torch.randn(3, 2),), dynamic=True)
    (spec,) = run.origins().specializations
    assert (spec.source, spec.value, spec.reason) == ("L['x'].size()[0]", 3, None)
    assert_at(spec.origin, P.range_loop, "for i in range(x.size(0)):", "specialized")
    written = encode.data(spec)
    assert set(written) >= {"source", "value", "reason", "origin"}
    assert set(written["origin"]) >= ISSUE_KEYS
    # the specialized size leaves no shape guard (TENSOR_MATCH checks it): nothing to attribute
    assert not any("L['x'].size()[0]" in p for p in run.shape_parts())


def test_view_divisibility_guards_come_from_the_view_line():
    run = Compiled(P.view_rows, (torch.randn(6, 8),), dynamic=True)
    guards = run.origins().guards
    assert any("Mod(" in g.expr for g in guards)
    for g in guards:
        assert_at(g.origin, P.view_rows, "rows = x.view(-1, 4)", "created")
    found = run.attribute("((L['x'].size()[1]*L['x'].size()[0]) % 4) == 0")
    assert_at(found.origin, P.view_rows, "rows = x.view(-1, 4)", "created")
    assert set(found.sources) == {"L['x'].size()[0]", "L['x'].size()[1]"}


def test_eq_from_adding_two_inputs_where_dynamo_says_unknown():
    run = Compiled(P.add_two, (torch.randn(8), torch.randn(8)), duck=False, dynamic=True)
    (part,) = [p for p in run.shape_parts() if " == " in p]
    assert "unknown var" in part  # Dynamo's own comment names no line for this equality
    found = run.attribute("L['y'].size()[0] == L['x'].size()[0]")
    assert_at(found.origin, P.add_two, "total = a + y", "created")
    assert found.credited == ()


def test_bound_folded_into_a_range_credited_to_another_line():
    run = Compiled(P.branch_then_add, (torch.randn(8), torch.randn(8)), duck=False, dynamic=True)
    found = run.attribute("5 <= L['x'].size()[0]")
    # Dynamo credits the bound to the line that unified x and y ...
    (credited,) = found.credited
    assert_at(credited, P.branch_then_add, "return a + y", "created")
    # ... but the `> 4` came from the branch: both lines are reported, the branch first
    assert [o.line for o in found.origins] == [
        line_of(P.branch_then_add, "if x.shape[0] > 4:"),
        line_of(P.branch_then_add, "return a + y"),
    ]
    assert_at(found.origin, P.branch_then_add, "if x.shape[0] > 4:", "created")
    # the equality itself was made by the addition only
    equality = run.attribute("L['y'].size()[0] == L['x'].size()[0]")
    assert [o.line for o in equality.origins] == [line_of(P.branch_then_add, "return a + y")]


def test_duck_sizing_of_two_unrelated_dims():
    x, y = torch.randn(8, 3), torch.randn(8, 5)
    run = Compiled(P.duck_pair, (x, y), dynamic=True)
    (duck,) = run.origins().duck_sizing
    assert (duck.source, duck.same_as, duck.size) == (
        "L['y'].size()[0]",
        "L['x'].size()[0]",
        y.shape[0],
    )
    found = run.attribute("L['y'].size()[0] == L['x'].size()[0]")
    (part,) = [p for p in run.shape_parts() if p.startswith("L['y'].size()[0] ==")]
    assert DUCK_MARK in part  # Dynamo says why the equality exists
    assert found.duck_sizing is not None
    assert_at(found.duck_sizing.origin, P.duck_pair, "b = y.sum(1)", "first_use")
    assert found.origin == found.duck_sizing.origin
    # without duck sizing the two dims are unrelated: no equality, nothing to report
    torch._dynamo.reset()
    run = Compiled(P.duck_pair, (x, y), duck=False, dynamic=True)
    assert run.origins().duck_sizing == ()
    assert not any("L['y'].size()[0] ==" in p for p in run.shape_parts())


def test_graph_break_in_a_helper_two_calls_deep():
    # Dynamo's counters survive reset(): compare this compile's delta, not the process total.
    before = dict(torch._dynamo.utils.counters["graph_break"])
    run = Compiled(P.deep_break, (torch.randn(4),))
    breaks = graph_breaks(run.break_mark)
    (gb,) = breaks
    assert_at(gb.origin, P._inner, "torch._dynamo.graph_break()", "graph_break")
    # one break, one reason per frame that compiled up to it: Dynamo's own counter agrees
    after = torch._dynamo.utils.counters["graph_break"][gb.reason]
    assert gb.count == after - before.get(gb.reason, 0) == 3
    assert set(encode.data(gb)) == {"reason", "origin", "count"}
    # the resume functions Dynamo compiled map back to the user's functions, at the broken line
    seen = [r() for r in torch._dynamo.convert_frame.input_codes.seen]
    resumed = [
        (c.co_name, re.fullmatch(r"torch_dynamo_resume_in_.+_at_(\d+)", c.co_name))
        for c in seen
        if c is not None
    ]
    resumes = {user_function_name(name): int(m.group(1)) for name, m in resumed if m}
    expected = {
        "deep_break": line_of(P.deep_break, "b = _middle(a)"),
        "_middle": line_of(P._middle, "return _inner(z)"),
        "_inner": line_of(P._inner, "torch._dynamo.graph_break()"),
    }
    assert "deep_break" in resumes and resumes == {k: expected[k] for k in resumes}


def test_python_int_argument_branch_and_specialization():
    run = Compiled(P.int_arg, (torch.randn(4), 3), dynamic=True)
    found = run.attribute("3 <= L['n']")
    assert_at(found.origin, P.int_arg, "if n > 2:", "created")
    # an int forced to a constant by range(n); the recompile it causes names the loop
    run = Compiled(P.int_loop, (torch.randn(4), 3), (torch.randn(4), 4), dynamic=True)
    first, second = sorted(run.entries, key=lambda e: str(e.compile_id))
    (spec,) = run.origins(first).specializations
    assert (spec.source, spec.value) == ("L['n']", 3)
    assert_at(spec.origin, P.int_loop, "for _ in range(n):", "specialized")
    reason = torch._dynamo.utils.get_compilation_metrics()[-1].recompile_reason
    compile_id, failing = entry_line(reason)
    assert compile_id == str(first.compile_id) and failing.startswith("n == 3")
    found = run.collector.get(compile_id).attribute(failing)
    assert found.sources == ("L['n']",)
    assert_at(found.origin, P.int_loop, "for _ in range(n):", "specialized")


def test_tensor_size_mismatch_shows_first_use():
    run = Compiled(P.first_use, (torch.randn(4), torch.randn(3)), (torch.randn(5), torch.randn(3)))
    reason = torch._dynamo.utils.get_compilation_metrics()[-1].recompile_reason
    assert "tensor 'x' size mismatch" in reason
    static = [e for e in run.entries if str(e.compile_id) == "0/0"][0]
    uses = first_uses(static, P.first_use.__code__)
    assert_at(uses["L['x']"], P.first_use, "b = x.sin()", "first_use")
    assert_at(uses["L['y']"], P.first_use, "a = y.cos()", "first_use")


# --- agreement with torch's own printouts, in a fresh process -------------------------------------


def _run_fixture(names: list[str], env: dict[str, str]) -> subprocess.CompletedProcess:
    full_env = {**os.environ, "OMP_NUM_THREADS": "1", **env}
    return subprocess.run(
        [sys.executable, str(FIXTURE), *names],
        env=full_env,
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )


def test_agrees_with_extended_debug_guard_added():
    run = Compiled(P.shape_branch, (torch.randn(8, 3),), dynamic=True)
    (guard,) = run.origins().guards
    done = _run_fixture(
        ["shape_branch"],
        {"TORCH_LOGS": "dynamic", "TORCHDYNAMO_EXTENDED_DEBUG_GUARD_ADDED": guard.expr},
    )
    # torch prints the full user stack of exactly this guard; its last frame is the line
    assert "User Stack (most recent call last):" in done.stderr, done.stderr[-2000:]
    block = done.stderr.split("User Stack (most recent call last):", 1)[1]
    block = re.split(r"For C\+\+ stack trace|\] Stack \(most recent call last\)", block)[0]
    frames = re.findall(r'File "([^"]+)", line (\d+), in (\S+)', block)
    assert frames, done.stderr[-2000:]
    path, line, fn = frames[-1]
    assert (guard.origin.file, guard.origin.line, guard.origin.function) == (path, int(line), fn)


def test_agrees_with_the_structured_trace(tmp_path):
    names = ["shape_branch", "range_loop", "view_rows", "int_loop"]
    ours = {}
    for name in names:
        fn, make_args, options = P.PROGRAMS[name]
        run = Compiled(fn, make_args(), **options)
        ours[name] = run.origins()
    _run_fixture(names, {"TORCH_TRACE": str(tmp_path)})
    (trace,) = list(tmp_path.iterdir())
    files, guards, specs = {}, {}, {}
    for line in trace.read_text().splitlines():
        if "{" not in line or line.startswith("\t"):
            continue
        record = json.loads(line[line.index("{") :])
        if "str" in record:
            files[record["str"][1]] = record["str"][0]
        for kind, into in (("guard_added_fast", guards), ("symbolic_shape_specialization", specs)):
            if kind in record:
                frame = record[kind]["user_stack"][-1]
                key = record[kind].get("expr") or tuple(record[kind]["sources"])
                into[(frame["name"], key)] = (files[frame["filename"]], frame["line"])
                if kind == "symbolic_shape_specialization":
                    into[(frame["name"], key)] += (record[kind]["value"],)
    checked = 0
    for name, found in ours.items():
        for g in found.guards:
            assert guards[(name, g.expr)] == (g.origin.file, g.origin.line)
            checked += 1
        for s in found.specializations:
            assert specs[(name, s.sources)] == (s.origin.file, s.origin.line, str(s.value))
            checked += 1
    assert checked >= 9  # branch, loop, view and int guards, and both specializations


# --- capture without our backend ------------------------------------------------------------------


def test_capture_hook_sees_compiles_of_any_backend():
    collector = Collector()
    torch._dynamo.reset()
    original = torch._dynamo.output_graph.OutputGraph.call_user_compiler
    with capture_hook(collector.add) as hooked:
        assert hooked
        torch.compile(P.shape_branch, backend="eager", dynamic=True)(torch.randn(8, 3))
    assert torch._dynamo.output_graph.OutputGraph.call_user_compiler is original
    (entry,) = torch._dynamo.eval_frame._debug_get_cache_entry_list(P.shape_branch.__code__)
    (guard,) = collector.get(str(entry.compile_id)).guards
    assert_at(guard.origin, P.shape_branch, "if x.shape[0] > 4:", "created")
    assert capture() is None  # outside a compile there is nothing to capture


def test_guard_added_by_the_backend_gets_no_line():
    # aot_eager adds guards after tracing, with no user frame: no origin, not a nearby line
    collector = Collector()
    torch._dynamo.reset()
    with capture_hook(collector.add):
        torch.compile(P.view_rows, backend="aot_eager", dynamic=True)(torch.randn(6, 8))
    (entry,) = torch._dynamo.eval_frame._debug_get_cache_entry_list(P.view_rows.__code__)
    found = collector.get(str(entry.compile_id))
    assert [g.origin for g in found.guards if g.origin is None]
    parts = [
        p
        for g in entry.guard_manager.root.get_epilogue_lambda_guards()
        for p in g.verbose_code_parts()
    ]
    late = [p for p in parts if split_guard_text(p)[1].startswith("(")]
    assert late, parts  # Dynamo's comment names torch's frame only
    for part in late:
        attribution = found.attribute(part)
        assert attribution.sources and attribution.origin is None and not attribution.origins
    view = [p for p in parts if "% 4) == 0" in p]
    assert_at(found.attribute(view[0]).origin, P.view_rows, "rows = x.view(-1, 4)", "created")


# --- paths: torch prints them shortened -----------------------------------------------------------


def test_shortened_path_of_a_file_outside_the_project(tmp_path):
    # under /tmp torch cuts "/t" off the path (commonpath with its own dir is "/")
    path = tmp_path / "elsewhere_prog.py"
    path.write_text(
        "def f(x):\n    if x.shape[0] > 4:  # a comment with  # in it\n"
        "        return x + 1\n    return x\n"
    )
    module = _load(path, "elsewhere_prog")
    run = Compiled(module.f, (torch.randn(8),), dynamic=True)
    (guard,) = run.origins().guards
    assert guard.origin.file == str(path) and guard.origin.file_exact
    assert guard.origin.line == 2
    assert guard.origin.code == "if x.shape[0] > 4:  # a comment with  # in it"


def test_two_candidate_files_keep_the_short_path(tmp_path):
    # torch cuts the common path with its own folder plus one character: two files that share
    # only "/" with it and differ in their first character shorten alike. Made-up top folders
    # (linecache entries, no disk), so where torch itself lives (/tmp in a venv) does not matter.
    real = f"/Qrp-{tmp_path.name}/twin.py"
    twin = "/R" + real[2:]
    short = shorten(real)
    assert shorten(twin) == short != real
    with _linecache_entries(real, twin):
        assert FileResolver().resolve(short) == (short, False)
        loc = UserLoc(short, 1, "f", "x = 1")
        origin = FileResolver().origin(loc, "created")
        assert (origin.file, origin.file_exact) == (short, False)
    with _linecache_entries(real):
        assert FileResolver().resolve(short, 1, "x = 1") == (real, True)
        assert FileResolver().resolve(short, 1, "y = 2") == (short, False)  # the line disagrees


@contextlib.contextmanager
def _linecache_entries(*paths):
    for p in paths:
        linecache.cache[p] = (6, None, ["x = 1\n"], p)
    try:
        yield
    finally:
        for p in paths:
            linecache.cache.pop(p, None)


# --- parsing --------------------------------------------------------------------------------------


def test_user_function_name_of_a_resume_function():
    assert user_function_name("torch_dynamo_resume_in_f_at_10") == "f"
    assert (
        user_function_name("torch_dynamo_resume_in_torch_dynamo_resume_in_load_at_5_at_10_at_12")
        == "load_at_5"
    )
    assert user_function_name("forward") == "forward"


def test_parse_locations():
    loc = parse_user_loc("if x.shape[0] > 4:  # note  # mp/exp/se.py:9 in f")
    assert (loc.code, loc.path, loc.line, loc.function) == (
        "if x.shape[0] > 4:  # note",
        "mp/exp/se.py",
        9,
        "f",
    )
    assert parse_user_loc("a/b.py:3 in <module>").code is None
    assert parse_user_loc("no location here") is None
    part = (
        "check_tensor(L['x'], Tensor, size=[8])  # a = x.sin()  # mp/e.py:8 in f "
        "(HINT: type Tensor)"
    )
    (loc,) = locs_in_comment(split_guard_text(part)[1])
    assert (loc.code, loc.path, loc.line) == ("a = x.sin()", "mp/e.py", 8)
    assert locs_in_comment("_dynamo/output_graph.py:1135 in init_ambient_guards")[0].code is None
    assert entry_line("- 0/1: n == 3  # x") == ("0/1", "n == 3  # x")
    assert strip_local_scope("L['x'].size()[0] == L[\"y\"]") == "x.size()[0] == y"
    assert tensor_of("L['x'].size()[1]") == "L['x']"


def test_origin_json_and_torch_frames_are_not_user_code():
    origin = Origin("/a/b.py", 3, "f", "x = 1", "created")
    assert set(encode.data(origin)) == ISSUE_KEYS | {"file_exact"} and origin.where() == "b.py:3"
    torch_file = torch._dynamo.output_graph.__file__
    loc = UserLoc(shorten(torch_file), 10, "compile_subgraph", None)
    assert FileResolver().origin(loc, "created") is None
