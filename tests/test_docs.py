"""The README and docs/ stay true: every relative link resolves (file and #anchor), and every
`recompile-probe ...` command line they show is accepted by the CLI's parser.

Nothing is run: command lines are parsed with click's `make_context` (no callback is invoked),
so this test imports neither torch nor a target and takes well under a second.
"""

from __future__ import annotations

import contextlib
import io
import re
import shlex
from pathlib import Path

import pytest
import typer

from recompile_probe.cli import app

try:  # typer vendors click as typer._click from 0.2x on; older releases use click itself
    from typer._click import exceptions as click_exceptions
except ImportError:  # pragma: no cover - depends on the typer installed
    from click import exceptions as click_exceptions  # type: ignore[no-redef]

#: usage errors: NoSuchOption, BadParameter, MissingParameter, BadArgumentUsage, ... all derive it
UsageError = click_exceptions.UsageError
#: what --help and --version raise once they have printed
EXITS = tuple({typer.Exit, getattr(click_exceptions, "Exit", typer.Exit)})

ROOT = Path(__file__).resolve().parent.parent
DOCS = sorted([ROOT / "README.md", *(ROOT / "docs").glob("*.md")])

FENCE = re.compile(r"^\s*(```+|~~~+)\s*([\w+-]*)")
#: a markdown link or image: [text](target) / ![alt](target), target without spaces
LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
#: the fence languages whose lines are shell commands; a bare `recompile-probe ...` line (no `$ `
#: prompt) counts only where the block is a script, not a transcript with output lines
SHELL_LANGUAGES = {"console", "bash", "sh", "shell", "text", ""}
SCRIPT_LANGUAGES = {"bash", "sh", "shell", ""}
#: shell punctuation that ends the recompile-probe part of a line
SHELL_OPERATORS = set("|&;<>()")


def rel(path: Path) -> str:
    return str(path.relative_to(ROOT))


def prose_lines(text: str) -> list[str]:
    """The lines outside fenced code blocks (code is not scanned for headings or links)."""
    out, fence = [], None
    for line in text.splitlines():
        match = FENCE.match(line)
        if match and (
            fence is None
            or match.group(1)[0] == fence[0]
            and len(match.group(1)) >= len(fence)
            and not match.group(2)
        ):
            fence = match.group(1) if fence is None else None
            continue
        if fence is None:
            out.append(line)
    return out


def code_blocks(text: str) -> list[tuple[str, int, list[str]]]:
    """(language, first line number, lines) of every fenced code block."""
    blocks, fence, lang, start, lines = [], None, "", 0, []
    for number, line in enumerate(text.splitlines(), 1):
        match = FENCE.match(line)
        if fence is None and match:
            fence, lang, start, lines = match.group(1), match.group(2).lower(), number + 1, []
        elif fence is not None and match and match.group(1)[0] == fence[0] and not match.group(2):
            blocks.append((lang, start, lines))
            fence = None
        elif fence is not None:
            lines.append(line)
    return blocks


def github_slug(heading: str) -> str:
    """GitHub's anchor for a heading: inline markup dropped, lowercase, punctuation other than
    `-` and `_` removed, each space a `-`."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # links keep their text
    text = re.sub(r"<[^>]+>", "", text).replace("`", "").replace("*", "")
    text = text.strip().lower()
    text = "".join(c for c in text if c.isalnum() or c in " -_")
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    """Every heading anchor of a markdown file, with GitHub's -1, -2 ... for repeats."""
    seen: dict[str, int] = {}
    found = set()
    for line in prose_lines(path.read_text()):
        match = HEADING.match(line)
        if not match:
            continue
        slug = github_slug(match.group(2))
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        found.add(slug if count == 0 else f"{slug}-{count}")
    return found


def links(path: Path) -> list[str]:
    """The relative link targets of a markdown file (web and mail links left out)."""
    targets = []
    for line in prose_lines(path.read_text()):
        for target in LINK.findall(line):
            if not re.match(r"^(https?:|mailto:)", target):
                targets.append(target)
    return targets


def command_lines(path: Path) -> list[tuple[int, str]]:
    """(line number, text) of every `recompile-probe ...` command in the file's shell blocks:
    `$ ` prompts stripped, `\\` continuations joined, `# comments` dropped."""
    found = []
    for lang, start, lines in code_blocks(path.read_text()):
        if lang not in SHELL_LANGUAGES:
            continue
        i = 0
        while i < len(lines):
            number, line = start + i, lines[i].strip()
            while line.endswith("\\") and i + 1 < len(lines):
                i += 1
                line = line[:-1].rstrip() + " " + lines[i].strip()
            i += 1
            if line.startswith("$ "):
                line = line[2:].lstrip()
            elif lang not in SCRIPT_LANGUAGES:
                continue  # a transcript's output line, e.g. "recompile-probe 0.1.0 · scenario ..."
            if line.startswith("recompile-probe ") or line == "recompile-probe":
                found.append((number, line))
    return found


def arguments(line: str) -> list[str]:
    """The words of a shell line after `recompile-probe`, up to a pipe, redirection, `&&` or
    `;` outside quotes, and without a trailing `# comment`."""
    lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    lexer.commenters = "#"
    words = []
    for word in lexer:
        if word and set(word) <= SHELL_OPERATORS:
            break
        words.append(word)
    assert words[0] == "recompile-probe", line
    return words[1:]


