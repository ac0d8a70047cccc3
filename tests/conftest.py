"""Shared fixtures (helpers.py: shared functions). Counts are checked against torch's own
CompileCounter and Dynamo's metrics, never against mocks."""

from __future__ import annotations

import os
import textwrap
from pathlib import Path

# Two xdist workers already fill the two cores CI has: torch's default of a thread per core in
# every worker and in every program a test starts oversubscribes them (measured: the compile-heavy
# tests ~18% slower). A test that wants threads sets its own.
os.environ.setdefault("OMP_NUM_THREADS", "1")

import subprocess

import _pytest.pytester
import pytest

import warm_cli
from helpers import FIXTURES

# `python -m recompile_probe ...` with its output captured, as most CLI tests run it, is forked
# from a warm server (warm_cli.py): seconds of torch import saved per call.
# RECOMPILE_PROBE_TEST_WARM=0 runs every one as a fresh interpreter.
subprocess.run = warm_cli.run  # type: ignore[assignment]

pytest_plugins = ["pytester"]

#: packages whose modules outlive a pytester test (top-level names)
_KEPT = {
    "torch",
    "functorch",
    "torchgen",
    "sympy",
    "mpmath",
    "numpy",
    "transformers",
    "recompile_probe",
}


class _KeepLibraries(_pytest.pytester.SysModulesSnapshot):
    """pytester drops every module a test imported once it ends. For these packages that breaks
    the next test in the worker: torch's C extension cannot initialise twice (SystemError),
    torch's artifact registries refuse a second registration, and a re-imported recompile_probe
    has new exception classes that the test modules' imports no longer match."""

    def __init__(self, preserve=None) -> None:
        def keep(name: str) -> bool:
            return name.partition(".")[0] in _KEPT or bool(preserve and preserve(name))

        super().__init__(preserve=keep)


_pytest.pytester.SysModulesSnapshot = _KeepLibraries  # type: ignore[misc]


@pytest.fixture
def write_scenario(tmp_path):
    """Write a scenario YAML into tmp_path (next to a copy of the fixture targets)."""
    (tmp_path / "user_targets.py").write_text((FIXTURES / "user_targets.py").read_text())

    def write(text: str, name: str = "scenario.yaml") -> Path:
        path = tmp_path / name
        path.write_text(textwrap.dedent(text).lstrip())
        return path

    return write


@pytest.fixture
def fresh_dynamo():
    """A test that compiles in this process: Dynamo reset and its metrics cleared around it."""
    import torch
    from torch._dynamo.utils import clear_compilation_metrics

    torch._dynamo.reset()
    clear_compilation_metrics()
    yield
    torch._dynamo.reset()


# --- every JSON report a test writes validates against the shipped schema -------------------------


def _schema_for(doc):
    """The schema name of a document the tool writes (schema_version 1), else None."""
    if not isinstance(doc, dict) or doc.get("schema_version") != 1:
        return None
    if "recommendation" in doc and "evaluations" in doc:
        return "suggest"
    if "functions" in doc:
        return "watch"
    if "explanations" in doc:
        return "explain"
    if "reports" in doc:
        return "check"
    if "runs" in doc:
        return "report"
    return None


@pytest.fixture(autouse=True)
def _reports_validate(request):
    """After each test that used tmp_path: every report it left there must validate (the JSON
    Schemas' promise: "schema report validates every report the tests write"). A test about
    malformed reports opts out with @pytest.mark.invalid_reports."""
    yield
    tmp = request.node.funcargs.get("tmp_path")
    if tmp is None or request.node.get_closest_marker("invalid_reports"):
        return
    try:
        import jsonschema
    except ImportError:  # the dev extra brings it; a bare install still runs the suite
        return
    import json

    from recompile_probe.schema.catalog import SCHEMAS

    for path in sorted(Path(tmp).rglob("*.json")):
        if path.stat().st_size > 20_000_000:
            continue
        try:
            doc = json.loads(path.read_text(encoding="utf-8"))
        except (ValueError, UnicodeDecodeError):
            continue
        name = _schema_for(doc)
        if name is None:
            continue
        errors = sorted(
            jsonschema.Draft202012Validator(
                _SCHEMA_CACHE.setdefault(name, SCHEMAS[name]())
            ).iter_errors(doc),
            key=lambda e: list(e.path),
        )
        assert not errors, f"{path.name} does not validate against the {name} schema: " + "; ".join(
            f"{list(e.path)}: {e.message[:200]}" for e in errors[:5]
        )


_SCHEMA_CACHE: dict = {}


def pytest_unconfigure(config):
    warm_cli.close()
