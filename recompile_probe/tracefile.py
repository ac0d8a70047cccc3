"""Read TORCH_TRACE structured logs (what `TORCH_TRACE=dir python ...` writes) back into
``CompileEvent``s. No torch: any run's traces can be summarised anywhere.

A record is one line, a glog prefix then a JSON envelope; its payload, if any, follows on lines
that start with a tab. Records this module does not know are skipped silently; lines that cannot
be read (a truncated file, garbage) are counted and reported, never fatal.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator

from .errors import UsageError

if TYPE_CHECKING:
    from .model import WatchReport
from .model import CompileEvent
from .events import EventBuilder
from .causes import split_parts
from .reasons import failure_lines

_PREFIX = re.compile(r"^[VIWEC]\d{4} [\d:.]+\s+\d+ [^\]]*\] (?P<json>\{.*)$")


@dataclass
class TraceRead:
    path: str
    events: list[CompileEvent] = field(default_factory=list)
    skipped_lines: int = 0
    #: per compile id, what the tables need beside the event (as Recorder.extras):
    #: ``graph_breaks`` and ``specializations`` with their user lines
    extras: dict[str, dict] = field(default_factory=dict)


_GRAPH_BREAK_AT = re.compile(r"^Graph break in user code at (?P<path>.+):(?P<line>\d+)\s*$")
_TORCH_PART = re.compile(r"^(?P<dir>.*[\\/]torch)[\\/]_dynamo[\\/]")


class _TraceOrigins:
    """User lines from a trace's own records (no torch): guard_added_fast and
    symbolic_shape_specialization carry user stacks whose files are indices into the trace's
    string table (full paths); recompile reasons and guard comments carry torch's shortened
    paths, turned back into full ones by torch's own rule (cut the prefix shared with torch's
    directory, which the string table names too), exactly or not at all."""

    def __init__(self) -> None:
        self.files: dict[int, str] = {}
        self.torch_dir: str | None = None
        #: compile id -> tensor source -> where Dynamo first used it (TENSOR_MATCH comments)
        self.first_uses: dict[str, dict[str, Any]] = {}

    def add_file(self, path: str, index: int) -> None:
        self.files[index] = path
        match = _TORCH_PART.match(path)
        if match and self.torch_dir is None:
            self.torch_dir = match.group("dir")

    def is_torch(self, path: str) -> bool:
        return self.torch_dir is not None and path.startswith(self.torch_dir)

    def short(self, path: str) -> str:
        import os

        if self.torch_dir is None:
            return path
        try:
            prefix = os.path.commonpath([path, self.torch_dir])
        except ValueError:
            return path
        return path[len(prefix) + 1:]

    def resolve(self, short: str) -> tuple[str, bool]:
        found = {p for p in self.files.values() if not self.is_torch(p) and
                 (p == short or self.short(p) == short)}
        return (next(iter(found)), True) if len(found) == 1 else (short, False)

    def origin(self, path: str, line: int, function: str, code: str | None, role: str,
               exact: bool = True) -> dict:
        from .origins import user_function_name

        return {"file": path, "line": line, "function": user_function_name(function),
                "code": code, "role": role, "file_exact": exact}

    def from_stack(self, stack: Any, role: str) -> dict | None:
        """The innermost user frame of a structured-trace stack."""
        for frame in reversed(stack if isinstance(stack, list) else []):
            path = self.files.get(frame.get("filename")) if isinstance(frame, dict) else None
            if path is None or self.is_torch(path):
                continue
            return self.origin(path, frame.get("line"), str(frame.get("name")),
                               frame.get("loc") or None, role)
        return None

    def from_comment(self, text: str, role: str) -> dict | None:
        from .origins import FIRST_USE_MARK, locs_in_comment, split_guard_text

        _, comment = split_guard_text(text)
        locs = locs_in_comment(comment) if comment else []
        if not locs:
            return None
        loc = locs[0]
        path, exact = self.resolve(loc.path)
        if FIRST_USE_MARK in comment and role == "created":
            role = "first_use"
        return self.origin(path, loc.line, loc.function, loc.code, role, exact)

    def read_guards(self, cid: str, payload: str) -> None:
        """TENSOR_MATCH lines of dynamo_cpp_guards_str: each tensor's first use."""
        uses: dict[str, Any] = {}
        for line in payload.splitlines():
            head, _, rest = line.partition("TENSOR_MATCH: check_tensor(")
            if not rest:
                continue
            source = rest.split(",", 1)[0].strip()
            origin = self.from_comment(rest, "first_use")
            if origin is not None:
                uses.setdefault(source, origin)
        self.first_uses[cid] = uses

    def graph_break(self, payload: str) -> dict | None:
        lines = payload.splitlines()
        match = _GRAPH_BREAK_AT.match(lines[0].strip()) if lines else None
        reason = None
        start = next((i for i, ln in enumerate(lines) if ln.startswith("Graph Break Reason:")),
                     None)
        if start is not None:
            # the in-process reason's text: what follows the "Encountered graph break when
            # attempting to trace ..." heading, up to the traceback
            body = [lines[start].split(":", 1)[1].strip()]
            for text in lines[start + 1:]:
                if text.startswith(("User code traceback:", "Traceback (most recent")):
                    break
                body.append(text)
            if body[0].startswith("Encountered graph break") and any(b.strip() for b in body[1:]):
                body = body[1:]
            reason = "\n".join(body).strip() or None
        if match is None:
            return {"reason": reason, "origin": None, "count": 1}
        path, line = match.group("path"), int(match.group("line"))
        function, code = "?", None
        for i, text in enumerate(lines):  # the traceback's last frame at that line
            if text.strip().startswith(f'File "{path}", line {line}, in '):
                function = text.rsplit(" in ", 1)[1].strip()
                code = lines[i + 1].strip() if i + 1 < len(lines) else None
        return {"reason": reason, "origin": self.origin(path, line, function, code or None,
                                                        "graph_break"), "count": 1}

    def reason_origins(self, reason: str | None) -> tuple[dict | None, ...] | None:
        from .origins import reason_guard
        from .reasons import parse_line

        lines = failure_lines(reason)
        if not lines:
            return None
        out: list[dict | None] = []
        for line in lines:
            cid, text = reason_guard(line)
            detail = parse_line(line)
            origin = None
            if detail.what in ("size", "stride", "dtype", "requires_grad", "device") and \
                    detail.source is not None:
                origin = self.first_uses.get(cid or "", {}).get(detail.source)
            elif "  # " in text:
                origin = self.from_comment(text, "created")
            out.append(origin)
        return tuple(out)


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
    where = _TraceOrigins()
    with open(path, encoding="utf-8", errors="replace") as handle:
        for envelope, payload in _records(iter(handle), skipped):
            cid = _compile_id(envelope)
            attempt = envelope.get("attempt") or 0
            if "dynamo_output_graph" in envelope and cid:
                _count(graphs, cid, attempt)
            table = envelope.get("str")
            if isinstance(table, list) and len(table) == 2 and isinstance(table[0], str):
                where.add_file(table[0], table[1])
            spec = envelope.get("symbolic_shape_specialization")
            if isinstance(spec, dict) and cid:
                _specialization(result, where, cid, spec)
            if isinstance(envelope.get("dynamo_cpp_guards_str"), dict) and cid and payload:
                where.read_guards(cid, payload)
            artifact = envelope.get("artifact")
            if isinstance(artifact, dict) and cid:
                if artifact.get("name") == "recompile_reasons":
                    reasons[cid] = _reason_text(payload) or ""
                elif artifact.get("name") == "dynamo_graph_break_reason":
                    _count(breaks, cid, attempt)
                    found = where.graph_break(payload or "")
                    if found is not None:
                        result.extras.setdefault(cid, {}).setdefault(
                            "graph_breaks", []).append(found)
            metrics = envelope.get("compilation_metrics")
            if isinstance(metrics, dict):
                cid = metrics.get("compile_id")
                raw = reasons.get(cid) if cid else None
                # a trace written with recompiles_verbose on (watch turns it on) holds each
                # entry's failing parts joined by "; ": reason keeps the first per entry
                every = [f"{line.partition(': ')[0]}: {part}" for line in failure_lines(raw)
                         for part in split_parts(line.partition(": ")[2])] if raw else []
                firsts: dict[str, str] = {}
                for line in every:
                    firsts.setdefault(line.split(":", 1)[0], line)
                reason = "\n".join(firsts.values()) or raw if raw else None
                event = builder.build(
                    metrics, reason=reason,
                    graphs=graphs.get(cid, (0, 0))[1] if cid else None,
                    graph_breaks=breaks.get(cid, (0, 0))[1] if cid else None)
                if event.recompile and event.reason:
                    event = replace(event, reason_origins=where.reason_origins(event.reason),
                                    failures=tuple(every) or event.failures)
                result.events.append(event)
    result.skipped_lines = skipped[0]
    return result


def _specialization(result: TraceRead, where: _TraceOrigins, cid: str, spec: dict) -> None:
    """A symbolic_shape_specialization record: once per (sources, value, user line)."""
    sources = spec.get("sources") or []
    try:
        value: Any = int(spec.get("value"))
    except (TypeError, ValueError):
        value = spec.get("value")
    origin = where.from_stack(spec.get("user_stack"), "specialized")
    item = {"source": sources[0] if sources else None, "value": value,
            "reason": spec.get("reason"), "origin": origin, "sources": list(sources)}
    found = result.extras.setdefault(cid, {}).setdefault("specializations", [])
    if item not in found:  # Dynamo logs it again when it retraces the same frame
        found.append(item)


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
        for f in analysis.by_function(r.events, extras=r.extras):
            functions.append(f if label is None else replace(f, function=f"{f.function} [{label}]"))
    if pattern:
        functions = [f for f in functions if matches(f, pattern)]
    return WatchReport(Tool("recompile-probe", __version__), environment(),
                       ", ".join(str(f) for f in files), tuple(functions),
                       tuple(e for r in reads for e in r.events),
                       skipped_lines=sum(r.skipped_lines for r in reads), kind="summarize")
