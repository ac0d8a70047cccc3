"""GitHub annotations on real runs: each sits on the line the report's provenance names (the
program's own markers and Dynamo's recompile log say which line that is), one per finding,
escaped as GitHub's runner reads them."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from helpers import PROGRAMS, ROOT, invoke_at_root
from recompile_probe.cli import app
from recompile_probe.records.finding import Finding, Kind, Severity
from recompile_probe.render.github import command, escape_data, escape_property

HERE = PROGRAMS / "annotations"
PROGRAM = HERE / "serving.py"
SCENARIO = HERE / "serving.yaml"
_COMMAND = re.compile(r"^::(error|warning|notice) ([^:]*)::(.*)$")


def _unescape(text: str) -> str:
    for code, char in (("%0D", "\r"), ("%0A", "\n"), ("%3A", ":"), ("%2C", ","), ("%25", "%")):
        text = text.replace(code, char)
    return text


def parse(output: str) -> list[dict]:
    """Workflow commands as the runner splits them: level, properties, message."""
    out = []
    for line in output.splitlines():
        match = _COMMAND.match(line)
        if match:
            props = dict(p.split("=", 1) for p in match.group(2).split(","))
            out.append(
                {
                    "level": match.group(1),
                    **{k: _unescape(v) for k, v in props.items()},
                    "message": _unescape(match.group(3)),
                }
            )
    return out


def markers(path: Path) -> dict[int, str]:
    """line -> the recompile kind the program says starts there (``# recompile: kind``)."""
    found = (re.search(r"# recompile: (\w+)$", line) for line in path.read_text().splitlines())
    return {n: m.group(1) for n, m in enumerate(found, 1) if m}


@pytest.fixture(scope="module")
def checked(tmp_path_factory):
    """One real `check` of the scenario, from the repository root: stdout and its JSON report."""
    out = tmp_path_factory.mktemp("check") / "report.json"
    result = invoke_at_root(
        "check",
        str(SCENARIO.relative_to(ROOT)),
        "-q",
        "--annotations",
        "github",
        "--json",
        str(out),
    )
    assert result.exit_code == 1, result.output
    return result.output, json.loads(out.read_text())


def test_each_recompile_annotation_sits_on_the_reports_provenance_line(checked):
    output, data = checked
    annotations = [a for a in parse(output) if "recompile (" in a["title"]]
    program = str(PROGRAM.relative_to(ROOT))
    # the report's own provenance: the first failing guard's user line of every recompile
    lines = {
        (e["reason_kind"], e["reason_origins"][0]["line"])
        for run in data["runs"]
        for e in run["compile_events"]
        if e["recompile"]
    }
    assert {(a["title"].split("(")[1].split(")")[0], int(a["line"])) for a in annotations} == lines
    assert all(a["file"] == program for a in annotations)
    # and the program's own markers: the line each kind starts on
    assert {int(a["line"]): a["title"].split("(")[1].split(")")[0] for a in annotations} == markers(
        PROGRAM
    )
    # one annotation per line and kind, however many runs recompiled there
    assert len(annotations) == len(lines)
    loop = next(a for a in annotations if "python_scalar_change" in a["title"])
    assert "serve / default" in loop["message"] and "serve / mark_dynamic" in loop["message"]


def test_the_loops_line_is_the_one_dynamos_own_recompile_log_names(checked):
    """Dynamo's log of the plain program (no tool) writes the user line beside the guard."""
    env = {**os.environ, "TORCH_LOGS": "recompiles", "OMP_NUM_THREADS": "1"}
    log = subprocess.run(
        [sys.executable, str(PROGRAM)], capture_output=True, text=True, env=env, check=True
    ).stderr
    named = {int(n) for n in re.findall(r"serving\.py:(\d+) in step", log)}
    assert named, log
    loop = next(a for a in parse(checked[0]) if "python_scalar_change" in a["title"])
    assert named == {int(loop["line"])}


def test_a_broken_budget_sits_on_the_scenario_line_that_set_it(checked):
    output, data = checked
    budget = [a for a in parse(output) if "broken" in a["title"]]
    assert len(budget) == 1
    (violation,) = [v for run in data["runs"] for v in run["violations"]]
    path, _, line = violation["source"].rpartition(":")
    assert budget[0]["file"] == path and budget[0]["line"] == line
    assert "max_recompiles:" in SCENARIO.read_text().splitlines()[int(line) - 1]
    assert budget[0]["level"] == "error"
    assert "max_recompiles: 2 > 0" in budget[0]["message"]


def test_the_fix_the_run_measured_is_in_the_text_and_named_as_measured(checked):
    output, data = checked
    first = next(a for a in parse(output) if "static_size_change" in a["title"])
    marked = next(r for r in data["runs"] if r["strategy"] == "mark_dynamic")
    assert marked["calls"][1]["event"] == "hit"  # it did not recompile where default did
    assert "Measured fix, in this report: mark_dynamic" in first["message"]
    assert "torch._dynamo.mark_dynamic(x, 0)" in first["message"]


def test_escaping_follows_the_runners_rules():
    f = Finding(
        Kind.RECOMPILE,
        Severity.WARNING,
        "dir,a/b:c%.py",
        3,
        "t: a, b%",
        "50% of it\r\nnext: line, more",
        "0",
    )
    assert command(f) == (
        "::warning file=dir%2Ca/b%3Ac%25.py,line=3,title=t%3A a%2C b%25::"
        "50%25 of it%0D%0Anext: line, more"
    )
    assert escape_data("a:b,c") == "a:b,c"  # the message keeps ':' and ','
    assert escape_property("%0A") == "%250A"
    (parsed,) = parse(command(f))
    assert parsed["file"] == f.file and parsed["title"] == f.title
    assert parsed["message"] == f.message


def test_watch_annotates_on_stderr_the_lines_its_report_names(tmp_path):
    out = tmp_path / "watch.json"
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "recompile_probe",
            "watch",
            "--annotations",
            "github",
            "-f",
            "json",
            "-o",
            str(out),
            "--",
            sys.executable,
            str(PROGRAM),
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=False,
        env={**os.environ, "OMP_NUM_THREADS": "1"},
    )
    assert result.returncode == 0, result.stderr
    annotations = parse(result.stderr)
    assert parse(result.stdout) == []  # stdout is the program's
    report = json.loads(out.read_text())
    reasons = {(r["kind"], r["origin"]["line"]) for f in report["functions"] for r in f["reasons"]}
    assert {
        (a["title"].split("(")[1].split(")")[0], int(a["line"])) for a in annotations
    } == reasons
    assert {int(a["line"]) for a in annotations} == set(markers(PROGRAM))
    assert all("not measured here" in a["message"] for a in annotations)