def parse(args: list[str]) -> None:
    """Parse `recompile-probe ARGS` as the CLI would, running no command: click's make_context
    on the group (no subcommand, or options before it) or on the named subcommand."""
    group = typer.main.get_command(app)
    assert hasattr(group, "commands"), group  # the app is a group of subcommands
    name = next((a for a in args if not a.startswith("-")), None)
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        try:
            if name is None or args[0].startswith("-"):
                group.make_context("recompile-probe", list(args), resilient_parsing=False)
                if name is None:
                    return
            # the group loads a command's module when asked for it, as the CLI does
            known = group.list_commands(None)
            command = group.get_command(None, name)
            assert command is not None, f"unknown command {name!r}; known: {known}"
            rest = args[args.index(name) + 1 :]
            command.make_context(name, rest, resilient_parsing=False)
        except EXITS:
            pass  # --help and --version print and exit, as they should


LINKS = [(path, target) for path in DOCS for target in links(path)]
COMMANDS = [(path, number, line) for path in DOCS for number, line in command_lines(path)]


def test_the_docs_exist():
    names = {p.name for p in DOCS}
    assert {
        "README.md",
        "scenarios.md",
        "strategies.md",
        "run-and-ci.md",
        "explain.md",
        "suggest.md",
        "watch.md",
        "json.md",
        "torch-releases.md",
        "performance.md",
    } <= names


def test_the_checks_have_something_to_check():
    """Neither check can pass vacuously: the collectors find the links and commands there are."""
    assert len(LINKS) >= 40, [t for _, t in LINKS]
    assert sum("#" in target for _, target in LINKS) >= 20
    assert len(COMMANDS) >= 20, COMMANDS
    assert {line.split()[1] for _, _, line in COMMANDS} >= {
        "run",
        "check",
        "explain",
        "suggest",
        "watch",
        "summarize",
        "diff",
        "render",
        "merge",
        "schema",
        "--help",
    }


def test_the_collectors_handle_what_the_docs_write():
    assert github_slug("Parallel runs (`--jobs N`)") == "parallel-runs---jobs-n"
    assert (
        github_slug("In a test suite: the pytest plugin and `record()`")
        == "in-a-test-suite-the-pytest-plugin-and-record"
    )
    assert github_slug("Which marks do I need? (`suggest`)") == "which-marks-do-i-need-suggest"
    assert arguments('recompile-probe run --sequence "B=1,S=7; B=2,S=33" | tee x  # c') == [
        "run",
        "--sequence",
        "B=1,S=7; B=2,S=33",
    ]
    assert arguments("recompile-probe watch -- python x.py --fixed; echo $?") == [
        "watch",
        "--",
        "python",
        "x.py",
        "--fixed",
    ]
    assert arguments("recompile-probe run > out.txt 2>&1") == ["run"]
    assert arguments("recompile-probe check a.yaml && echo ok") == ["check", "a.yaml"]
    for bad in (
        ["run", "--no-such-flag"],
        ["no-such-command"],
        ["run", "--jobs"],
        ["check", "x.yaml", "--max-recompiles", "many"],
        ["check"],
    ):
        with pytest.raises((UsageError, AssertionError)):
            parse(bad)


@pytest.mark.parametrize(("path", "target"), LINKS, ids=[f"{rel(p)}->{t}" for p, t in LINKS])
def test_every_relative_link_resolves(path, target):
    file_part, _, anchor = target.partition("#")
    linked = (path.parent / file_part).resolve() if file_part else path
    assert linked.exists(), f"{rel(path)}: link {target!r}: {linked} does not exist"
    if anchor:
        assert linked.suffix == ".md", f"{rel(path)}: link {target!r}: anchor into a non-.md file"
        known = anchors(linked)
        assert anchor in known, (
            f"{rel(path)}: link {target!r}: no heading with anchor {anchor!r} "
            f"in {rel(linked)}; its anchors: {sorted(known)}"
        )


@pytest.mark.parametrize(
    ("path", "number", "line"), COMMANDS, ids=[f"{rel(p)}:{n}" for p, n, _ in COMMANDS]
)
def test_every_command_line_in_the_docs_parses(path, number, line):
    try:
        parse(arguments(line))
    except UsageError as e:  # NoSuchOption, BadParameter, MissingParameter, ...
        pytest.fail(f"{rel(path)}:{number}: `{line}` does not parse: {e.format_message()}")


def test_architecture_names_only_files_that_exist() -> None:
    """docs/architecture.md's table of the files behind each command names real modules."""
    text = (ROOT / "docs" / "architecture.md").read_text()
    table = text[text.index("## The files behind each command") : text.index("## Which way")]
    package = ROOT / "recompile_probe"
    named = re.findall(r"(?<![\w/.])((?:[a-z_]+/)*[a-z_]+\.py|[a-z_]+/)(?![\w/])", table)
    assert len(named) > 20
    for row in table.splitlines()[2:]:
        cells = [c.strip() for c in row.strip("|").split("|")]
        if len(cells) < 3 or not cells[1].endswith(".py"):
            continue
        assert (package / "cli" / cells[1]).is_file(), cells[1]
    # a bare name ("overrides.py" after "scenario/load.py") is a sibling: some folder holds it
    files = {p.relative_to(package).as_posix() for p in package.rglob("*.py")}
    folders = {p.relative_to(package).as_posix() + "/" for p in package.rglob("*") if p.is_dir()}
    known = files | folders

    def exists(name: str) -> bool:
        return name in known or any(k.endswith("/" + name) for k in known)

    assert [name for name in named if not exists(name)] == []
