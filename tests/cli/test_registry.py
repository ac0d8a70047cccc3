"""The table of commands: `--help` lists them without loading their modules, and what it lists is
what the commands themselves say once loaded."""

from __future__ import annotations

import importlib
import subprocess
import sys

import typer.main
from typer.testing import CliRunner

from recompile_probe.cli import app
from recompile_probe.cli.registry import COMMANDS

ENV = {"COLUMNS": "100", "PATH": "", "TERM": "dumb"}


def _top_help(pre: str) -> str:
    code = (
        f"{pre}import sys; sys.argv = ['recompile-probe', '--help']\n"
        "from recompile_probe.cli import main; main()"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=ENV)
    assert out.returncode == 0, out.stderr
    return out.stdout


def test_the_listing_without_the_modules_equals_the_listing_from_the_loaded_commands():
    loaded_first = "".join(
        f"import recompile_probe.cli.{m}\n" for m in {c.module for c in COMMANDS}
    )
    lazy = _top_help("")
    assert all(c.name in lazy for c in COMMANDS)
    assert lazy == _top_help(loaded_first)


def test_every_registered_command_is_in_the_table_under_its_module():
    for command in COMMANDS:
        importlib.import_module(f"recompile_probe.cli.{command.module}")
    group = typer.main.get_command(app)
    registered = {
        info.name or typer.main.get_command_name(info.callback.__name__): info.callback.__module__
        for info in app.registered_commands
    }
    assert registered == {c.name: f"recompile_probe.cli.{c.module}" for c in COMMANDS}
    for command in COMMANDS:  # the summary is the first paragraph of the command's own help
        assert group.commands[command.name].help.split("\n\n")[0] == command.summary


def test_a_command_runs_in_a_fresh_interpreter_that_never_loaded_its_module():
    code = (
        "import sys; from typer.testing import CliRunner\n"
        "from recompile_probe.cli import app\n"
        "assert 'recompile_probe.cli.listing' not in sys.modules\n"
        "r = CliRunner().invoke(app, ['targets'])\n"
        "print(r.exit_code, 'logprobs.count_greater_than' in r.output)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.stdout.split() == ["0", "True"], out.stderr


def test_a_mistyped_command_is_matched_against_every_command_loaded_or_not():
    result = CliRunner().invoke(app, ["sugest"])
    assert result.exit_code == 2
    assert "No such command 'sugest'. Did you mean 'suggest'?" in result.output
    result = CliRunner().invoke(app, ["zzzz"])
    assert result.exit_code == 2 and "Did you mean" not in result.output
