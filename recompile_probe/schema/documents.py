"""The JSON Schemas of every document the tool writes: report, check, watch, explain, suggest.
No torch."""

from __future__ import annotations

import dataclasses
from typing import Any

from .builder import Builder, document, report_body, report_enums, version


def report_schema(strict: bool = False) -> dict[str, Any]:
    """The JSON report of `run --format json` (and `render --format json`, `--output`)."""
    builder = Builder(strict, report_enums())
    body = report_body(builder)
    return document(
        "recompile-probe report",
        "A report of `recompile-probe run --format json` (docs/json.md). "
        "Fields are only ever added, never renamed; null is a figure the installed "
        "torch could not provide.",
        body,
        builder,
    )


def check_bundle_schema(strict: bool = False) -> dict[str, Any]:
    """`check --json` (and `--baseline`): one report for one scenario, else a bundle of them."""
    builder = Builder(strict, report_enums())
    builder.defs["Report"] = report_body(builder)
    bundle: dict[str, Any] = {
        "type": "object",
        "properties": {
            "schema_version": version(),
            "reports": {
                "type": "array",
                "items": {"$ref": "#/$defs/Report"},
                "description": "One report per scenario, in the order given.",
            },
            "shard": {
                "type": "object",
                "description": "check --shard K/N: which share of the runs "
                "this file holds, for `recompile-probe merge` "
                "(index, count, fingerprint, cost, runs, plan, "
                "failures).",
            },
        },
        "required": ["schema_version", "reports"],
    }
    if strict:
        bundle["additionalProperties"] = False
    builder.defs["Bundle"] = bundle
    return document(
        "recompile-probe check results",
        "What `recompile-probe check --json` writes: the report itself for one "
        "scenario, a bundle of reports for several.",
        {"oneOf": [{"$ref": "#/$defs/Report"}, {"$ref": "#/$defs/Bundle"}]},
        builder,
    )


def watch_schema(strict: bool = False) -> dict[str, Any]:
    """`watch --format json` and `summarize --format json` (model.watch_to_json)."""
    from ..records import watch as model

    builder = Builder(
        strict,
        report_enums(),
        extra={
            "CompileEvent": {
                "pid": {
                    "type": "integer",
                    "description": "watch: the process this "
                    "compile happened in (compile ids restart in each process).",
                }
            },
            "WatchReport": {
                "totals": {
                    "type": "object",
                    "additionalProperties": {"type": "integer"},
                    "description": "watch: processes, processes_compiled, functions, compiles, "
                    "recompiles and failed over every process.",
                }
            },
        },
    )
    body = builder.record(model.WatchReport)
    body["properties"] = {
        "schema_version": version(),
        **{k: v for k, v in body["properties"].items() if k != "schema_version"},
    }
    body["required"] = ["schema_version", *body["required"]]
    return document(
        "recompile-probe watch report",
        "What `recompile-probe watch --format json` and `summarize --format json` write.",
        body,
        builder,
    )


