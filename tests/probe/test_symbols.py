"""Named size symbols against real torch: two-symbol scenarios, drivers, keyword and nested dims.

Every count the tool reports is checked against a count made independently: a CompileCounter in
a fresh process that imports torch alone and applies the same marks by hand
(fixtures/hand_count_symbols.py), or `recompile-probe watch` on the same program run on its own.
"""

from __future__ import annotations

import dataclasses
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from helpers import CONFIGS, FIXTURES
from recompile_probe.cli import app
from recompile_probe.execution.session import run_scenario
from recompile_probe.scenario.load import load
from recompile_probe.scenario.overrides import with_overrides

TARGETS = FIXTURES / "symbol_targets.py"
HAND = FIXTURES / "hand_count_symbols.py"

STRATEGIES = [
    "default",
    "dynamic_true",
    "mark_dynamic",
    "mark_unbacked",
    "unbacked_sources",
    "mixed",
]

# --- 1. two-symbol scenarios: graphs == an independent CompileCounter -----------------------------

#: Each callable, written out by hand: argument shapes, the dims of each symbol as (arg, dim), the
#: Dynamo source of each such dim, the symbols that vary in its sequences (the ones built-in marks
#: act on), the per-symbol custom strategy (symbol -> mark), and the sequences (points) to drive.
CALLABLES = {
    # only S varies (B held at 2): built-in marks touch S alone
    "pool": dict(
        shapes=[["B", "S", 16]],
        dims={"B": [[0, 0]], "S": [[0, 1]]},
        sources={"B": ["L['x']:0"], "S": ["L['x']:1"]},
        varying=["S"],
        custom={"mixed": {"B": "unbacked", "S": "dynamic"}},
        sequences={"s": [{"B": 2, "S": 7}, {"B": 2, "S": 1}, {"B": 2, "S": 33}, {"B": 2, "S": 7}]},
    ),
    # both vary: a prefill grid and a decode sequence
    "attn": dict(
        shapes=[["B", "S", 16], ["B", "S", 16]],
        dims={"B": [[0, 0], [1, 0]], "S": [[0, 1], [1, 1]]},
        sources={"B": ["L['q']:0", "L['k']:0"], "S": ["L['q']:1", "L['k']:1"]},
        varying=["B", "S"],
        custom={"mixed": {"B": "unbacked", "S": "dynamic"}},
        sequences={
            "prefill": [{"B": 1, "S": 7}, {"B": 1, "S": 33}, {"B": 2, "S": 7}, {"B": 2, "S": 33}],
            "decode": [{"B": 1, "S": 1}, {"B": 2, "S": 1}, {"B": 4, "S": 1}],
        },
    ),
    # S and T are different symbols the function unifies with torch._check
    "add_checked": dict(
        shapes=[[4, "S"], [4, "T"]],
        dims={"S": [[0, 1]], "T": [[1, 1]]},
        sources={"S": ["L['a']:1"], "T": ["L['b']:1"]},
        varying=["S", "T"],
        custom={"mixed": {"S": "unbacked", "T": "dynamic"}},
        sequences={"eq": [{"S": 1, "T": 1}, {"S": 2, "T": 2}, {"S": 8, "T": 8}, {"S": 2, "T": 2}]},
    ),
}


def _hand_case(
    target: str, spec: dict, strategy: str, points: list, backend: str, varying: list
) -> dict:
    """What the strategy does, spelt out with torch's own knobs (not read from the tool)."""
    dynamic, marks, config = None, {}, {}
    if strategy == "static":
        dynamic = False
    elif strategy == "dynamic_true":
        dynamic = True
    elif strategy == "mark_dynamic":
        marks = {s: "dynamic" for s in varying}
    elif strategy == "mark_unbacked":
        marks = {s: "unbacked" for s in varying}
    elif strategy == "unbacked_sources":
        config = {
            "torch.compiler.config.unbacked_sources": ",".join(
                src for s in varying for src in spec["sources"][s]
            )
        }
    elif strategy in spec["custom"]:
        marks = dict(spec["custom"][strategy])
    else:
        assert strategy == "default", strategy
    return {
        "target": target,
        "factory": spec.get("factory"),
        "backend": backend,
        "dynamic": dynamic,
        "marks": marks,
        "dims": spec["dims"],
        "config": config,
        "points": points,
        "shapes": spec.get("shapes"),
    }


