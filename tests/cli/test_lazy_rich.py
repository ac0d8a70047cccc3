"""`--help` loads only what it prints: the package modules it imports are listed here, and the
two rich modules typer's help renderer imports for nothing stay unloaded, while code that uses
them gets the real ones."""

from __future__ import annotations

import json
import subprocess
import sys

HELP_PATH = (
    "import json, sys\n"
    "sys.argv = ['recompile-probe', {args}]\n"
    "from recompile_probe.cli import main\n"
    "try:\n"
    "    main()\n"
    "except SystemExit:\n"
    "    pass\n"
    "mods = sorted(m for m in sys.modules if m.startswith('recompile_probe'))\n"
    "print(json.dumps({{'mods': mods, 'heavy': [m for m in ('markdown_it', 'rich.pretty',"
    " 'pygments', 'torch') if m in sys.modules]}}))\n"
)

#: what --help needs: the app with its table of commands (no command's module: each is loaded
#: when it runs or prints its own help), the version
EXPECTED = {
    "recompile_probe",
    "recompile_probe.version",
    "recompile_probe.cli",
    "recompile_probe.cli.lazy_rich",
    "recompile_probe.cli.registry",
}
COMMAND_MODULES = {
    f"recompile_probe.cli.{c}"
    for c in (
        "check",
        "diff",
        "explain",
        "listing",
        "merge",
        "render",
        "run",
        "schema",
        "suggest",
        "summarize",
        "watch",
    )
}


def _help(*args: str) -> tuple[dict, str]:
    code = HELP_PATH.format(args=", ".join(repr(a) for a in args))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    *text, last = out.stdout.rstrip().splitlines()
    return json.loads(last), "\n".join(text)


def test_help_imports_the_cli_and_nothing_of_records_or_analysis():
    loaded, text = _help("--help")
    assert "Usage:" in text
    assert set(loaded["mods"]) == EXPECTED
    assert loaded["heavy"] == []


def test_a_commands_help_loads_its_own_module_and_no_other_command():
    loaded, text = _help("check", "--help")
    assert "--annotations" in text
    mods = set(loaded["mods"])
    assert EXPECTED < mods and "recompile_probe.cli.check" in mods
    assert mods & COMMAND_MODULES == {"recompile_probe.cli.check"}
    assert not any(
        m.startswith(("recompile_probe.records", "recompile_probe.analysis")) for m in mods
    )
    assert loaded["heavy"] == []


def test_the_help_is_the_same_with_the_real_modules_loaded_first():
    def shown(pre: str) -> str:
        code = (
            f"{pre}import sys; sys.argv = ['recompile-probe', 'check', '--help']; "
            "from recompile_probe.cli import main; main()"
        )
        return subprocess.run(
            [sys.executable, "-c", code],
            capture_output=True,
            text=True,
            env={"COLUMNS": "100", "PATH": "", "TERM": "dumb"},
        ).stdout

    deferred = shown("")
    assert "--annotations" in deferred
    assert deferred == shown("import rich.markdown, rich.traceback; ")


def test_the_deferred_modules_are_the_real_ones_once_used():
    code = (
        "import sys\n"
        "from recompile_probe.cli import app\n"
        "import typer.rich_utils as ru\n"
        "assert 'markdown_it' not in sys.modules\n"
        "md = ru._make_rich_text(text='# t', markup_mode='markdown')\n"
        "import rich.markdown\n"
        "assert type(md) is rich.markdown.Markdown, type(md)\n"
        "from rich.traceback import Traceback\n"
        "assert Traceback.__module__ == 'rich.traceback' and hasattr(Traceback, 'from_exception')\n"
        "print('ok')\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.stdout.strip() == "ok", out.stderr
