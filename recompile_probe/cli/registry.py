"""The app and its commands, in the order `--help` lists them: each one's module and its line.

A command's module is imported only when that command runs or prints its own help: `--help`
lists every command from this table alone, so it loads none of them (each pulls in its options,
the format table and, when it runs, the library). The line here is also the first paragraph of
the command's own help, so the two never differ.
"""

from __future__ import annotations

import difflib
import importlib
from dataclasses import dataclass
from typing import Any

from . import lazy_rich

lazy_rich.defer()  # before typer's help renderer is first imported

import typer  # noqa: E402
from typer.core import TyperCommand, TyperGroup  # noqa: E402

from ..version import __version__  # noqa: E402


@dataclass(frozen=True)
class Command:
    name: str
    module: str  #: under recompile_probe.cli
    summary: str  #: the first paragraph of its help: what `--help` lists


COMMANDS = (
    Command("check", "check", "Run scenarios and gate on their budgets (the `expect:` section)."),
    Command(
        "diff",
        "diff",
        "Compare two JSON reports side by side (e.g. two torch versions). No torch needed, "
        "nothing is run.",
    ),
    Command(
        "explain",
        "explain",
        "Explain recompiles: cache entries and their guards, guard diffs between entries, "
        "classified reasons, the strategies that measurably removed each one, and what each "
        "strategy costs per call.",
    ),
    Command("targets", "listing", "List the built-in targets and their parameters."),
    Command(
        "strategies", "listing", "List the strategies (built-in, plus a scenario's custom ones)."
    ),
    Command(
        "merge",
        "merge",
        "Join the JSON reports of `check --shard K/N` into the report one unsharded `check` "
        "writes (same runs, order and figures); then `check SCENARIO... --from-report FILE` "
        "judges budgets and a baseline on it. No torch needed, nothing is run.",
    ),
    Command(
        "render",
        "render",
        "Re-render a saved JSON report (from `run`, a bundle from `check`, or `watch` / "
        "`summarize`) without running anything; no torch needed.",
    ),
    Command("run", "run", "Run a scenario under every strategy and compare them."),
    Command(
        "schema",
        "schema",
        "Print the JSON Schema (draft 2020-12) of the scenario file (for editors: completion "
        "and checks as you type) or of a JSON report; no torch needed.",
    ),
    Command(
        "suggest",
        "suggest",
        "Find, by measurement, the smallest marking (mark_dynamic / mark_unbacked per argument "
        "dim, or a whole-function strategy) that removes every avoidable recompile over the "
        "scenario's sequences.",
    ),
    Command(
        "summarize",
        "summarize",
        "Summarise TORCH_TRACE structured logs written by any run (TORCH_TRACE=dir python ..., "
        "several ranks allowed) into the same per-function table as `watch`; per-rank traces "
        "are compared: functions the ranks compiled differently. No torch needed.",
    ),
    Command(
        "watch",
        "watch",
        "Run a Python program with the recorder active from its first import, and report every "
        "compiled function: compiles, recompiles, graphs, graph breaks, cache entries, guards "
        "and the distinct recompile reasons.",
    ),
)
BY_NAME = {c.name: c for c in COMMANDS}


def summary(name: str, *rest: str) -> str:
    """A command's help: its summary line, then the paragraphs ``rest``."""
    return "\n\n".join((BY_NAME[name].summary, *rest))


class LazyGroup(TyperGroup):
    """A typer group that imports a command's module the first time the command is looked up
    to run or to print its own help; listing the commands (`--help`) imports none."""

    _listing = False

    def list_commands(self, ctx: Any) -> list[str]:
        return [c.name for c in COMMANDS]

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        if cmd_name in self.commands:
            return self.commands[cmd_name]
        command = BY_NAME.get(cmd_name)
        if command is None:
            return None
        if self._listing:  # only its summary is shown: a stand-in, the module stays unloaded
            return TyperCommand(name=cmd_name, help=command.summary)
        importlib.import_module(f"{__package__}.{command.module}")
        self._load(cmd_name)
        return self.commands.get(cmd_name)

    def _load(self, cmd_name: str) -> None:
        for info in app.registered_commands:
            name = info.name or typer.main.get_command_name(info.callback.__name__)  # type: ignore[union-attr]
            if name == cmd_name:
                self.commands[name] = typer.main.get_command_from_info(
                    info,
                    pretty_exceptions_short=app.pretty_exceptions_short,
                    rich_markup_mode=app.rich_markup_mode,
                )

    def format_help(self, ctx: Any, formatter: Any) -> None:
        self._listing = True
        try:
            super().format_help(ctx, formatter)
        finally:
            self._listing = False

    def resolve_command(self, ctx: Any, args: list[str]) -> Any:
        # typer would suggest only among the commands loaded so far
        name = args[0] if args else ""
        if name and name not in BY_NAME and not name.startswith("-"):
            matches = difflib.get_close_matches(name, list(BY_NAME))
            hint = f" Did you mean {', '.join(repr(m) for m in matches)}?" if matches else ""
            ctx.fail(f"No such command {name!r}.{hint}")
        return super().resolve_command(ctx, args)


#: The app every command's module registers itself on.
app = typer.Typer(
    name="recompile-probe",
    cls=LazyGroup,
    help="Find, explain and prevent torch.compile (Dynamo) recompilations.\n\n"
    "Drives a target through batch-size sequences under each specialization strategy and "
    "compares compiles, recompiles, guards, compile time, per-call cost and correctness.",
    no_args_is_help=True,
    add_completion=False,
    rich_markup_mode="rich",
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"recompile-probe {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(
        False, "--version", callback=_version, is_eager=True, help="Print the version and exit."
    ),
) -> None:
    """Find, explain and prevent torch.compile (Dynamo) recompilations."""
