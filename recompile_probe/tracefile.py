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
from .events import EventBuilder
from .reasons import failure_lines

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
    builder = EventBuilder()
    reasons: dict[str, str] = {}
    #: compile id -> (attempt, graphs of that attempt): Dynamo may restart a compile ([2/1_1]);
    #: only the last attempt's graphs reached the backend
    graphs: dict[str, tuple[int, int]] = {}
    breaks: dict[str, tuple[int, int]] = {}
    with open(path, encoding="utf-8", errors="replace") as handle:
        for envelope, payload in _records(iter(handle), skipped):
            cid = _compile_id(envelope)
            attempt = envelope.get("attempt") or 0
            if "dynamo_output_graph" in envelope and cid:
                _count(graphs, cid, attempt)
            artifact = envelope.get("artifact")
            if isinstance(artifact, dict) and cid:
                if artifact.get("name") == "recompile_reasons":
                    reasons[cid] = _reason_text(payload) or ""
                elif artifact.get("name") == "dynamo_graph_break_reason":
                    _count(breaks, cid, attempt)
            metrics = envelope.get("compilation_metrics")
            if isinstance(metrics, dict):
                cid = metrics.get("compile_id")
                raw = reasons.get(cid) if cid else None
                reason = "\n".join(failure_lines(raw)) or raw if raw else None
                result.events.append(builder.build(
                    metrics, reason=reason,
                    graphs=graphs.get(cid, (0, 0))[1] if cid else None,
                    graph_breaks=breaks.get(cid, (0, 0))[1] if cid else None))
    result.skipped_lines = skipped[0]
    return result


def _count(counts: dict[str, tuple[int, int]], cid: str, attempt: int) -> None:
    seen_attempt, n = counts.get(cid, (attempt, 0))
    if attempt > seen_attempt:  # a restart: the earlier attempt's records were thrown away
        seen_attempt, n = attempt, 0
    if attempt == seen_attempt:
        counts[cid] = (seen_attempt, n + 1)


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