def explain_schema(strict: bool = False) -> dict[str, Any]:
    """`explain --format json` (explain.to_dict): explanations, costs and the report."""
    from ..analysis.diffs import GuardDiff
    from ..analysis.errors import ErrorExplanation
    from ..analysis.fixes import Recompile
    from ..records.run import CacheEntry, Run

    builder = Builder(strict, report_enums())
    run = builder.record(Run)["properties"]
    entry_props = builder.record(CacheEntry)["properties"]
    builder.defs["Report"] = report_body(builder)

    def obj(props: dict[str, Any], description: str) -> dict[str, Any]:
        out: dict[str, Any] = {
            "type": "object",
            "description": description,
            "properties": props,
            "required": list(props),
        }
        if strict:
            out["additionalProperties"] = False
        return out

    nullable_number = {"type": ["number", "null"]}
    entry = obj(
        {
            **{
                k: entry_props[k]
                for k in (
                    "compile_id",
                    "function",
                    "call_index",
                    "batch_size",
                    "sizes",
                    "guard_count",
                    "leaf_guard_count",
                )
            },
            "guards_by_kind": {
                "type": "object",
                "additionalProperties": {"type": "integer"},
                "description": "guard kind -> how many guard lines (code parts), most first",
            },
            "leaf_guards_by_kind": {
                "type": ["object", "null"],
                "additionalProperties": {"type": "integer"},
                "description": "guard kind -> how many leaf guards, most first; adds up to "
                "leaf_guard_count (null: not read)",
            },
            "shape_env_guards": {
                "type": "array",
                "items": {"type": "string"},
                "description": "the symbolic (SHAPE_ENV) guards' text: the shape env's "
                "epilogue lambda guard only",
            },
            "object_aliasing_guards": {
                "type": "array",
                "items": {"type": "string"},
                "description": "the `a is b` (OBJECT_ALIASING) guards' text, the other "
                "epilogue lambda guard",
            },
            "guards": entry_props["guards"],
        },
        "A cache entry of the run, with its guards counted by kind.",
    )
    explanation = obj(
        {
            **{
                k: run[k]
                for k in (
                    "sequence_name",
                    "sequence",
                    "points",
                    "strategy",
                    "compiles",
                    "recompiles",
                    "steady_state_us",
                    "eager_us",
                    "steady_state_noisy",
                    "guard_check_us",
                )
            },
            "guard_latency_us_cold": {
                **nullable_number,
                "description": run["guard_latency_us"].get("description", ""),
            },
            "entries": {"type": "array", "items": {"$ref": "#/$defs/ExplainedEntry"}},
            "diffs": {
                "type": "array",
                "items": builder.ref(GuardDiff),
                "description": "guard diffs between consecutive entries of each frame",
            },
            "recompile_reasons": {"type": "array", "items": builder.ref(Recompile)},
            "specializations": run["specializations"],
            "graph_breaks": run["graph_breaks"],
            "error": {
                "anyOf": [builder.ref(ErrorExplanation), {"type": "null"}],
                "description": "the run errored: the error, the lines that specialized what "
                "it marked, and why the strategy cannot help; null for a run that did not",
            },
        },
        "One strategy of one sequence that compiled more than once or errored (or was chosen).",
    )
    cost = obj(
        {
            **{
                k: run[k]
                for k in (
                    "sequence_name",
                    "strategy",
                    "compiles",
                    "steady_state_us",
                    "steady_state_min_us",
                    "steady_state_p90_us",
                    "steady_state_noisy",
                    "eager_us",
                    "guard_check_us",
                )
            },
            "guard_latency_us_cold": {
                **nullable_number,
                "description": run["guard_latency_us"].get("description", ""),
            },
        },
        "The per-call costs of every run.",
    )
    builder.defs.update(ExplainedEntry=entry, Explanation=explanation, Cost=cost)
    body = obj(
        {
            "schema_version": version(),
            "explanations": {"type": "array", "items": {"$ref": "#/$defs/Explanation"}},
            "costs": {"type": "array", "items": {"$ref": "#/$defs/Cost"}},
            "notes": {
                "type": "array",
                "items": {"type": "string"},
                "description": "cost notes per sequence (a slow winner, noisy timings)",
            },
            "report": {"$ref": "#/$defs/Report"},
        },
        "",
    )
    body.pop("description")
    return document(
        "recompile-probe explanation",
        "What `recompile-probe explain --format json` writes.",
        body,
        builder,
    )