def _unsupported_here(strategy: str, status: str, message: str | None) -> bool:
    """True for a strategy this torch cannot run (unbacked_sources where the tool's canary, checked
    against a hand count in test_compat, finds dims not honoured, e.g. 2.9): it must then say so."""
    from helpers import unbacked_sources_honoured

    if strategy != "unbacked_sources" or unbacked_sources_honoured():
        return False
    assert status == "unsupported" and "not honoured" in (message or ""), (strategy, status)
    return True


def _scenario_yaml(name: str, spec: dict, backend: str) -> str:
    inputs = "\n".join(f"  - {{shape: [{', '.join(map(str, s))}]}}" for s in spec["shapes"])
    sequences = "\n".join(
        f"  {seq}: {json.dumps(points)}" for seq, points in spec["sequences"].items()
    )
    mixed = ", ".join(f"{s}: {k}" for s, k in spec["custom"]["mixed"].items())
    return (
        f"target: {TARGETS}:{name}\ninputs:\n{inputs}\nsequences:\n{sequences}\n"
        f"backend: {backend}\nstrategies: [{', '.join(STRATEGIES)}]\n"
        f"custom_strategies:\n  mixed: {{mark: {{{mixed}}}}}\nrepeats: 2\n"
    )


def _hand_counts(cases: dict, tmp_path: Path) -> dict:
    """Run the hand counts in a fresh interpreter that imports torch and nothing of ours."""
    spec = tmp_path / "cases.json"
    spec.write_text(json.dumps(cases))
    probe_free = (
        "import sys, runpy; sys.argv = sys.argv[1:]; "
        "runpy.run_path(sys.argv[0], run_name='__main__'); "
        "assert not any(m.startswith('recompile_probe') for m in sys.modules)"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe_free, str(HAND), str(spec)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.slow
# aot_eager: the graphs are what the backend receives (eager, the default, is counted against a
# CompileCounter in tests/probe/test_probe.py and tests/test_configs.py)
@pytest.mark.parametrize("backend", ["aot_eager"])
def test_two_symbol_graphs_equal_an_independent_compile_counter(tmp_path, backend):
    cases, runs = {}, {}
    for name, spec in CALLABLES.items():
        path = tmp_path / f"{name}.yaml"
        path.write_text(_scenario_yaml(name, spec, backend))
        report = run_scenario(load(path))
        assert report.complete
        for run in report.runs:
            key = f"{name} {run.sequence_name} {run.strategy}"
            runs[key] = run
            points = spec["sequences"][run.sequence_name]
            assert [dict(p) for p in run.points] == points, key
            cases[key] = _hand_case(
                f"{TARGETS}:{name}", spec, run.strategy, points, backend, spec["varying"]
            )
    assert len(runs) == len(STRATEGIES) * 4  # pool s, attn prefill + decode, add_checked eq
    hand = _hand_counts(cases, tmp_path)
    for key, run in list(runs.items()):
        if _unsupported_here(run.strategy, run.status, run.error and run.error.message):
            assert run.graphs is None, key  # n/a, not a count
            del runs[key]
            continue
        graphs, error = hand[key]
        assert error is None and run.status == "ok", (key, error, run.error)
        assert run.graphs == graphs, (key, run.graphs, graphs)
        assert run.outputs_match is True, key
        # every call carries its point, in order
        points = [c.sizes for c in run.calls]
        assert points == [dict(p) for p in run.points], key
    # not a vacuous comparison: the strategies disagree on each sequence
    for name, spec in CALLABLES.items():
        for seq in spec["sequences"]:
            counts = {
                runs[f"{name} {seq} {s}"].graphs for s in STRATEGIES if f"{name} {seq} {s}" in runs
            }
            assert len(counts) > 1, (name, seq, counts)
    # torch._check unifies S and T: unbacked, one graph for the whole sequence
    assert hand["add_checked eq mark_unbacked"] == [1, None]
    assert runs["add_checked eq mark_unbacked"].graphs == 1
    # built-in marks act on the symbols that vary: with B held at 2 only S is marked, while the
    # per-symbol strategy marks B too (Dynamo's own guard on the first entry says which is dynamic)
    assert _sizes(runs["pool s mark_unbacked"].entries[0], "L['x']") == ["2", "None", "16"]
    assert _sizes(runs["pool s mixed"].entries[0], "L['x']") == ["None", "None", "16"]


def _sizes(entry, source: str) -> list[str]:
    """The size=[...] of a TENSOR_MATCH guard on ``source``: "None" for a dynamic dim."""
    guards = (
        entry["guards"]
        if isinstance(entry, dict)
        else [{"kind": g.kind, "source": g.source, "text": g.text} for g in entry.guards]
    )
    (text,) = [g["text"] for g in guards if g["kind"] == "TENSOR_MATCH" and g["source"] == source]
    return [d.strip() for d in re.search(r"size=\[([^\]]*)\]", text).group(1).split(",")]


# --- the shipped prefill/decode example, against the same independent count -----------------------

PREFILL_DECODE = dict(
    factory=f"{CONFIGS / 'prefill_decode.py'}:make_inputs",
    dims={
        "B": [["x", 0], ["past_k", 0], ["past_v", 0]],
        "S": [["x", 1]],
        "P": [["past_k", 2], ["past_v", 2]],
    },
    sources={
        "B": ["L['x']:0", "L['past_k']:0", "L['past_v']:0"],
        "S": ["L['x']:1"],
        "P": ["L['past_k']:2", "L['past_v']:2"],
    },
    custom={"batch_only": {"B": "unbacked"}},
    # the grids, expanded by hand: the last symbol varies fastest
    sequences={
        "prefill": (
            [
                {"B": 1, "S": 16, "P": 0},
                {"B": 1, "S": 64, "P": 0},
                {"B": 4, "S": 16, "P": 0},
                {"B": 4, "S": 64, "P": 0},
            ],
            ["B", "S"],
        ),
        "decode": ([{"B": b, "S": 1, "P": 64} for b in (1, 2, 4, 8)], ["B"]),
    },
)


@pytest.mark.slow
def test_shipped_prefill_decode_matches_an_independent_compile_counter(tmp_path):
    # four of its strategies, the ones that differ most (dynamic_true, mark_dynamic and
    # unbacked_sources are counted by hand on two symbols in the test above): every call is
    # also compiled by hand below
    scenario = dataclasses.replace(
        load(CONFIGS / "prefill_decode.yaml"),
        repeats=2,
        strategies=("default", "static", "mark_unbacked", "batch_only"),
    )
    report = run_scenario(scenario)
    assert report.complete and len(report.runs) == 2 * len(scenario.strategies)
    cases, runs = {}, {}
    for run in report.runs:
        key = f"{run.sequence_name} {run.strategy}"
        points, varying = PREFILL_DECODE["sequences"][run.sequence_name]
        assert [dict(p) for p in run.points] == points, key
        runs[key] = run
        cases[key] = _hand_case(
            f"{CONFIGS / 'prefill_decode.py'}:block",
            PREFILL_DECODE,
            run.strategy,
            points,
            scenario.backend,
            varying,
        )
    hand = _hand_counts(cases, tmp_path)
    for key, run in list(runs.items()):
        if _unsupported_here(run.strategy, run.status, run.error and run.error.message):
            assert run.graphs is None, key
            del runs[key]
            continue
        assert hand[key] == [run.graphs, None] and run.status == "ok", (key, hand[key], run.graphs)
        assert run.outputs_match is True, key
    for seq in PREFILL_DECODE["sequences"]:  # the example exists to show the strategies differ
        assert (
            len({runs[f"{seq} {s}"].graphs for s in scenario.strategies if f"{seq} {s}" in runs})
            >= 3
        ), seq


# --- 2. a driver scenario against `watch` on the same program run on its own ----------------------

PROGRAM = CONFIGS / "prefill_decode.py"
CLI = [sys.executable, "-m", "recompile_probe"]


def _watch(program_args: list[str], out: Path) -> dict:
    done = subprocess.run(
        [*CLI, "watch", "-f", "json", "-o", str(out), "--", "python", str(PROGRAM), *program_args],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(out.read_text())


@pytest.mark.slow
def test_driver_reproduces_what_watch_records_of_the_program_on_its_own(tmp_path):
    points = "B=1,S=7; B=2,S=7; B=2,S=33"  # both symbols vary, so every strategy marks both
    scenario = with_overrides(load(CONFIGS / "prefill_decode_generate.yaml"), sequence=points)
    # a strategy that recompiles and one that marks both symbols: each costs a watched run of the
    # program in its own process
    strategies = ("default", "mark_unbacked")
    scenario = dataclasses.replace(scenario, repeats=2, strategies=strategies)
    assert scenario.driver and set(
        load(CONFIGS / "prefill_decode_generate.yaml").strategies
    ) >= set(strategies)
    report = run_scenario(scenario)
    assert report.complete
    for run in report.runs:
        if _unsupported_here(run.strategy, run.status, run.error and run.error.message):
            continue
        watched = _watch(
            ["--strategy", run.strategy, "--backend", scenario.backend, "--points", points],
            tmp_path / f"{run.strategy}.json",
        )
        (fn,) = watched["functions"]  # the program compiles one function: the block's forward
        where = run.strategy
        assert run.status == "ok" and run.outputs_match is True, (where, run.error)
        assert (run.compiles, run.recompiles, run.graphs, run.cache_entries) == (
            fn["compiles"],
            fn["recompiles"],
            fn["graphs"],
            fn["cache_entries"],
        ), where
        # the same compiles, for the same reasons, in the same order
        assert [(e.compile_id, e.reason) for e in run.compile_events] == [
            (e["compile_id"], e["reason"]) for e in watched["events"]
        ], where
        # every call the driver made is in the report: per point, a prefill and 3 decode steps
        assert [(c.point_index, c.step) for c in run.calls] == [
            (p, s) for p in range(3) for s in range(4)
        ], where
        assert [c.sizes for c in run.calls] == [{"B": 1, "S": 7}] * 4 + [{"B": 2, "S": 7}] * 4 + [
            {"B": 2, "S": 33}
        ] * 4, where
    graphs = {r.strategy: r.graphs for r in report.runs}
    assert len(set(graphs.values())) > 1, graphs


@pytest.mark.slow
def test_driver_drawing_from_the_global_rng_is_compared_on_equal_inputs(write_scenario):
    path = write_scenario(f"""
        target: {TARGETS}:scale_rows
        driver: {TARGETS}:global_rng_driver
        dims: {{B: {{x: [0]}}, S: {{x: [1]}}}}
        sequences: {{s: [{{B: 1, S: 3}}, {{B: 2, S: 3}}, {{B: 2, S: 5}}]}}
        strategies: [default, mark_unbacked]
        repeats: 2
        """)
    report = run_scenario(load(path))
    for run in report.runs:
        assert run.status == "ok" and len(run.calls) == 6, run.strategy
        assert [c.outputs_match for c in run.calls] == [True] * 6, run.strategy
        # the steady state repeats a call outside the counts: graphs are the sequence's own
        assert run.graphs == sum(c.graphs for c in run.calls), run.strategy


@pytest.mark.slow
def test_driver_sources_expand_star_paths_from_the_calls_it_made(write_scenario):
    # unbacked_sources needs concrete sources: a driver's `xs[*]` becomes L['xs'][0], L['xs'][1]
    # from the calls of the eager reference (there is no factory to ask)
    path = write_scenario(f"""
        target: {TARGETS}:sum_rows
        driver: {TARGETS}:list_driver
        dims: {{B: {{"xs[*]": [0]}}}}
        sequences: {{s: [2, 3, 4]}}
        strategies: [default, unbacked_sources]
        repeats: 2
        """)
    runs = {r.strategy: r for r in run_scenario(load(path)).runs}
    unsupported = _unsupported_here(
        "unbacked_sources",
        runs["unbacked_sources"].status,
        getattr(runs["unbacked_sources"].error, "message", None),
    )
    for source in ("L['xs'][0]", "L['xs'][1]"):
        assert _sizes(runs["default"].entries[0], source) == ["2", "4"]
        if not unsupported:
            assert _sizes(runs["unbacked_sources"].entries[0], source) == ["None", "4"]
    if unsupported:
        return
    assert runs["unbacked_sources"].marked_dims == 2 and runs["unbacked_sources"].notes == ()


# --- 3. keyword and nested dims mark what they name (Dynamo's guards say so) ----------------------

NESTED = {
    "encode": {
        "L['input_ids']": {0, 1},
        "L['cache'].keys[0]": {0, 2},
        "L['cache'].keys[1]": {0, 2},
        "L['cache'].values[0]": {0, 2},
        "L['cache'].values[1]": {0, 2},
        "L['batch']['pixel_values']": {0},
    },
}
NESTED["encode_kwargs"] = {
    k.replace("L['cache']", "L['kwargs']['cache']").replace("L['batch']", "L['kwargs']['batch']"): v
    for k, v in NESTED["encode"].items()
}


@pytest.mark.slow
@pytest.mark.parametrize("target", sorted(NESTED))
def test_keyword_and_nested_dims_mark_what_they_name(write_scenario, tmp_path, target):
    path = write_scenario(f"""
        target: {TARGETS}:{target}
        # factory -> ((input_ids,), {{cache: KVCache, batch: dict}})
        factory: {TARGETS}:make_encode_inputs
        dims:
          B: {{input_ids: [0], "cache.keys[*]": [0], "cache.values[*]": [0],
              'batch["pixel_values"]': [0]}}
          S: {{input_ids: [1], "cache.keys[*]": [2], "cache.values[*]": [2]}}
        sequences:
          s: [{{B: 2, S: 5}}, {{B: 3, S: 9}}]
        strategies: [default, mark_dynamic, mark_unbacked, unbacked_sources]
        repeats: 2
        """)
    out = tmp_path / "report.json"
    result = CliRunner().invoke(app, ["run", str(path), "-q", "-f", "json", "-o", str(out)])
    assert result.exit_code == 0, result.output
    runs = {r["strategy"]: r for r in json.loads(out.read_text())["runs"]}
    expected = NESTED[target]
    for strategy, run in runs.items():
        if _unsupported_here(strategy, run["status"], (run.get("error") or {}).get("message")):
            continue
        assert run["status"] == "ok" and run["outputs_match"] is True, strategy
        first = next(e for e in run["entries"] if e["compile_id"] == "0/0")
        for source, dynamic in expected.items():
            sizes = _sizes(first, source)
            if strategy == "default":  # the first compile is static everywhere
                assert "None" not in sizes, (strategy, source, sizes)
            else:  # exactly the named dims are dynamic, the others keep their size
                assert {i for i, d in enumerate(sizes) if d == "None"} == dynamic, (
                    strategy,
                    source,
                    sizes,
                )
    # unbacked marks reach the nested tensors: no 0/1 specialization guard on their sizes
    shape_guards = [
        g["text"] for g in runs["mark_unbacked"]["entries"][0]["guards"] if g["kind"] == "SHAPE_ENV"
    ]
    assert not [t for t in shape_guards if t.startswith("2 <=")], shape_guards
    assert [
        t
        for t in [g["text"] for g in runs["mark_dynamic"]["entries"][0]["guards"]]
        if t.startswith("2 <=")
    ]


# --- 4. malformed symbols, points, dims and paths: exit 2, file, line and token, no traceback -----

TWO = """\
target: user_targets.py:scale_shift
inputs:
  - {shape: [B, S]}
  - {shape: [B, 1]}
sequences:
  s: [{B: 1, S: 4}, {B: 2, S: 4}]
"""
FACTORY = """\
target: user_targets.py:scale_shift
factory: user_targets.py:make_pair
dims:
  B: {0: [0], 1: [0]}
  S: {0: [1]}
sequences:
  s: [{B: 1, S: 4}]
"""
POINTS = "[{B: 1, S: 4}, {B: 2, S: 4}]"


def _seq(value: str) -> str:
    return TWO.replace(POINTS, value)


def _dims(old: str, new: str) -> str:
    assert old in FACTORY
    return FACTORY.replace(old, new)


# (yaml, line expected in the message, substrings expected: the token and what is wrong)
MALFORMED = [
    pytest.param(
        _seq("[{B: 1, SS: 4}]"),
        6,
        ["unknown size symbol 'SS'", "Did you mean 'S'"],
        id="point-unknown-symbol",
    ),
    pytest.param(
        _seq("[{B: 1, S: 4}, {B: 2}]"),
        6,
        ["sequences.s[1]", "missing size for symbol S"],
        id="point-missing-symbol",
    ),
    pytest.param(
        _seq("[{B: 2, S: -4}]"),
        6,
        ["sequences.s[0].S", "cannot be negative, got -4"],
        id="point-negative-size",
    ),
    pytest.param(
        _seq("[{B: 2, S: 4.5}]"),
        6,
        ["sequences.s[0].S", "expected a size", "4.5"],
        id="point-float-size",
    ),
    pytest.param(
        _seq("[{B: 2, S: four}]"), 6, ["sequences.s[0].S", "'four'"], id="point-string-size"
    ),
    pytest.param(
        _seq("[{B: true, S: 4}]"), 6, ["sequences.s[0].B", "boolean"], id="point-bool-size"
    ),
    pytest.param(
        _seq("[1, 2]"),
        6,
        ["sequences.s[0]", "a plain number is a batch size", "symbols are B, S"],
        id="plain-number-with-two-symbols",
    ),
    pytest.param(
        _seq("{grid: {B: [1], S: [4]}, order: fast}"),
        6,
        ["sequences.s.order", "unknown key 'order'"],
        id="grid-unknown-key",
    ),
    pytest.param(
        _seq("{grid: {B: [1, 2], Q: [4]}}"),
        6,
        ["sequences.s.grid.Q", "unknown size symbol 'Q'", "symbols: B, S"],
        id="grid-unknown-symbol",
    ),
    pytest.param(
        _seq("{grid: {B: [1, 2]}}"),
        6,
        ["sequences.s.grid", "missing size for symbol S"],
        id="grid-missing-symbol",
    ),
    pytest.param(
        _seq("{grid: {B: [], S: [4]}}"),
        6,
        ["sequences.s.grid.B", "non-empty list of sizes for B"],
        id="grid-empty-sizes",
    ),
    pytest.param(
        _seq("{grid: [1, 2]}"),
        6,
        ["sequences.s.grid", "expected a mapping of symbol"],
        id="grid-not-a-mapping",
    ),
    pytest.param(
        _seq("{grid: {B: [1, -2], S: [4]}}"),
        6,
        ["sequences.s.grid.B[1]", "cannot be negative, got -2"],
        id="grid-negative-size",
    ),
    pytest.param(
        _seq("'B=1,S=4'"),
        6,
        ["sequences.s", "expected a list of sizes or points", "a string"],
        id="sequence-is-a-string",
    ),
    pytest.param(
        TWO.replace("[B, S]", "[B, S-1]"),
        3,
        ["inputs[0].shape[1]", "'S-1' is not a size symbol"],
        id="shape-bad-symbol",
    ),
    pytest.param(
        TWO.replace("[B, S]", "[B, 2.5]"),
        3,
        ["inputs[0].shape[1]", "an integer or a size symbol", "2.5"],
        id="shape-float-dim",
    ),
    pytest.param(
        TWO.replace(
            "inputs:\n  - {shape: [B, S]}\n  - {shape: [B, 1]}", "inputs:\n  1x: {shape: [B, S]}"
        ),
        3,
        ["inputs.1x", "keyword argument names are identifiers"],
        id="keyword-not-identifier",
    ),
    pytest.param(
        _dims("  B: {0: [0], 1: [0]}", "  b: {0: [0], 1: [0]}"),
        4,
        ["dims.b", "'b' is not a size symbol"],
        id="dims-not-a-symbol",
    ),
    pytest.param(
        _dims("  S: {0: [1]}", "  S: [1]"),
        5,
        ["dims.S", "expected a mapping of argument"],
        id="dims-symbol-not-a-mapping",
    ),
    pytest.param(
        _dims("  S: {0: [1]}", "  S: {'x[': [1]}"),
        5,
        ["dims.S.x[", "cannot read the argument path 'x['"],
        id="dims-path-unclosed",
    ),
    pytest.param(
        _dims("  S: {0: [1]}", "  S: {'cache.keys[abc]': [2]}"),
        5,
        ["dims.S.cache.keys[abc]", "at '[abc]'", '["key"] or [*]'],
        id="dims-path-bad-step",
    ),
    pytest.param(
        _dims("  S: {0: [1]}", "  S: {'.keys': [2]}"),
        5,
        [
            "dims.S..keys",
            "cannot read the argument path '.keys'",
            "Start with an argument index or a keyword",
        ],
        id="dims-path-no-head",
    ),
    pytest.param(
        _dims("  S: {0: [1]}", "  S: {-1: [1]}"),
        5,
        ["dims.S.-1", "argument index cannot be negative, got -1"],
        id="dims-negative-argument",
    ),
    pytest.param(
        _dims("  S: {0: [1]}", "  S: {0: [one]}"),
        5,
        ["dims.S.0[0]", "expected a dim index", "'one'"],
        id="dims-dim-not-an-index",
    ),
    pytest.param(
        _dims("  S: {0: [1]}", "  S: {0: []}"),
        5,
        ["dims.S.0", "expected a list of dims"],
        id="dims-empty-dim-list",
    ),
    pytest.param(
        FACTORY + "batch_dims: {0: [0]}\n",
        8,
        ["batch_dims", "give either 'dims' or 'batch_dims'"],
        id="dims-and-batch-dims",
    ),
    pytest.param(
        TWO + "dims: {B: {0: [0]}}\n",
        7,
        ["dims", "with `inputs`, dims come from the symbols"],
        id="dims-with-inputs",
    ),
    pytest.param(
        _dims("dims:\n  B: {0: [0], 1: [0]}\n  S: {0: [1]}", "dims: {}"),
        3,
        ["dims", "expected at least one size symbol"],
        id="dims-empty",
    ),
    pytest.param(
        _dims("dims:\n  B: {0: [0], 1: [0]}\n  S: {0: [1]}", "dims: [B, S]"),
        3,
        ["dims", "expected a mapping of symbol"],
        id="dims-not-a-mapping",
    ),
    pytest.param(
        TWO + "custom_strategies:\n  mine: {mark: {Q: unbacked}}\n",
        8,
        ["custom_strategies.mine.mark.Q", "unknown size symbol 'Q'"],
        id="custom-mark-unknown-symbol",
    ),
    pytest.param(
        TWO + "custom_strategies:\n  mine: {mark: {B: unbaked}}\n",
        8,
        ["custom_strategies.mine.mark.B", "unknown mark 'unbaked'", "Did you mean 'unbacked'"],
        id="custom-mark-unknown-kind",
    ),
    pytest.param(
        TWO + "custom_strategies:\n  mine:\n    mark: unbacked\n"
        "    mark_options: {SS: {hint_override: 8}}\n",
        10,
        ["custom_strategies.mine.mark_options.SS", "unknown size symbol 'SS'", "Did you mean 'S'"],
        id="custom-mark-options-unknown-symbol",
    ),
    pytest.param(
        FACTORY.replace("factory: user_targets.py:make_pair", "driver: nowhere.py:run"),
        2,
        ["driver", "driver file 'nowhere.py' does not exist"],
        id="driver-missing-file",
    ),
    pytest.param(
        FACTORY.replace("factory: user_targets.py:make_pair", "driver: run"),
        2,
        ["driver", "'run' is not of the form file.py:fn"],
        id="driver-not-a-reference",
    ),
]


@pytest.mark.parametrize("text, line, expected", MALFORMED)
def test_malformed_symbols_points_and_dims_exit_2_naming_the_place(
    write_scenario, text, line, expected
):
    path = write_scenario(text)
    result = CliRunner().invoke(app, ["run", str(path), "--quiet"])
    output = result.output
    assert result.exit_code == 2, output
    assert "Traceback" not in output
    assert f"{path}:{line}" in output, output
    for fragment in expected:
        assert fragment in output, output


def test_there_are_at_least_15_malformed_symbol_cases():
    assert len(MALFORMED) >= 15


#: dims that parse but name nothing in what the factory returns: found when the inputs are made,
#: reported at the line of the dims key, with what the inputs do have
BAD_PATHS = [
    pytest.param(
        "input_idz: [0]",
        ["dims.B.input_idz", "no argument is called 'input_idz'", "did you mean 'input_ids'"],
        id="keyword",
    ),
    pytest.param(
        "'cache.kees[*]': [0]",
        ["dims.B.cache.kees[*]", "cache (a KVCache) has no .kees", "it has keys, values"],
        id="attribute",
    ),
    pytest.param(
        "'batch[\"pixels\"]': [0]",
        ['dims.B.batch["pixels"]', "batch (a dict) has no ['pixels']", "'pixel_values'"],
        id="dict-key",
    ),
    pytest.param(
        "'cache.keys[*]': [7]",
        ["dims.B.cache.keys[*]", "names dim 7 of argument cache.keys[0], which has 4 dim(s)"],
        id="dim-rank",
    ),
    pytest.param(
        "3: [0]", ["dims.B.3", "names argument 3, but the factory returned 1"], id="index"
    ),
]


@pytest.mark.parametrize("entry, expected", BAD_PATHS)
def test_dims_naming_nothing_in_the_inputs_exit_2_at_their_line(write_scenario, entry, expected):
    path = write_scenario(f"""
        target: {TARGETS}:encode
        factory: {TARGETS}:make_encode_inputs
        dims:
          S: {{input_ids: [1]}}
          B: {{{entry}}}
        sequences: {{s: [{{B: 2, S: 5}}]}}
        strategies: [default]
        """)
    result = CliRunner().invoke(app, ["run", str(path), "--quiet"])
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    assert f"{path}:5" in result.output, result.output
    for fragment in expected:
        assert fragment in result.output, result.output


def test_driver_dims_naming_nothing_exit_2_at_their_line(write_scenario):
    path = write_scenario(f"""
        target: {PROGRAM}:block
        driver: {PROGRAM}:generate
        dims:
          B: {{x: [0]}}
          S: {{x: [1], past_kk: [2]}}
        sequences: {{s: [{{B: 1, S: 3}}]}}
        strategies: [default]
        """)
    result = CliRunner().invoke(app, ["run", str(path), "--quiet"])
    assert result.exit_code == 2, result.output
    assert f"{path}:5" in result.output and "Traceback" not in result.output
    assert "dims.S.past_kk" in result.output and "did you mean 'past_k'" in result.output


@pytest.mark.parametrize(
    "sequence, expected",
    [
        ("B=1,S=x", "cannot read the points"),
        ("B=1", "missing size for symbol S"),
        ("B=1,S=4,Q=2", "unknown size symbol 'Q'"),
        ("B=1,S=-4", "cannot be negative"),
    ],
)
def test_bad_points_on_the_command_line_exit_2(write_scenario, sequence, expected):
    path = write_scenario(TWO)
    result = CliRunner().invoke(app, ["run", str(path), "--quiet", "--sequence", sequence])
    assert result.exit_code == 2, result.output
    assert "--sequence" in result.output and expected in result.output, result.output
    assert "Traceback" not in result.output
