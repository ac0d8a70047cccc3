"""A report (the runs of one scenario) and its versioned JSON form. No torch.

Saved reports are read back without torch: ``render``, ``diff``, ``merge`` and ``check
--from-report`` work anywhere. Readers ignore fields they do not know (newer writers add some).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from ..errors import ReportError
from . import encode
from .decode import build
from .ranks import RankRuns
from .run import Run

SCHEMA_VERSION = 1


@dataclass(frozen=True)
class Tool:
    name: str
    version: str


@dataclass(frozen=True)
class Environment:
    torch: str | None
    python: str
    platform: str
    #: the compile settings in force for the runs, name -> value as written: environment
    #: variables (TORCH_COMPILE_*, TORCHDYNAMO_*, TORCH_DYNAMO_*, TORCH_LOGS) and
    #: torch.compiler.config / torch._dynamo.config values away from their defaults that the
    #: tool did not set ("torch.compiler.config.static_sources": "'.*:0'"); {} in reports
    #: written before
    compile_settings: dict[str, str] = field(default_factory=dict)
    #: the inherited settings `--clean-env` kept out of the runs (same form); {} without it
    cleared_settings: dict[str, str] = field(default_factory=dict)
    #: how the runs' worker processes started: "forked from a warm server", or "fresh
    #: interpreter: <why not forked>"; None where the runs ran in the tool's own process
    worker_start: str | None = None


@dataclass(frozen=True)
class ScenarioRef:
    name: str
    path: str | None
    #: sha256 of the scenario file's text as it was loaded, so that `explain --from-report`
    #: can tell the file changed since; None when built in code or in a report written before
    sha256: str | None = None


@dataclass(frozen=True)
class Report:
    tool: Tool
    environment: Environment
    scenario: ScenarioRef
    runs: tuple[Run, ...] = ()
    schema_version: int = SCHEMA_VERSION
    #: False when the run was interrupted and ``runs`` holds only what finished.
    complete: bool = True
    #: a scenario with `ranks:`: every strategy's runs on each rank compared (``runs`` then holds
    #: one run per rank, each with its ``rank``); None for a single-process scenario
    rank_runs: RankRuns | None = None

    def sequences(self) -> list[tuple[str, tuple[int, ...]]]:
        """(name, batch sizes) in first-seen order."""
        seen: dict[str, tuple[int, ...]] = {}
        for run in self.runs:
            seen.setdefault(run.sequence_name, run.sequence)
        return list(seen.items())

    def runs_for(self, sequence_name: str) -> list[Run]:
        return [r for r in self.runs if r.sequence_name == sequence_name]

    def ranks(self) -> list[int | None]:
        """The ranks the runs were made on, in order; [None] for a single-process report."""
        return sorted({r.rank for r in self.runs}, key=lambda r: -1 if r is None else r) or [None]


# --- JSON -----------------------------------------------------------------------------------------


def to_dict(report: Report) -> dict[str, Any]:
    """The JSON-ready form; key order follows the contract."""
    data = encode.data(report)
    ordered = {"schema_version": data.pop("schema_version")}
    ordered.update(data)
    return ordered


def to_json(report: Report, indent: int | None = 2) -> str:
    return json.dumps(to_dict(report), indent=indent) + "\n"


def run_from_dict(data: dict[str, Any], where: str = "run") -> Run:
    return build(Run, data, where)


def from_dict(data: dict[str, Any]) -> Report:
    if not isinstance(data, dict):
        raise ReportError("not a recompile-probe report: the top level is not an object")
    version = data.get("schema_version")
    if version != SCHEMA_VERSION:
        raise ReportError(
            f"unsupported schema_version {version!r} (this recompile-probe reads {SCHEMA_VERSION})"
        )
    runs = tuple(run_from_dict(r, f"runs[{i}]") for i, r in enumerate(data.get("runs", ())))
    return Report(
        tool=build(Tool, data.get("tool", {}), "tool"),
        environment=build(Environment, data.get("environment", {}), "environment"),
        scenario=build(ScenarioRef, data.get("scenario", {}), "scenario"),
        runs=runs,
        schema_version=version,
        complete=data.get("complete", True),
        rank_runs=build(RankRuns, data["rank_runs"], "rank_runs")
        if data.get("rank_runs")
        else None,
    )


def from_json(text: str, source: str = "report") -> Report:
    """One report; a bundle of several (written by `check` for several scenarios) is refused."""
    reports = reports_from_json(text, source)
    if len(reports) != 1:
        raise ReportError(f"{source}: holds {len(reports)} reports; expected one")
    return reports[0]


def reports_from_json(text: str, source: str = "report") -> list[Report]:
    """A single report or a bundle ``{"schema_version": 1, "reports": [...]}``."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ReportError(f"{source}: not valid JSON ({exc})") from None
    return reports_from_data(data, source)


def reports_from_data(data: Any, source: str = "report") -> list[Report]:
    """:func:`reports_from_json` of a document already parsed."""
    try:
        if isinstance(data, dict) and "reports" in data and "runs" not in data:
            if data.get("schema_version") != SCHEMA_VERSION:
                raise ReportError(f"unsupported schema_version {data.get('schema_version')!r}")
            return [from_dict(r) for r in data["reports"]]
        return [from_dict(data)]
    except ReportError as exc:
        raise ReportError(f"{source}: {exc.message}") from None


def reports_to_json(reports: list[Report]) -> str:
    """One report as itself (the `run` format); several as a bundle."""
    if len(reports) == 1:
        return to_json(reports[0])
    return (
        json.dumps(
            {"schema_version": SCHEMA_VERSION, "reports": [to_dict(r) for r in reports]}, indent=2
        )
        + "\n"
    )
