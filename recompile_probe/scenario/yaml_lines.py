"""YAML read safely, with the line of every key: errors point at the line. No torch.

``yaml.SafeLoader`` only: python tags are refused. Every dotted key (``sequences.rl``,
``inputs[0].shape``) gets its line, so an error found long after parsing still names it.
"""

from __future__ import annotations

from typing import Any

import yaml

from ..errors import ScenarioError
from .context import join


def parse(text: str, path: str | None) -> tuple[Any, dict[str, int]]:
    loader = yaml.SafeLoader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            raise ScenarioError(
                "the file is empty",
                path=path,
                remedy="A scenario needs at least `target:` and `sequences:`.",
            )
        lines: dict[str, int] = {}
        _index_lines(node, "", lines, path)
        data = loader.construct_document(node)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        problem = exc.problem or "invalid YAML"
        if exc.context and exc.context_mark is not None and exc.context_mark is not mark:
            problem += f" ({exc.context} at line {exc.context_mark.line + 1})"
        if "could not determine a constructor" in problem:
            problem = (
                f"YAML tag {problem.split('tag', 1)[1].strip()} is not allowed "
                "(scenarios are read with yaml.safe_load: no python tags)"
            )
        raise ScenarioError(problem, path=path, line=mark.line + 1 if mark else None) from None
    except yaml.YAMLError as exc:
        raise ScenarioError(f"invalid YAML ({exc})", path=path) from None
    finally:
        loader.dispose()
    return data, lines


def _index_lines(node: yaml.Node, prefix: str, lines: dict[str, int], path: str | None) -> None:
    lines.setdefault(prefix, node.start_mark.line + 1)
    if isinstance(node, yaml.MappingNode):
        seen: set[str] = set()
        for key_node, value_node in node.value:
            key = str(key_node.value)
            if key in seen:
                raise ScenarioError(
                    f"duplicate key {key!r}",
                    path=path,
                    line=key_node.start_mark.line + 1,
                    key=join(prefix, key),
                    remedy="YAML keeps only the last one: remove one of them.",
                )
            seen.add(key)
            child = join(prefix, key)
            lines[child] = key_node.start_mark.line + 1
            _index_lines(value_node, child, lines, path)
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            _index_lines(item, f"{prefix}[{i}]", lines, path)
