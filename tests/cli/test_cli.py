"""The command line, end to end (subprocesses where the import path itself is under test)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from typer.testing import CliRunner

from helpers import sample_function
from recompile_probe.cli import app

NO_TORCH = "import sys; sys.modules['torch'] = None\n"  # any `import torch` now fails


def _cli(*args, pre="", **kwargs):
    code = (
        pre
        + "import sys; from recompile_probe.cli import main; sys.argv = ['recompile-probe',"
        + ",".join(repr(a) for a in args)
        + "]; main()"
    )
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, **kwargs)


def test_importing_the_cli_does_not_import_torch():
    out = subprocess.run(
        [sys.executable, "-c", "import sys, recompile_probe.cli; print('torch' in sys.modules)"],
        capture_output=True,
        text=True,
    )
    assert out.stdout.strip() == "False"


@pytest.mark.parametrize(
    "args", [["--help"], ["--version"], ["run", "--help"], ["targets"], ["strategies"]]
)
def test_help_version_and_listings_work_without_torch(args):
    result = _cli(*args, pre=NO_TORCH)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip()


def test_listings_name_every_builtin():
    out = CliRunner().invoke(app, ["strategies"]).output
    for name in (
        "default",
        "static",
        "dynamic_true",
        "mark_dynamic",
        "maybe_mark_dynamic",
        "mark_unbacked",
        "unbacked_sources",
        "backed_size_oblivious",
        "auto_unbacked",
        "as_is",
    ):
        assert name in out
    out = CliRunner().invoke(app, ["targets"]).output
    for name in (
        "logprobs.count_greater_than",
        "logprobs.count_greater_than_checked",
        "logprobs.gather_logprobs",
        "vocab_size",
        "num_logprobs",
    ):
        assert name in out


def test_run_help_documents_what_guard_counts_mean():
    out = CliRunner().invoke(app, ["run", "--help"], terminal_width=200).output
    assert "newest cache entry" in out


def test_json_report_to_file_and_rerender_without_torch(tmp_path):
    out = tmp_path / "report.json"
    result = _cli(
        "run",
        "--strategies",
        "default,mark_unbacked",
        "--sequence",
        "1,2,8",
        "--format",
        "json",
        "--output",
        str(out),
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout == ""  # the report went to the file only
    data = json.loads(out.read_text())
    by = {r["strategy"]: r for r in data["runs"]}
    assert by["default"]["graphs"] == 2 and by["mark_unbacked"]["graphs"] == 1
    assert "wins" in result.stderr  # the verdict goes to stderr
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]
    for fmt, needle in (("table", "Verdict"), ("markdown", "| strategy |"), ("json", '"runs"')):
        rendered = _cli("render", str(out), "--format", fmt, pre=NO_TORCH)
        assert rendered.returncode == 0, rendered.stderr
        assert needle in rendered.stdout


def test_table_report_on_stdout_progress_on_stderr():
    result = _cli("run", "--strategies", "default", "--sequence", "1,2")
    assert result.returncode == 0, result.stderr
    assert "Sequence cli" in result.stdout and "default" in result.stdout
    assert "probing" in result.stderr and "Sequence" not in result.stderr


def test_eager_failure_exits_3(write_scenario):
    path = write_scenario(
        "target: user_targets.py:eager_fails\ninputs: [{shape: [B]}]\nsequences: {s: [1]}\n"
    )
    result = CliRunner().invoke(app, ["run", str(path), "--quiet"])
    assert result.exit_code == 3
    assert "fails without torch.compile" in result.output and "ValueError" in result.output
    assert "Traceback" not in result.output


def test_factory_failure_exits_3(write_scenario):
    path = write_scenario(
        "target: user_targets.py:double\nfactory: user_targets.py:make_broken\n"
        "batch_dims: {0: [0]}\nsequences: {s: [1]}\n"
    )
    result = CliRunner().invoke(app, ["run", str(path), "--quiet"])
    assert result.exit_code == 3 and "factory exploded" in result.output


def test_strategy_errors_still_exit_0(write_scenario):
    path = write_scenario(
        "target: user_targets.py:branch_on_batch\ninputs: [{shape: [B, 8]}]\n"
        "sequences: {s: [1, 2]}\ncompile: {fullgraph: true}\n"
        "strategies: [default, mark_unbacked]\n"
    )
    result = CliRunner().invoke(app, ["run", str(path), "--quiet", "--format", "json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert [r["status"] for r in data["runs"]] == ["ok", "error"]


def test_output_into_missing_folder_is_a_usage_error(tmp_path):
    result = _cli(
        "run",
        "--strategies",
        "default",
        "--sequence",
        "1",
        "--output",
        str(tmp_path / "nope" / "r.json"),
    )
    assert result.returncode == 2 and "does not exist" in result.stderr


def test_python_dash_m_entry_point():
    result = subprocess.run(
        [sys.executable, "-m", "recompile_probe", "--version"],
        capture_output=True,
        text=True,
        env={**os.environ},
    )
    assert result.returncode == 0 and result.stdout.startswith("recompile-probe ")


@pytest.mark.parametrize(
    "batch_dims, fragment",
    [
        ("{0: [0], 5: [0]}", "names argument 5, but the factory returned 2"),
        ("{0: [3]}", "names dim 3 of argument 0, which has 2 dim(s)"),
    ],
)
def test_batch_dims_that_do_not_fit_the_factory_exit_2(write_scenario, batch_dims, fragment):
    path = write_scenario(
        "target: user_targets.py:scale_shift\n"
        "factory: user_targets.py:make_pair\n"
        f"batch_dims: {batch_dims}\nsequences: {{s: [1]}}\n"
    )
    result = CliRunner().invoke(app, ["run", str(path), "--quiet"])
    assert result.exit_code == 2, result.output
    assert fragment in result.output and "Traceback" not in result.output


def test_output_is_rewritten_after_every_run(tmp_path, monkeypatch):
    """A crash after the first run still leaves that run on disk, marked incomplete."""
    from recompile_probe.execution import inline  # where runs are probed in this process

    out = tmp_path / "r.json"
    real = inline.probe
    calls = []

    def crash_on_second(*args, **kwargs):
        calls.append(1)
        if len(calls) == 2:
            raise MemoryError("simulated crash")
        return real(*args, **kwargs)

    monkeypatch.setattr(inline, "probe", crash_on_second)
    result = CliRunner().invoke(
        app,
        [
            "run",
            "--strategies",
            "default,static",
            "--sequence",
            "1,2",
            "--quiet",
            "-f",
            "json",
            "-o",
            str(out),
        ],
    )
    assert result.exit_code == 3  # the crash is reported as an internal error
    data = json.loads(out.read_text())
    assert data["complete"] is False and [r["strategy"] for r in data["runs"]] == ["default"]


def test_render_of_a_watch_report_and_its_mistakes(tmp_path):
    """A saved `watch` report renders in watch's formats; junit (a run's format), a newer
    schema_version and a file that is not JSON are usage errors with a message, not tracebacks."""
    from recompile_probe.records.report import Environment, Tool
    from recompile_probe.records.watch import WatchReport, watch_to_json

    report = WatchReport(
        Tool("recompile-probe", "0.1.0"),
        Environment("2.13.0", "3.11.7", "Linux"),
        "python train.py",
        (sample_function(3),),
        exit_code=0,
    )
    saved = tmp_path / "watch.json"
    saved.write_text(watch_to_json(report))
    runner = CliRunner()
    markdown = runner.invoke(app, ["render", str(saved), "-f", "markdown"])
    assert markdown.exit_code == 0, markdown.output
    assert "| mod.fn_3<x> |" in markdown.output and "python train.py" in markdown.output
    junit = runner.invoke(app, ["render", str(saved), "-f", "junit"])
    assert junit.exit_code == 2
    assert "Formats: table, json, markdown, html, github, codequality." in junit.output
    newer = tmp_path / "newer.json"
    newer.write_text(saved.read_text().replace('"schema_version": 1', '"schema_version": 9', 1))
    refused = runner.invoke(app, ["render", str(newer)])
    assert refused.exit_code == 2 and "unsupported schema_version 9" in refused.output
    broken = tmp_path / "broken.json"
    broken.write_text("{")
    unreadable = runner.invoke(app, ["render", str(broken)])
    assert unreadable.exit_code == 2 and "not valid JSON" in unreadable.output
    assert not any(
        r.exception and not isinstance(r.exception, SystemExit)
        for r in (junit, refused, unreadable)
    )


def test_repeated_strategy_flags_add_up():
    """`run -s a -s b,c` runs a, b and c, as check's and explain's -s take it: the report's
    runs are the ones asked for, in that order."""
    result = CliRunner().invoke(
        app,
        ["run", "-s", "default", "-s", "static,mark_unbacked", "--sequence", "1,2", "-q",
         "--format", "json"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    ran = [r["strategy"] for r in json.loads(result.stdout)["runs"]]
    assert ran == ["default", "static", "mark_unbacked"]
