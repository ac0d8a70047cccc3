"""`summarize`: TORCH_TRACE logs (any run's, any machine's) as watch's per-function report. No
torch."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

from ..analysis.functions import by_function, matches
from ..analysis.ranks import divergences
from ..errors import UsageError
from ..recording.trace import TraceRead, read
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
    per_read = []
    for r in reads:
        label = Path(r.path).name if len(reads) > 1 else None
        own = []
        for f in by_function(r.events, extras=r.extras):
            shown = f if label is None else replace(f, function=f"{f.function} [{label}]")
            if not pattern or matches(shown, pattern):
                own.append(f)
                functions.append(shown)
        per_read.append(own)
    ranks = _ranks(reads, per_read)
    return WatchReport(
        Tool("recompile-probe", __version__),
        current(),
        ", ".join(str(f) for f in files),
        tuple(functions),
        tuple(e for r in reads for e in r.events),
        skipped_lines=sum(r.skipped_lines for r in reads),
        kind="summarize",
        rank_divergence=(
            divergences(
                {r: fs for r, (_, fs) in ranks.items()},
                {r: read_.events for r, (read_, _) in ranks.items()},
            )
            if len(ranks) > 1
            else None
        ),
        ranks_compared=tuple(sorted(ranks)) if len(ranks) > 1 else (),
    )


_RANK_FILE = re.compile(r"rank_(\d+)")


def rank_of_trace(r: TraceRead) -> int | None:
    """The rank a trace file is from: its records' ``rank``, else its name
    (``dedicated_log_torch_trace_rank_1_*.log``, as TORCH_TRACE names them under torchrun)."""
    if r.rank is not None:
        return r.rank
    match = _RANK_FILE.search(Path(r.path).name)
    return int(match.group(1)) if match else None


def _ranks(reads: list[TraceRead], functions: list[list]) -> dict[int, tuple[TraceRead, list]]:
    """Per rank, its trace and functions; a rank with several files (a restarted job) is
    represented by the one that compiled most."""
    out: dict[int, tuple[TraceRead, list]] = {}
    for r, fs in zip(reads, functions):
        rank = rank_of_trace(r)
        if rank is not None and (rank not in out or len(r.events) > len(out[rank][0].events)):
            out[rank] = (r, fs)
    return out