def test_an_unknown_ci_is_a_usage_error():
    result = CliRunner().invoke(app, ["check", str(SCENARIO), "--annotations", "gitlab"])
    assert result.exit_code == 2
    assert "--annotations: unknown CI 'gitlab'" in result.output
    assert "--codequality" in result.output


def test_an_unserved_size_is_an_error_on_the_line_behind_its_guard(tmp_path, monkeypatch):
    """The seed op driven 4 -> 8 under default: B = 1 recompiles, the budget over [1, 4096]
    breaks, and the annotation sits on the user line the report names for that guard."""
    monkeypatch.chdir(ROOT)
    monkeypatch.delenv("GITHUB_WORKSPACE", raising=False)
    out = tmp_path / "r.json"
    result = CliRunner().invoke(
        app,
        [
            "check",
            "configs/coverage.yaml",
            "-q",
            "-s",
            "default",
            "--no-recompile-in",
            "B=1..4096",
            "--annotations",
            "github",
            "--json",
            str(out),
        ],
    )
    assert result.exit_code == 1, result.output
    (run,) = json.loads(out.read_text())["runs"]
    miss = run["coverage"]["unserved"][0]
    (unserved,) = [a for a in parse(result.output) if "B = 1 recompiles" in a["title"]]
    assert unserved["level"] == "error"
    assert (unserved["file"], int(unserved["line"])) == (
        str(Path(miss["origin"]["file"]).relative_to(ROOT)),
        miss["origin"]["line"],
    )
    assert miss["guard"] in unserved["message"]


