"""Read TORCH_TRACE structured logs (what `TORCH_TRACE=dir python ...` writes) back into
``CompileEvent``s, built by the same EventBuilder as the live recorder's. No torch: any run's
traces can be summarised anywhere.

A record is one line, a glog prefix then a JSON envelope; its payload, if any, follows on lines
that start with a tab. Records this module does not know are skipped silently; lines that cannot
be read (a truncated file, garbage) are counted and reported, never fatal.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ..provenance.attribution import reason_origins, refined
from ..provenance.origin import with_stacks
from ..provenance.trace import TraceEvidence
from ..reasons.text import failure_lines, split_parts
from ..records.compile_ids import CompileId, compile_key
from ..records.run import CompileEvent
from .events import EventBuilder

_PREFIX = re.compile(r"^[VIWEC]\d{4} [\d:.]+\s+\d+ [^\]]*\] (?P<json>\{.*)$")


@dataclass
class TraceRead:
    path: str
    events: list[CompileEvent] = field(default_factory=list)
    skipped_lines: int = 0
    #: per compile (records.compile_ids.compile_key), what the tables need beside the event (as
    #: Recorder.extras): ``graph_breaks`` and ``specializations`` with their user lines
    extras: dict[str, dict] = field(default_factory=dict)
    #: the rank that wrote it, as its records say ("rank": N in the envelope, written by a
    #: process in a process group); None where none says
    rank: int | None = None


def _records(lines: Iterator[str], skipped: list[int]) -> Iterator[tuple[dict, str | None]]:
    envelope: dict | None = None
    payload: list[str] = []
    for raw in lines:
        line = raw.rstrip("\n")
        if line.startswith("\t"):
            if envelope is not None:
                payload.append(line[1:])
            else:
                skipped[0] += 1
            continue
        if envelope is not None:
            yield envelope, "\n".join(payload) if payload else None
            envelope, payload = None, []
        if not line.strip():
            continue
        match = _PREFIX.match(line)
        try:
            parsed = json.loads(match.group("json")) if match else None
        except json.JSONDecodeError:
            parsed = None
        if not isinstance(parsed, dict):
            skipped[0] += 1
            continue
        envelope = parsed
    if envelope is not None:
        yield envelope, "\n".join(payload) if payload else None


def _reason_text(payload: str | None) -> str | None:
    if payload is None:
        return None
    try:
        value: Any = json.loads(payload)
    except json.JSONDecodeError:
        value = payload
    if isinstance(value, list):
        value = "\n".join(str(v) for v in value)
    return str(value)


def read(path: Path) -> TraceRead:
    result = TraceRead(str(path))
    skipped = [0]
    builder = EventBuilder()
    reasons: dict[str, str] = {}
    #: compile id -> (attempt, graphs of that attempt): Dynamo may restart a compile ([2/1_1]);
    #: only the last attempt's graphs reached the backend
    graphs: dict[str, tuple[int, int]] = {}
    breaks: dict[str, tuple[int, int]] = {}
    where = TraceEvidence()
    #: compile ids whose metrics record was read since the last reset: a compile of one of them
    #: starting again (its dynamo_start, else its metrics record) means torch._dynamo.reset()
    #: ran in between (a reset restarts ids at 0/0); other records of a compile may follow its
    #: metrics record, so they decide nothing
    recorded: set[str] = set()

    def key(cid: str) -> str:
        return compile_key(cid, builder.resets)

    with open(path, encoding="utf-8", errors="replace") as handle:
        for envelope, payload in _records(iter(handle), skipped):
            if result.rank is None and isinstance(envelope.get("rank"), int):
                result.rank = envelope["rank"]
            ident = CompileId.from_envelope(envelope)
            cid = str(ident) if ident is not None else None
            metrics = envelope.get("compilation_metrics")
            if isinstance(metrics, dict) and metrics.get("compile_id") is not None:
                cid = str(metrics.get("compile_id"))
            starts = "dynamo_start" in envelope or isinstance(metrics, dict)
            if starts and cid in recorded:  # Dynamo was reset: per-id tables start afresh
                builder.reset()
                recorded.clear()
                reasons.clear()
                graphs.clear()
                breaks.clear()
                where.reset()
            attempt = ident.attempt if ident is not None else 0
            if "dynamo_output_graph" in envelope and cid:
                _count(graphs, cid, attempt)
            table = envelope.get("str")
            if isinstance(table, list) and len(table) == 2 and isinstance(table[0], str):
                where.add_file(table[0], table[1])
            spec = envelope.get("symbolic_shape_specialization")
            if isinstance(spec, dict) and cid:
                _specialization(result, where, cid, key(cid), spec)
            if isinstance(envelope.get("dynamo_cpp_guards_str"), dict) and cid and payload:
                where.read_guards(cid, payload)
            artifact = envelope.get("artifact")
            if isinstance(artifact, dict) and cid:
                if artifact.get("name") == "recompile_reasons":
                    reasons[cid] = _reason_text(payload) or ""
                elif artifact.get("name") == "dynamo_graph_break_reason":
                    _count(breaks, cid, attempt)
                    result.extras.setdefault(key(cid), {}).setdefault("graph_breaks", []).append(
                        where.graph_break(payload or "")
                    )
            if isinstance(metrics, dict):
                if cid is not None:
                    recorded.add(cid)
                raw = reasons.get(cid) if cid else None
                # a trace written with recompiles_verbose on (watch turns it on) holds each
                # entry's failing parts joined by "; ": reason keeps the first per entry
                every = (
                    [
                        f"{line.partition(': ')[0]}: {part}"
                        for line in failure_lines(raw)
                        for part in split_parts(line.partition(": ")[2])
                    ]
                    if raw
                    else []
                )
                firsts: dict[str, str] = {}
                for line in every:
                    firsts.setdefault(line.split(":", 1)[0], line)
                reason = "\n".join(firsts.values()) or raw if raw else None
                event = builder.build(
                    metrics,
                    reason=reason,
                    graphs=graphs.get(cid, (0, 0))[1] if cid else None,
                    graph_breaks=breaks.get(cid, (0, 0))[1] if cid else None,
                )
                if event.recompile and event.reason:
                    found = with_stacks(
                        reason_origins(failure_lines(event.reason), where), event.reason_origins
                    )
                    kind, detail = refined(
                        event.reason, event.reason_kind, event.reason_detail, found
                    )
                    event = replace(
                        event,
                        reason_origins=found or None,
                        reason_kind=kind,
                        reason_detail=detail,
                        failures=tuple(every) or event.failures,
                    )
                result.events.append(event)
    result.skipped_lines = skipped[0]
    return result


def _specialization(
    result: TraceRead, where: TraceEvidence, cid: str, key: str, spec: dict
) -> None:
    """A symbolic_shape_specialization record: once per (sources, value, user line)."""
    item = where.specialization(cid, spec)
    found = result.extras.setdefault(key, {}).setdefault("specializations", [])
    if item not in found:  # Dynamo logs it again when it retraces the same frame
        found.append(item)


def _count(counts: dict[str, tuple[int, int]], cid: str, attempt: int) -> None:
    seen_attempt, n = counts.get(cid, (attempt, 0))
    if attempt > seen_attempt:  # a restart: the earlier attempt's records were thrown away
        seen_attempt, n = attempt, 0
    if attempt == seen_attempt:
        counts[cid] = (seen_attempt, n + 1)
