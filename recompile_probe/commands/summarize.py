"""`summarize`: TORCH_TRACE logs (any run's, any machine's) as watch's per-function report. No
torch."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from ..analysis.functions import by_function, matches
from ..errors import UsageError
from ..recording.trace import read
from ..records.environment import current
from ..records.report import Tool
from ..records.watch import WatchReport
from ..version import __version__


def trace_files(target: Path) -> list[Path]:
    if target.is_dir():
        files = sorted(p for p in target.rglob("*") if p.is_file() and p.suffix in (".log", ""))
        if not files:
            raise UsageError(
                f"{target}: no trace files in this directory",
                "Point at a TORCH_TRACE directory or at one of its .log files.",
            )
        return files
    if not target.exists():
        raise UsageError(f"{target}: no such file or directory")
    return [target]


def summarize(target: Path, pattern: str | None = None) -> WatchReport:
    """The per-function report of every trace file under target (one rank per file)."""
    files = trace_files(target)
    reads = [read(f) for f in files]
    functions = []
    for r in reads:
        label = Path(r.path).name if len(reads) > 1 else None
        for f in by_function(r.events, extras=r.extras):
            functions.append(f if label is None else replace(f, function=f"{f.function} [{label}]"))
    if pattern:
        functions = [f for f in functions if matches(f, pattern)]
    return WatchReport(
        Tool("recompile-probe", __version__),
        current(),
        ", ".join(str(f) for f in files),
        tuple(functions),
        tuple(e for r in reads for e in r.events),
        skipped_lines=sum(r.skipped_lines for r in reads),
        kind="summarize",
    )
