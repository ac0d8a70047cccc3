"""Read TORCH_TRACE structured logs (what `TORCH_TRACE=dir python ...` writes) back into
``CompileEvent``s. No torch: any run's traces can be summarised anywhere.

A record is one line, a glog prefix then a JSON envelope; its payload, if any, follows on lines
that start with a tab. Records this module does not know are skipped silently; lines that cannot
be read (a truncated file, garbage) are counted and reported, never fatal.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator

from .errors import UsageError

if TYPE_CHECKING:
    from .model import WatchReport
from .model import CompileEvent
from .reasons import classify, failure_lines, is_recompile_limit

_PREFIX = re.compile(r"^[VIWEC]\d{4} [\d:.]+\s+\d+ [^\]]*\] (?P<json>\{.*)$")


@dataclass
class TraceRead:
    path: str
    events: list[CompileEvent] = field(default_factory=list)
    skipped_lines: int = 0


def trace_files(target: Path) -> list[Path]:
    if target.is_dir():
        files = sorted(p for p in target.rglob("*") if p.is_file() and p.suffix in (".log", ""))
        if not files:
            raise UsageError(f"{target}: no trace files in this directory",
                             "Point at a TORCH_TRACE directory or at one of its .log files.")
        return files
    if not target.exists():
        raise UsageError(f"{target}: no such file or directory")
    return [target]


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


def _compile_id(envelope: dict) -> str | None:
    frame, attempt = envelope.get("frame_id"), envelope.get("frame_compile_id")
    return None if frame is None or attempt is None else f"{frame}/{attempt}"


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
    reasons: dict[str, str] = {}
    graphs: dict[str, int] = {}
    breaks: dict[str, int] = {}
    seen_frames: set[tuple] = set()
    with open(path, encoding="utf-8", errors="replace") as handle:
        for envelope, payload in _records(iter(handle), skipped):
            cid = _compile_id(envelope)
            if "dynamo_output_graph" in envelope and cid:
                graphs[cid] = graphs.get(cid, 0) + 1
            artifact = envelope.get("artifact")
            if isinstance(artifact, dict) and cid:
                if artifact.get("name") == "recompile_reasons":
                    reasons[cid] = _reason_text(payload) or ""
                elif artifact.get("name") == "dynamo_graph_break_reason":
                    breaks[cid] = breaks.get(cid, 0) + 1
            metrics = envelope.get("compilation_metrics")
            if isinstance(metrics, dict):
                result.events.append(_event(metrics, reasons, graphs, breaks, seen_frames))
    result.skipped_lines = skipped[0]
    return result


def _event(m: dict, reasons: dict[str, str], graphs: dict[str, int], breaks: dict[str, int],
           seen_frames: set[tuple]) -> CompileEvent:
    cid = m.get("compile_id")
    frame = (m.get("co_name"), m.get("co_filename"), m.get("co_firstlineno"))
    cache_size = m.get("cache_size")
    recompile = (cache_size > 0 if isinstance(cache_size, int) else frame in seen_frames) or \
        is_recompile_limit(m.get("fail_type"), m.get("fail_reason"))
    if m.get("fail_type") is None:
        seen_frames.add(frame)
    reason = None
    if recompile:
        raw = reasons.get(cid) or m.get("recompile_reason")
        reason = "\n".join(failure_lines(raw)) or raw if raw else None
    detail = classify(reason, fail_type=m.get("fail_type"),
                      fail_reason=m.get("fail_reason")) if recompile else None
    time_us = m.get("dynamo_cumulative_compile_time_us")
    fail_reason = m.get("fail_reason")
    return CompileEvent(
        compile_id=cid, function=frame[0], call_index=None,
        reason=reason if reason is not None or detail is None else detail.text,
        guard_count=m.get("guard_count"), shape_env_guard_count=m.get("shape_env_guard_count"),
        graph_op_count=m.get("graph_op_count"),
        compile_time_ms=None if time_us is None else time_us / 1000.0,
        failed=m.get("fail_type") is not None, filename=frame[1], line=frame[2],
        recompile=recompile, fail_type=m.get("fail_type"),
        fail_reason=str(fail_reason).splitlines()[0] if fail_reason else None,
        reason_kind=detail.kind if detail else None,
        reason_detail=detail.to_dict() if detail else None,
        guard_latency_us=m.get("guard_latency_us"),
        graphs=graphs.get(cid, 0) if cid else None,
        graph_breaks=breaks.get(cid, 0) if cid else None,
    )


def summarize(target: Path, pattern: str | None = None) -> "WatchReport":
    """The per-function report of every trace file under target (one rank per file)."""
    from dataclasses import replace

    from . import __version__, analysis
    from .model import Tool, WatchReport
    from .session import environment
    from .watch import matches

    files = trace_files(target)
    reads = [read(f) for f in files]
    functions = []
    for r in reads:
        label = Path(r.path).name if len(reads) > 1 else None
        for f in analysis.by_function(r.events):
            functions.append(f if label is None else replace(f, function=f"{f.function} [{label}]"))
    if pattern:
        functions = [f for f in functions if matches(f, pattern)]
    return WatchReport(Tool("recompile-probe", __version__), environment(),
                       ", ".join(str(f) for f in files), tuple(functions),
                       tuple(e for r in reads for e in r.events),
                       skipped_lines=sum(r.skipped_lines for r in reads), kind="summarize")