def suggest_schema(strict: bool = False) -> dict[str, Any]:
    """`suggest --format json` (suggestion.to_json): what was measured and what is recommended."""
    from ..reasons.kinds import KINDS
    from ..records import report as model
    from ..records import suggestion as sug
    from ..strategies.model import MARKS

    enums = {
        **report_enums(),
        ("Evaluation", "status"): sug.STATUSES,
        ("MarkChoice", "kind"): tuple(MARKS),
        ("Unfixable", "reason_kind"): KINDS,
        ("Suggestion", "stopped_by"): sug.STOPPED_BY,
    }
    builder = Builder(strict, enums)
    # the records as their to_dict writes them (MarkChoice without name, Evaluation without cost)
    builder.defs["MarkChoice"] = builder.record(
        sug.MarkChoice, ("argument", "dim", "symbol", "kind")
    )
    evaluation = tuple(f.name for f in dataclasses.fields(sug.Evaluation) if f.name != "cost")
    builder.defs["Evaluation"] = builder.record(sug.Evaluation, evaluation)
    props = builder.defs["Evaluation"]["properties"]

    def obj(
        properties: dict[str, Any], description: str = "", required: list[str] | None = None
    ) -> dict[str, Any]:
        out: dict[str, Any] = {"type": "object"}
        if description:
            out["description"] = description
        out.update(
            properties=properties, required=list(properties) if required is None else required
        )
        if strict:
            out["additionalProperties"] = False
        return out

    def nullable(ref: dict[str, Any]) -> dict[str, Any]:
        return {"anyOf": [ref, {"type": "null"}]}

    builder.defs["Recommendation"] = obj(
        {
            k: props[k]
            for k in (
                "marks",
                "whole_function",
                "compiles",
                "guard_count",
                "shape_env_guard_count",
                "steady_state_us",
                "outputs_match",
                "checks",
                "name",
                "form",
            )
        },
        "The best candidate (the first of candidates), in short.",
    )
    scenario = builder.record(model.ScenarioRef)
    scenario["properties"].update(
        sequences={
            "type": "array",
            "items": {"type": "string"},
            "description": "the sequences every candidate was measured over",
        },
        backend={"type": "string"},
    )
    scenario["required"] = list(scenario["properties"])
    builder.defs["SuggestScenario"] = scenario
    suggestion = builder.record(sug.Suggestion)["properties"]
    evaluation_ref = {"$ref": "#/$defs/Evaluation"}
    body = obj(
        {
            "schema_version": {**version(), "const": sug.SCHEMA_VERSION},
            "tool": builder.ref(model.Tool),
            "environment": builder.ref(model.Environment),
            "scenario": {"$ref": "#/$defs/SuggestScenario"},
            "locations": {
                "type": "array",
                "items": builder.ref(sug.Location),
                "description": "every (argument, dim) whose size varies",
            },
            "search": suggestion["search"],
            "budget": suggestion["budget"],
            "evaluations": {
                "type": "integer",
                "description": "candidates measured (or read from --from-report: reused)",
            },
            "optimal": suggestion["optimal"],
            "complete": suggestion["complete"],
            "time_limit": suggestion["time_limit"],
            "stopped_by": suggestion["stopped_by"],
            "planned": suggestion["planned"],
            "skipped": {
                **suggestion["skipped"],
                "items": {"type": "string", "enum": list(sug.PHASES)},
            },
            "elapsed_s": suggestion["elapsed_s"],
            "from_report": suggestion["from_report"],
            "reused": suggestion["reused"],
            "timed": suggestion["timed"],
            "recommendation": {
                **nullable({"$ref": "#/$defs/Recommendation"}),
                "description": "null: no candidate ran",
            },
            "necessity": {
                "type": "array",
                "items": builder.ref(sug.Necessity),
                "description": "per mark of the recommendation, the measured run that "
                "shows it is needed",
            },
            "checks": {
                **nullable(
                    obj(
                        {
                            "with": evaluation_ref,
                            "without": nullable(evaluation_ref),
                            "verdict": {"type": ["string", "null"]},
                        }
                    )
                ),
                "description": suggestion["checks_with"].get("description", ""),
            },
            "candidates": {**suggestion["candidates"], "items": evaluation_ref},
            "unfixable": {
                "type": "array",
                "items": builder.ref(sug.Unfixable),
                "description": "recompiles no measured marking removed",
            },
            "change": {
                **nullable(builder.ref(sug.Change)),
                "description": "the recommendation as code, environment and YAML",
            },
            "notes": suggestion["notes"],
        }
    )
    return document(
        "recompile-probe suggestion",
        "What `recompile-probe suggest --format json` writes.",
        body,
        builder,
    )
