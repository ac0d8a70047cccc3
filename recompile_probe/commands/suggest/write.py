"""`suggest --write`: the suggested strategy and its budget added to the scenario file, every
other line (comments, layout) kept; the file re-validated and put back if it does not load."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from ...artefacts import write_atomic
from ...errors import UsageError


def write_into(path: Path, yaml_text: str, strategy: str) -> None:
    """Add the suggested custom strategy, its budget, and its name in `strategies:` to the
    scenario file, keeping every other line (comments, layout) as it is. The file is re-validated
    and put back as it was if the result does not load."""
    from ...scenario.load import load

    original = path.read_text(encoding="utf-8")
    data = yaml.safe_load(original) or {}
    if strategy in (data.get("expect") or {}):
        raise UsageError(
            f"--write: {path} already has an expect: budget for {strategy!r}",
            "Edit that budget by hand with the figures above, or write the "
            "suggestion under another name with --name.",
        )
    text = original
    blocks = _split_blocks(yaml_text)
    for key, body in blocks.items():
        text = _add_to_mapping(text, key, body, path)
    listed = (yaml.safe_load(original) or {}).get("strategies")
    if not (isinstance(listed, list) and strategy in listed):  # a built-in may be listed already
        text = _add_to_list(text, "strategies", strategy, path)
    write_atomic(path, text)
    try:
        load(path)
    except Exception:
        write_atomic(path, original)
        raise


def _split_blocks(yaml_text: str) -> dict[str, list[str]]:
    blocks: dict[str, list[str]] = {}
    current = None
    for line in yaml_text.splitlines():
        if line.startswith("#"):
            continue
        if not line.startswith(" ") and line.endswith(":"):
            current = line[:-1]
            blocks[current] = []
        elif current is not None:
            blocks[current].append(line)
    return blocks


def _top_level(text: str, key: str) -> re.Match | None:
    return re.search(rf"(?m)^{re.escape(key)}:[ \t]*(?P<rest>[^\n]*)$", text)


def _add_to_mapping(text: str, key: str, body: list[str], path: Path) -> str:
    found = _top_level(text, key)
    if found is None:
        sep = "" if text.endswith("\n") or not text else "\n"
        return text + sep + f"{key}:\n" + "\n".join(body) + "\n"
    rest = found.group("rest").split("#", 1)[0].strip()
    if rest:
        raise UsageError(
            f"--write: `{key}:` in {path} is written inline ({rest[:30]}...)",
            "Paste the suggested block by hand, or write the key as a block.",
        )
    end = _block_end(text, found.end())
    insert = "\n".join(body) + "\n"
    return text[:end] + insert + text[end:]


def _block_end(text: str, start: int) -> int:
    """Where the block that starts after ``start`` ends: the next top-level line (or the end),
    after the block's last non-blank line."""
    pos = text.find("\n", start)
    if pos == -1:
        return len(text)
    pos += 1
    last = pos
    for match in re.finditer(r"(?m)^(?P<line>[^\n]*)\n?", text[pos:]):
        line = match.group("line")
        if line and not line[0].isspace() and not line.startswith("#"):
            break
        if line.strip() and not line.lstrip().startswith("#"):
            last = pos + match.end()
    return last


def _add_to_list(text: str, key: str, item: str, path: Path) -> str:
    found = _top_level(text, key)
    rest = found.group("rest").split("#", 1)[0].strip() if found else ""
    if found is None or (rest and not rest.startswith("[")):
        return text  # no list, or "all": every custom strategy runs already
    if rest.startswith("["):
        close = text.find("]", found.start())
        if close == -1:
            raise UsageError(f"--write: cannot read `{key}:` in {path}")
        return text[:close] + f", {item}" + text[close:]
    end = _block_end(text, found.end())
    indent = re.search(r"(?m)^([ \t]*)- ", text[found.end() : end])
    prefix = indent.group(1) if indent else "  "
    return text[:end] + f"{prefix}- {item}\n" + text[end:]
