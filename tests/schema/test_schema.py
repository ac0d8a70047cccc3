"""The JSON Schemas: built from the validator's own tables and the report records, shipped in the
package, and checked against real scenarios and real reports the CLI writes."""

from __future__ import annotations

import ast
import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import jsonschema
import pytest
import yaml
from typer.testing import CliRunner

from helpers import FIXTURES, MALFORMED, PROGRAMS, ROOT, TESTS, sample_report
from recompile_probe.cli import app
from recompile_probe.errors import ScenarioError
from recompile_probe.scenario import keys
from recompile_probe.scenario.load import load, loads
from recompile_probe.schema.catalog import SCHEMAS, dumps, shipped_path
from recompile_probe.schema.documents import (
    check_bundle_schema,
    explain_schema,
    report_schema,
    suggest_schema,
    watch_schema,
)
from recompile_probe.schema.scenario import scenario_schema


def validator(schema_: dict) -> jsonschema.Draft202012Validator:
    return jsonschema.Draft202012Validator(schema_)


def as_json(data):
    """What an editor sees of a YAML file: JSON data (an integer key such as `0:` is a string)."""
    return json.loads(json.dumps(data))


def errors(schema_: dict, data) -> list[str]:
    return [f"{list(e.absolute_path)}: {e.message}" for e in validator(schema_).iter_errors(data)]


# --- the schemas themselves -----------------------------------------------------------------------


@pytest.mark.parametrize("name", list(SCHEMAS))
def test_shipped_schema_is_the_generated_one(name):
    shipped = shipped_path(name)
    assert shipped.is_file(), f"{shipped} is missing: run `make schemas`"
    assert shipped.read_text(encoding="utf-8") == dumps(SCHEMAS[name]()), (
        f"{shipped} is stale: run `make schemas` (python -m recompile_probe.schema)"
    )


@pytest.mark.parametrize("name", list(SCHEMAS))
def test_schemas_are_valid_draft_2020_12(name):
    build = SCHEMAS[name]
    for built in [build()] + ([build(strict=True)] if name != "scenario" else []):
        jsonschema.Draft202012Validator.check_schema(built)
        assert built["$schema"] == "https://json-schema.org/draft/2020-12/schema"


def _patterns(node):
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "pattern":
                yield value
            yield from _patterns(value)
    elif isinstance(node, list):
        for value in node:
            yield from _patterns(value)


def test_patterns_are_ecma_262_regexes():
    """Editors (yaml-language-server, ajv) compile patterns as JavaScript regexes with the u
    flag: no Python-only syntax, no escaped quotes."""
    patterns = sorted({p for build in SCHEMAS.values() for p in _patterns(build())})
    assert patterns
    for pattern in patterns:
        re.compile(pattern)
        assert not re.search(r"\(\?P|\\[\"'AZ]|\(\?[aiLmsux]", pattern), pattern
    node = shutil.which("node")
    if node:  # the real thing where Node.js is installed
        code = "for (const p of JSON.parse(process.argv[1])) new RegExp(p, 'u');"
        result = subprocess.run(
            [node, "-e", code, json.dumps(patterns)], capture_output=True, text=True
        )
        assert result.returncode == 0, result.stderr