def test_summarize_annotates_a_trace_where_its_report_says(tmp_path):
    """A TORCH_TRACE of the plain program: summarize's annotations and Code Quality issues sit
    on the lines its own report gives each recompile reason."""
    traces = tmp_path / "traces"
    env = {**os.environ, "TORCH_TRACE": str(traces), "OMP_NUM_THREADS": "1"}
    env.pop("GITHUB_WORKSPACE", None)
    subprocess.run([sys.executable, str(PROGRAM)], env=env, check=True, capture_output=True)
    quality, report = tmp_path / "cq.json", tmp_path / "s.json"
    cli = [sys.executable, "-m", "recompile_probe", "summarize", str(traces)]
    shown = subprocess.run(
        [*cli, "--annotations", "github", "--codequality", str(quality)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        check=True,
    )
    subprocess.run([*cli, "-f", "json", "-o", str(report)], cwd=ROOT, env=env, check=True)
    functions = json.loads(report.read_text())["functions"]
    lines = {(r["origin"] or {}).get("line") or f["line"] for f in functions for r in f["reasons"]}
    annotations = parse(shown.stdout)
    assert annotations and {int(a["line"]) for a in annotations} == lines
    issues = json.loads(quality.read_text())
    assert sorted(i["location"]["lines"]["begin"] for i in issues) == sorted(
        int(a["line"]) for a in annotations
    )


def test_a_custom_strategys_measured_fix_is_written_from_its_scenario_file(tmp_path):
    """A report holds a strategy's name, not its definition: `run` writes the fix from the
    scenario it loaded, `render` from the file the report names while it is unchanged, and
    from the presets (which do not know the custom strategy) once it has changed."""
    scenario = _custom(tmp_path / "s", "dynamic")
    report = tmp_path / "r.json"
    ran = CliRunner().invoke(app, ["run", str(scenario), "-q", "-f", "json", "-o", str(report)])
    assert ran.exit_code == 0, ran.output
    runs = {r["strategy"]: r for r in json.loads(report.read_text())["runs"]}
    # measured: the custom strategy did not recompile at the call where default did
    assert runs["default"]["calls"][1]["event"] == "recompile"
    assert runs["rows"]["calls"][1]["event"] == "hit"

    def size_fix(output: str) -> str:
        return next(a for a in parse(output) if "static_size_change" in a["title"])["message"]

    direct = CliRunner().invoke(app, ["run", str(scenario), "-q", "-f", "github"])
    rendered = CliRunner().invoke(app, ["render", str(report), "-f", "github"])
    for output in (direct.output, rendered.output):
        text = size_fix(output)
        assert "Measured fix, in this report: rows" in text
        assert "torch._dynamo.mark_dynamic(" in text, text
    scenario.write_text(scenario.read_text() + "# edited since\n")
    stale = CliRunner().invoke(app, ["render", str(report), "-f", "github"])
    assert stale.exit_code == 0, stale.output
    text = size_fix(stale.output)
    assert "Measured fix, in this report: rows" in text
    assert "torch._dynamo.mark_dynamic(" not in text
    assert "in the scenario file that defines it, not read here" in text


def _custom(folder: Path, kind: str) -> Path:
    """serving.yaml with a custom strategy marking dim 0 as ``kind``, in its own folder."""
    folder.mkdir()
    scenario = folder / "serving.yaml"
    scenario.write_text(
        SCENARIO.read_text()
        .replace("serving.py:", f"{PROGRAM.parent}/serving.py:")
        .replace("strategies: [default, mark_dynamic]", "strategies: [default, rows]")
        + "custom_strategies:\n  rows:\n    marks:\n"
        + f"      - {{argument: 0, dim: 0, kind: {kind}}}\n"
    )
    return scenario


def test_two_scenarios_of_one_name_write_their_fixes_from_their_own_files(tmp_path):
    """Same name, other definitions: each report's fix comes from the file it was made from,
    in `check`'s annotations and in `render` of its bundle; `check --from-report` on a file
    edited since writes none from the edit. The root is the scenarios' folder: each finding then
    sits on its own scenario's line, not on the program's line they share."""
    root = {"GITHUB_WORKSPACE": str(tmp_path)}
    dynamic, maybe = _custom(tmp_path / "a", "dynamic"), _custom(tmp_path / "b", "maybe_dynamic")
    bundle = tmp_path / "bundle.json"
    checked = CliRunner().invoke(
        app, ["check", str(dynamic), str(maybe), "-q", "--annotations", "github",
              "--json", str(bundle)], env=root
    )  # fmt: skip
    rendered = CliRunner().invoke(app, ["render", str(bundle), "-f", "github"], env=root)
    for output in (checked.output, rendered.output):
        fixes = [a["message"] for a in parse(output) if "Measured fix" in a["message"]]
        assert len(fixes) == 2, [a["title"] for a in parse(output)]
        marks = {"dynamic": "torch._dynamo.mark_dynamic(x, 0)", "maybe": "maybe_mark_dynamic(x, 0)"}
        assert sorted(next(k for k, m in marks.items() if m in f) for f in fixes) == [
            "dynamic",
            "maybe",
        ]
    report = tmp_path / "a.json"
    ran = CliRunner().invoke(app, ["run", str(dynamic), "-q", "-f", "json", "-o", str(report)])
    assert ran.exit_code == 0, ran.output
    dynamic.write_text(dynamic.read_text().replace("kind: dynamic", "kind: maybe_dynamic"))
    judged = CliRunner().invoke(
        app,
        ["check", str(dynamic), "--from-report", str(report), "-q", "--annotations", "github"],
        env=root,
    )
    fix = next(a for a in parse(judged.output) if "static_size_change" in a["title"])["message"]
    assert "Measured fix, in this report: rows" in fix and "maybe_mark_dynamic(" not in fix
    assert "not read here" in fix
