"""GitLab's Code Quality report from real runs: the fields its merge-request widget reads, on the
same lines as the GitHub annotations, with fingerprints that stay put between two runs."""

from __future__ import annotations

import json

import jsonschema

from helpers import PROGRAMS, ROOT, invoke_at_root

SCENARIO = PROGRAMS / "annotations" / "serving.yaml"

#: GitLab's documented fields of a Code Quality issue (docs: "Code Quality report format")
ISSUE = {
    "type": "object",
    "required": ["description", "check_name", "fingerprint", "severity", "location"],
    "properties": {
        "description": {"type": "string", "minLength": 1},
        "check_name": {"type": "string", "minLength": 1},
        "fingerprint": {"type": "string", "minLength": 1},
        "severity": {"enum": ["info", "minor", "major", "critical", "blocker"]},
        "location": {
            "type": "object",
            "required": ["path", "lines"],
            "properties": {
                "path": {"type": "string", "minLength": 1},
                "lines": {
                    "type": "object",
                    "required": ["begin"],
                    "properties": {"begin": {"type": "integer", "minimum": 1}},
                },
            },
        },
    },
}


def _check(tmp_path, name):
    out = tmp_path / f"{name}.json"
    result = invoke_at_root(
        "check",
        str(SCENARIO.relative_to(ROOT)),
        "-q",
        "--codequality",
        str(out),
        "--annotations",
        "github",
    )
    assert result.exit_code == 1, result.output
    return json.loads(out.read_text()), result.output


def test_the_report_has_gitlabs_fields_and_stable_unique_fingerprints(tmp_path):
    first, annotations = _check(tmp_path, "a")
    second, _ = _check(tmp_path, "b")
    jsonschema.validate(first, {"type": "array", "items": ISSUE, "minItems": 1})
    prints = [i["fingerprint"] for i in first]
    assert len(set(prints)) == len(prints)
    assert prints == [i["fingerprint"] for i in second]
    # the same findings on the same lines as the annotations
    places = {(i["location"]["path"], i["location"]["lines"]["begin"]) for i in first}
    lines = [line for line in annotations.splitlines() if line.startswith("::")]
    assert len(lines) == len(first)
    for line in lines:
        props = dict(p.split("=", 1) for p in line.split(" ", 1)[1].split("::")[0].split(","))
        assert (props["file"], int(props["line"])) in places
    # default broke its budget; mark_dynamic's loop recompile merges into it (the most severe)
    assert {i["severity"] for i in first} == {"major"}