def test_schemas_and_the_command_need_no_torch(tmp_path):
    code = (
        "import sys; sys.modules['torch'] = None\n"
        "from recompile_probe.schema.catalog import SCHEMAS\n"
        "[build() for build in SCHEMAS.values()]\n"
        "from recompile_probe.cli import main\n"
        "sys.argv = ['recompile-probe', 'schema', 'scenario', '-o', sys.argv[1]]; main()"
    )
    out = tmp_path / "s.json"
    result = subprocess.run([sys.executable, "-c", code, str(out)], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert json.loads(out.read_text())["title"] == "recompile-probe scenario"


def test_schema_command():
    runner = CliRunner()
    result = runner.invoke(app, ["schema", "report"])
    assert result.exit_code == 0, result.output
    assert result.stdout == shipped_path("report").read_text(encoding="utf-8")
    result = runner.invoke(app, ["schema", "check", "--path"])
    assert result.exit_code == 0 and Path(result.stdout.strip()) == shipped_path("check")
    help_text = runner.invoke(app, ["schema", "--help"]).output
    assert all(name in help_text for name in SCHEMAS), help_text
    result = runner.invoke(app, ["schema", "scenaro"])
    assert result.exit_code == 2
    assert (
        "unknown schema 'scenaro'" in result.output and "Did you mean 'scenario'" in result.output
    )


def test_descriptions_come_from_the_tables_and_the_record_comments():
    built = scenario_schema()
    assert built["properties"]["repeats"]["description"] == keys.TOP_KEYS["repeats"].help
    tensor = built["$defs"]["tensor"]["properties"]
    assert tensor["fill"]["description"].startswith(keys.TENSOR_KEYS["fill"].help)
    report = report_schema()
    assert (
        report["$defs"]["Run"]["properties"]["recompiles"]["description"]
        == "compiles of a frame that already had a cache entry"
    )
    # a comment continued on the next line stays with its field
    assert report["$defs"]["ReasonDetail"]["properties"]["what"]["description"].endswith(
        "recompile limit, unknown"
    )


# --- one source of truth --------------------------------------------------------------------------

TABLES = {
    name: getattr(keys, name)
    for name in (
        "TOP_KEYS",
        "BACKEND_KEYS",
        "COMPILE_KEYS",
        "DISTRIBUTED_KEYS",
        "TOLERANCE_KEYS",
        "TENSOR_KEYS",
        "CUSTOM_KEYS",
        "LOCATION_MARK_KEYS",
        "BUDGET_KEYS",
    )
}


@pytest.mark.parametrize("table", list(TABLES))
def test_every_key_has_a_type_a_description_and_the_words_of_its_error(table):
    for name, entry in TABLES[table].items():
        assert entry.help.strip(), f"{table}.{name} has no description"
        assert "type" in entry.schema, f"{table}.{name} has no JSON type"
        assert entry.what.strip(), f"{table}.{name} has no words for its type error"
        assert keys.python_types(entry), f"{table}.{name}: no Python type for its JSON type"


#: documents both sides accept that, together, use every key of every table (the coverage test
#: says so): each key is then refused at its place with a wrong value, by both sides
EVERY_KEY = {
    "inputs": """\
name: every-key
description: a user callable with inputs
target: user_targets.py:scale_shift
inputs:
  - {shape: [B, 8], dtype: int64, device: cpu, fill: randint, low: 0, high: 5,
     requires_grad: false}
  - {shape: [B, 1], fill: full, value: 0.5}
sequences: {s: [1, 2]}
backend: {name: inductor, mode: default, options: {}}
compile: {fullgraph: false, mode: null, options: null, recompile_limit: 8, disable: false,
          isolate_recompiles: false, name: step}
strategies: [default, mine]
custom_strategies:
  mine:
    extends: default
    description: every field
    dynamic: null
    mark: dynamic
    mark_options: {}
    config: {torch._dynamo.config.recompile_limit: 4}
    stance: default
    compile: {fullgraph: false}
    marks: [{argument: 0, dim: 0, kind: dynamic}]
seed: 3
repeats: 0
tolerance: {rtol: 0.001, atol: 0.001}
coverage: {B: [0, 64]}
expect:
  '*': {max_compiles: 4, max_recompiles: 3, max_graphs: 4, max_guards: 100,
        max_shape_env_guards: 100, outputs_match: true, status: ok,
        no_recompile_in: {B: [1, 2]}}
  mine: {s: {max_recompiles: 0}}
""",
    "driver": """\
target: user_targets.py:scale_shift
driver: user_targets.py:counting_driver
dims: {B: {0: [0]}}
sequences: [1, 2]
custom_strategies:
  opts: {driver_options: {tag: 1}}
""",
    "factory": """\
target: user_targets.py:scale_shift
factory: user_targets.py:make_pair
batch_dims: {0: [0], 1: [0]}
sequences: [1, 2]
""",
    "ranks": """\
target: logprobs.count_greater_than
params: {vocab_size: 64}
ranks: 2
distributed: {backend: gloo, timeout_s: 5}
sequences: {a: {by_rank: {0: [1, 2], 1: [1, 3]}}}
expect: {'*': {ranks_agree: true}}
""",
}
#: where each table's keys sit, as the dotted keys the validator names
PLACES = {
    "TOP_KEYS": r"(\w+)",
    "BACKEND_KEYS": r"backend\.(\w+)",
    "COMPILE_KEYS": r"compile\.(\w+)",
    "DISTRIBUTED_KEYS": r"distributed\.(\w+)",
    "TOLERANCE_KEYS": r"tolerance\.(\w+)",
    "TENSOR_KEYS": r"inputs(?:\[\d+\]|\.\w+)\.(\w+)",
    "CUSTOM_KEYS": r"custom_strategies\.[^.]+\.(\w+)",
    "LOCATION_MARK_KEYS": r"custom_strategies\.[^.]+\.marks\[\d+\]\.(\w+)",
    "BUDGET_KEYS": r"expect\.[^.]+\.(?:[^.]+\.)?(\w+)",
}
#: values of every JSON type, the first one a key does not admit is its wrong value
OF_EVERY_TYPE = ("three", 3, 2.5, True, None, [1], {"x": 1})


def _table_keys(dotted_keys):
    """(dotted key, table, key) for each dotted key that is a table key at its place."""
    for dotted in dotted_keys:
        for table, place in PLACES.items():
            match = re.fullmatch(place, dotted)
            if match and match.group(1) in TABLES[table]:
                yield dotted, table, match.group(1)


def _parts(dotted: str) -> list:
    """ "a.b[0].c" -> ["a", "b", 0, "c"] (as jsonschema paths name a place)"""
    return [int(i) if i else k for i, k in re.findall(r"\[(\d+)\]|([^.\[\]]+)", dotted)]


def _with(data, dotted: str, value):
    out = as_json(data)
    *parents, leaf = _parts(dotted)
    place = out
    for part in parents:
        place = place[part]
    place[leaf] = value
    return out


def _verdicts(write_scenario, data) -> tuple[ScenarioError | None, list[list]]:
    """What each side says of ``data``: the validator's error (None: accepted), and the places
    of the schema's errors."""
    found, pending = [], list(validator(scenario_schema()).iter_errors(data))
    while pending:  # an anyOf error holds the errors of its branches, at their own places
        error = pending.pop()
        found.append(list(error.absolute_path))
        pending.extend(error.context or ())
    try:
        load(write_scenario(yaml.safe_dump(data)))
    except ScenarioError as exc:
        return exc, found
    return None, found


@pytest.fixture(scope="module")
def every_key_lines(tmp_path_factory):
    folder = tmp_path_factory.mktemp("every_key")
    shutil.copy(FIXTURES / "user_targets.py", folder)
    return {
        name: list(loads(text, path=str(folder / f"{name}.yaml")).lines)
        for name, text in EVERY_KEY.items()
    }


def test_the_every_key_documents_use_every_key_and_both_sides_accept_them(every_key_lines):
    used = {
        (table, key) for lines in every_key_lines.values() for _, table, key in _table_keys(lines)
    }
    every = {(table, key) for table, entries in TABLES.items() for key in entries}
    assert every - used == set(), "use these keys in an EVERY_KEY document"
    for name, text in EVERY_KEY.items():
        assert errors(scenario_schema(), as_json(yaml.safe_load(text))) == [], name


def test_both_sides_refuse_a_value_of_the_wrong_type_at_every_key(every_key_lines, write_scenario):
    disagree = []
    for name, lines in every_key_lines.items():
        data = yaml.safe_load(EVERY_KEY[name])
        for dotted, table, key in _table_keys(lines):
            kinds = keys.python_types(TABLES[table][key])
            wrong = next(
                v
                for v in OF_EVERY_TYPE
                if not isinstance(v, kinds) or (v is True and bool not in kinds)
            )
            refused, places = _verdicts(write_scenario, _with(data, dotted, wrong))
            if refused is None or refused.key != dotted or _parts(dotted) not in places:
                disagree.append((name, dotted, wrong, refused and refused.key, places))
    assert disagree == [], "\n".join(map(str, disagree))


def test_both_sides_hold_every_bound_of_the_tables(every_key_lines, write_scenario):
    """At the bound both accept, past it both refuse (jsonschema's reading of the bound is the
    oracle)."""
    checked = []
    for name, lines in every_key_lines.items():
        data = yaml.safe_load(EVERY_KEY[name])
        for dotted, table, key in _table_keys(lines):
            schema_ = TABLES[table][key].schema
            if "minimum" in schema_:
                inside, outside = schema_["minimum"], schema_["minimum"] - 1
            elif "exclusiveMinimum" in schema_:
                inside, outside = schema_["exclusiveMinimum"] + 0.5, schema_["exclusiveMinimum"]
            else:
                continue
            assert _verdicts(write_scenario, _with(data, dotted, inside)) == (None, []), dotted
            refused, places = _verdicts(write_scenario, _with(data, dotted, outside))
            assert refused is not None and refused.key == dotted, dotted
            assert f"got {outside!r}" in refused.message and _parts(dotted) in places, dotted
            checked.append(dotted)
    assert {"repeats", "ranks", "distributed.timeout_s", "expect.*.max_compiles"} <= set(checked)
    assert any(k.endswith(".dim") for k in checked), checked


WRONG = {
    "string": 3,
    "integer": "three",
    "number": "three",
    "boolean": "yes",
    "object": [1],
    "array": 3,
}
#: what a wrong value of each key is tried beside (a user callable's keys need each other)
BESIDE = {
    "factory": "target: user_targets.py:scale_shift\nbatch_dims: {0: [0]}\n",
    "driver": "target: user_targets.py:scale_shift\nbatch_dims: {0: [0]}\n",
    "dims": "target: user_targets.py:scale_shift\nfactory: user_targets.py:make_pair\n",
    "batch_dims": "target: user_targets.py:scale_shift\nfactory: user_targets.py:make_pair\n",
    "inputs": "target: user_targets.py:scale_shift\n",
}


@pytest.mark.parametrize(
    "name", [n for n, e in keys.TOP_KEYS.items() if isinstance(e.schema["type"], str)]
)
def test_the_validator_checks_a_top_level_key_by_its_table_type(name, write_scenario):
    """The words of each type error come from the key's table entry, whose type the schema
    holds too: one entry, both checks."""
    entry = keys.TOP_KEYS[name]
    base = BESIDE.get(name, "target: logprobs.count_greater_than\n") + "sequences: [1]\n"
    lines = [ln for ln in base.splitlines() if not ln.startswith(f"{name}:")]
    wrong = WRONG[entry.schema["type"]]
    path = write_scenario("\n".join([*lines, f"{name}: {json.dumps(wrong)}"]) + "\n")
    with pytest.raises(ScenarioError, match=re.escape(f"expected {entry.what}")):
        load(path)


# --- scenarios ------------------------------------------------------------------------------------

SCENARIO_FILES = (
    sorted((ROOT / "configs").glob("*.yaml"))
    + sorted((ROOT / "examples").glob("*.yaml"))
    + sorted((ROOT / "examples" / "distributed").glob("*.yaml"))
    + sorted(TESTS.rglob("*.yaml"))
)


@pytest.mark.parametrize("path", SCENARIO_FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_shipped_scenario_validates(path):
    load(path)  # the validator accepts it ...
    assert errors(scenario_schema(), as_json(yaml.safe_load(path.read_text()))) == []


def _scenario_texts() -> list[tuple[str, str]]:
    """Every YAML scenario written as a string literal in the tests: (where, text)."""
    found = []
    for path in sorted(TESTS.rglob("test_*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if (
                isinstance(node, ast.Constant)
                and isinstance(node.value, str)
                and "target:" in node.value
            ):
                text = textwrap.dedent(node.value).lstrip()
                try:
                    data = yaml.safe_load(text)
                except yaml.YAMLError:
                    continue
                if isinstance(data, dict) and "target" in data:
                    found.append((f"{path.name}:{node.lineno}", text))
    return found


def test_every_scenario_the_tests_write_that_the_validator_accepts_validates(tmp_path):
    for folder in (FIXTURES, PROGRAMS, ROOT / "configs"):
        for source in folder.glob("*.py"):
            shutil.copy(source, tmp_path / source.name)
    built, accepted = scenario_schema(), []
    for where, text in _scenario_texts():
        try:
            loads(text, path=str(tmp_path / "scenario.yaml"))
        except ScenarioError:
            continue  # a malformed case, or a file only its own test writes
        accepted.append(where)
        assert errors(built, as_json(yaml.safe_load(text))) == [], where
    assert len(accepted) >= 20, accepted


#: MALFORMED cases (tests/scenario/test_load.py) the schema refuses as well: structure, names, types
STRUCTURAL = [
    "empty-file",
    "top-level-list",
    "misspelt-top-key",
    "missing-target",
    "missing-sequences",
    "unknown-builtin-target",
    "target-not-string",
    "empty-sequence",
    "negative-batch",
    "float-batch",
    "string-batch",
    "bool-batch",
    "no-sequences",
    "unknown-strategy",
    "unknown-backend",
    "unknown-param",
    "param-type",
    "compile-dynamic",
    "bad-shape-symbol",
    "negative-dim",
    "bad-dtype",
    "bad-fill",
    "tensor-key",
    "no-inputs",
    "factory-without-batch-dims",
    "bad-batch-dims",
    "inputs-for-builtin",
    "custom-mark",
    "custom-shadows-builtin",
    "negative-repeats",
]
#: not YAML a schema could see (refused while parsing)
NOT_YAML = ["yaml-syntax", "yaml-indent", "python-tag"]
#: well-formed: only the validator (files, imports, relations between values) can refuse them
SEMANTIC = [
    "duplicate-key",  # YAML keeps the last one; the validator reads the nodes
    "missing-target-file",
    "unimportable-module",
    "missing-callable",
    "module-raises-on-import",
    "bad-randint",  # low < high
    "no-batch-dim",  # a size symbol must appear in some shape
    "custom-extends",  # may name a custom strategy defined above it
    # `compile:` takes any keyword the installed torch.compile takes: only the validator,
    # which reads torch's signature, knows a typo from a keyword of another release
    "compile-key",
]
CASES = {p.id: p.values[0] for p in MALFORMED}


def test_every_malformed_case_is_classified():
    assert sorted(STRUCTURAL + NOT_YAML + SEMANTIC) == sorted(CASES), (
        "classify each MALFORMED case of test_scenario.py in test_schema.py"
    )


@pytest.mark.parametrize("case", STRUCTURAL)
def test_structural_malformed_cases_fail_the_schema(case):
    assert errors(scenario_schema(), as_json(yaml.safe_load(CASES[case])))


@pytest.mark.parametrize("case", NOT_YAML)
def test_cases_that_are_not_yaml(case):
    with pytest.raises(yaml.YAMLError):
        yaml.safe_load(CASES[case])


@pytest.mark.parametrize("case", SEMANTIC)
def test_semantic_cases_pass_the_schema_and_only_the_validator_refuses_them(case):
    assert errors(scenario_schema(), as_json(yaml.safe_load(CASES[case]))) == []


BASE = "target: logprobs.count_greater_than\nsequences: {a: [1, 2]}\n"
USER = (
    "target: user_targets.py:scale_shift\ninputs: [{shape: [B, 8]}, {shape: [B, 1]}]\n"
    "sequences: {s: [1, 2]}\n"
)


@pytest.mark.parametrize(
    "text",
    [
        BASE + "expect: {default: {max_recompile: 0}}\n",  # a misspelt budget
        BASE + "expect: {default: {a: {max_recompiles: -1}}}\n",
        BASE + "expect: {mark_unbaked: {max_recompiles: 0}}\n",
        BASE + "expect: {'*': {status: fine}}\n",
        BASE + "tolerance: {rtol: 0.1}\n",
        BASE + "backend: {mode: max-autotune}\n",
        BASE + "backend: {name: inductor, modes: x}\n",
        BASE.replace("[1, 2]", "{grid: {B: [1]}, order: x}"),
        BASE + "custom_strategies: {mine: {extend: default}}\n",
        BASE + "custom_strategies: {mine: {dynamic: maybe}}\n",
        BASE + "custom_strategies: {mine: {config: {recompile_limit: 2}}}\n",
        BASE + "seed: 1.5\n",
        BASE + "name: '  '\n",
        USER.replace("[{shape: [B, 8]}, {shape: [B, 1]}]", "{0x: {shape: [B]}}"),
        USER + "factory: user_targets.py:make_pair\n",
        USER.replace("[B, 8]}", "[B, 8], fill: 'randint(0)'}"),
        USER.replace("[B, 8]}", "[B, 8], requires_grad: yes please}"),
        USER + "batch_dims: {0: [0]}\n",
        BASE + "custom_strategies: {mine: {marks: [{argument: 0, dim: 0, kind: unbaked}]}}\n",
        BASE + "custom_strategies: {mine: {marks: [{argument: 0, kind: unbacked}]}}\n",
    ],
    ids=lambda t: t.splitlines()[-1][:40],
)
def test_schema_and_validator_both_refuse(write_scenario, text):
    with pytest.raises(ScenarioError):
        load(write_scenario(text))
    assert errors(scenario_schema(), as_json(yaml.safe_load(text)))


def test_marks_of_a_custom_strategy_validate(write_scenario):
    text = USER + (
        "custom_strategies:\n  mine:\n    marks: [{argument: 0, dim: 0, kind: unbacked},"
        " {argument: 1, dim: 0, kind: dynamic}]\n"
    )
    assert load(write_scenario(text)).custom_strategies["mine"].marks
    assert errors(scenario_schema(), as_json(yaml.safe_load(text))) == []


# --- reports: real ones, from the command line ----------------------------------------------------

TWO = """\
name: two-symbols
target: user_targets.py:scale_shift
inputs:
  - {shape: [B, S]}
  - {shape: [B, 1], fill: "randint(0, 5)"}
sequences:
  grid: {grid: {B: [1, 2], S: [4]}}
strategies: [default, mark_unbacked, refuse]
custom_strategies:
  refuse: {extends: default, stance: fail_on_recompile}
repeats: 2
expect:
  "*": {max_recompiles: 0}
"""
GATE = """\
name: gate
target: logprobs.count_greater_than
params: {vocab_size: 64}
sequences: {rl: [1, 2]}
strategies: [default]
repeats: 0
expect:
  default: {max_recompiles: 0, outputs_match: true}
"""


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    """run, check (two scenarios: a bundle), explain and summarize, on eager."""
    folder = tmp_path_factory.mktemp("reports")
    shutil.copy(FIXTURES / "user_targets.py", folder / "user_targets.py")
    (folder / "two.yaml").write_text(TWO)
    (folder / "gate.yaml").write_text(GATE)
    runner = CliRunner()
    out = {}

    def cli(*args: str, code: int = 0) -> None:
        result = runner.invoke(app, [*args])
        assert result.exit_code == code, result.output

    cli(
        "run",
        str(folder / "two.yaml"),
        "-q",
        "-f",
        "json",
        "-o",
        str(folder / "run.json"),
        "--trace-dir",
        str(folder / "traces"),
    )
    cli(
        "check",
        str(folder / "two.yaml"),
        str(folder / "gate.yaml"),
        "-q",
        "--json",
        str(folder / "check.json"),
        code=1,
    )  # budgets broken: violations in the report
    cli("check", str(folder / "gate.yaml"), "-q", "--json", str(folder / "check_one.json"), code=1)
    cli("explain", str(folder / "two.yaml"), "-q", "-f", "json", "-o", str(folder / "explain.json"))
    cli("summarize", str(folder / "traces"), "-f", "json", "-o", str(folder / "summary.json"))
    for name in ("run", "check", "check_one", "explain", "summary"):
        out[name] = json.loads((folder / f"{name}.json").read_text())
    return out


def _walk(data):
    yield data
    if isinstance(data, dict):
        for value in data.values():
            yield from _walk(value)
    elif isinstance(data, list):
        for value in data:
            yield from _walk(value)


def test_run_report_validates(written):
    report = written["run"]
    assert errors(report_schema(strict=True), report) == []
    # what the schema was checked on: a recompile with its structured reason, an error run,
    # user lines behind guards
    statuses = {r["strategy"]: r["status"] for r in report["runs"]}
    assert statuses == {"default": "ok", "mark_unbacked": "ok", "refuse": "error"}
    assert any(e["reason_detail"] for r in report["runs"] for e in r["compile_events"])
    assert any(isinstance(d, dict) and "file_exact" in d for d in _walk(report))


def test_check_json_validates_bundle_and_single(written):
    bundle = written["check"]
    assert len(bundle["reports"]) == 2
    assert any(r["violations"] for rep in bundle["reports"] for r in rep["runs"])
    assert errors(check_bundle_schema(strict=True), bundle) == []
    assert "reports" not in written["check_one"]  # one scenario: the report itself
    assert errors(check_bundle_schema(strict=True), written["check_one"]) == []
    assert errors(report_schema(strict=True), written["check_one"]) == []


def test_explain_json_validates(written):
    data = written["explain"]
    assert data["explanations"] and any(x["diffs"] for x in data["explanations"])
    assert errors(explain_schema(strict=True), data) == []


def test_summarize_json_validates(written):
    data = written["summary"]
    assert data["kind"] == "summarize" and data["functions"]
    assert errors(watch_schema(strict=True), data) == []


@pytest.mark.slow
def test_watch_json_validates(tmp_path):
    out = tmp_path / "watch.json"
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "recompile_probe",
            "watch",
            "-f",
            "json",
            "-o",
            str(out),
            "--",
            "python",
            str(FIXTURES / "known_compiles.py"),
        ],
        capture_output=True,
        text=True,
        env={**os.environ},
    )
    assert result.returncode == 0, result.stderr
    data = json.loads(out.read_text())
    assert data["kind"] == "watch" and data["processes"] and "totals" in data
    assert all("pid" in e for e in data["events"])
    assert errors(watch_schema(strict=True), data) == []


@pytest.mark.slow
def test_shard_reports_and_their_merge_validate(tmp_path):
    (tmp_path / "gate.yaml").write_text(GATE.replace("[default]", "[default, static]"))
    runner = CliRunner()
    shards = [tmp_path / f"shard{k}.json" for k in (1, 2)]
    for k, shard in enumerate(shards, 1):
        result = runner.invoke(
            app,
            ["check", str(tmp_path / "gate.yaml"), "-q", "--shard", f"{k}/2", "--json", str(shard)],
        )
        assert result.exit_code in (0, 1), result.output
    merged = tmp_path / "merged.json"
    result = runner.invoke(app, ["merge", *map(str, shards), "-o", str(merged)])
    assert result.exit_code == 0, result.output
    for path in (*shards, merged):
        data = json.loads(path.read_text())
        assert ("shard" in data) == (path != merged)
        assert errors(check_bundle_schema(strict=True), data) == [], path


@pytest.mark.slow
def test_suggest_json_validates(write_scenario):
    path = write_scenario(
        "target: user_targets.py:double\ninputs: [{shape: [B, 4]}]\n"
        "sequences: {s: [1, 2, 3]}\nrepeats: 0\n"
    )
    result = CliRunner().invoke(
        app,
        [
            "suggest",
            str(path),
            "-q",
            "-f",
            "json",
            "--budget",
            "8",  # no marks, the 5 whole-function strategies (measured first), then markings
            "-o",
            str(path.with_suffix(".json")),
        ],
    )
    assert result.exit_code == 0, result.output
    data = json.loads(path.with_suffix(".json").read_text())
    assert data["recommendation"]["marks"] and data["necessity"] and data["change"]
    assert errors(suggest_schema(strict=True), data) == []


def test_library_reports_and_saved_fixtures_validate():
    from recompile_probe.records.report import to_json

    library = json.loads(to_json(sample_report()))
    assert errors(report_schema(strict=True), library) == []
    saved = [p for p in TESTS.rglob("*.json") if "runs" in json.loads(p.read_text())]
    assert saved, "no saved report under tests/"
    for path in saved:
        assert errors(report_schema(strict=True), json.loads(path.read_text())) == [], path


def test_a_renamed_or_mistyped_field_fails(written):
    report = json.loads(json.dumps(written["run"]))
    run = report["runs"][0]
    run["recompile_count"] = run.pop("recompiles")
    run["calls"][0]["event"] = "miss"
    found = errors(report_schema(), report)
    assert any("'recompiles' is a required property" in e for e in found)
    assert any("'miss' is not one of" in e for e in found)
    # unknown fields: allowed for readers (newer writers add fields), refused in strict mode
    assert not any("recompile_count" in e for e in found)
    assert any("recompile_count" in e for e in errors(report_schema(strict=True), report))


def test_every_field_the_json_docs_document_is_in_the_report_schema():
    page = (ROOT / "docs" / "json.md").read_text()
    section = page.split("# JSON report", 1)[1].split("\n## ", 1)[0]
    block = section.split("```json", 1)[1].split("```", 1)[0]
    # every key of the example but the size symbols ({"B": 1}), which are data
    documented = set(re.findall(r'"([a-z_]+)":', block))
    described = {
        key
        for node in _walk(report_schema())
        if isinstance(node, dict)
        for key in node.get("properties", {})
    }
    assert documented and documented <= described, documented - described
