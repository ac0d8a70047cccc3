"""The shipped examples stay true: the README quotes their output."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from recompile_probe.cli import app

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def line_of(path: Path, text: str) -> int:
    return next(
        i
        for i, line in enumerate(path.read_text().splitlines(), 1)
        if line.strip().startswith(text)
    )


def test_which_line_names_the_loop_the_branch_and_the_graph_break():
    source = EXAMPLES / "which_line.py"
    result = CliRunner().invoke(
        app,
        [
            "explain",
            str(EXAMPLES / "which_line.yaml"),
            "--strategy",
            "default",
            "--quiet",
            "-f",
            "json",
        ],
    )
    assert result.exit_code == 0, result.output
    (x,) = json.loads(result.stdout)["explanations"]
    origins = [o for r in x["recompile_reasons"] for o in (r.get("reason_origins") or ()) if o]
    found = {(Path(o["file"]).name, o["line"], o["role"]) for o in origins}
    assert ("which_line.py", line_of(source, "for i in range(n_steps):"), "specialized") in found
    assert ("which_line.py", line_of(source, "y = x * 2"), "first_use") in found
    breaks = {
        (Path(b["origin"]["file"]).name, b["origin"]["line"])
        for b in x["graph_breaks"]
        if b.get("origin")
    }
    assert ("which_line.py", line_of(source, "if float(y.abs().max()) > 100:")) in breaks
    kinds = {r["reason_kind"] for r in x["recompile_reasons"]}
    assert "user_specialization" in kinds
