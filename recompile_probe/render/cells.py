"""How figures read in human formats, shared by the table and Markdown renderers."""

from __future__ import annotations

from ..model import Run

NA = "n/a"
GLYPHS = {"compile": "●", "recompile": "▲", "hit": "·", "error": "✗", "eager": "○"}
LEGEND = "● compile  ▲ recompile  · cache hit  ○ ran eagerly  ✗ error"

#: (header, help) of the summary columns, in order
COLUMNS = (
    ("strategy", ""),
    ("compiles", "Dynamo compilations (metrics records), failed ones included"),
    ("recompiles", "compiles of a frame that already had a cache entry"),
    ("graphs", "graphs handed to the backend (CompileCounter)"),
    ("guards", "guard_count of the newest cache entry (compilation metrics)"),
    ("shape\nguards", "shape_env_guard_count of the newest cache entry"),
    ("compile\nms", "sum of dynamo_cumulative_compile_time_us"),
    ("µs/call", "median wall time of the last call repeated after the sequence"),
    ("guard\nµs", "warm guard_manager.check of the entry that served the last call"),
    ("outputs", "equal to eager (assert_close; integers exact)"),
    ("status", ""),
)


def num(value: object, fmt: str = "{}") -> str:
    return NA if value is None else fmt.format(value)


def outputs(run: Run) -> str:
    if run.status == "unsupported":
        return "-"
    return {True: "match", False: "DIFFER", None: NA}[run.outputs_match]


def row(run: Run) -> list[str]:
    return [
        run.strategy,
        num(run.compiles),
        num(run.recompiles),
        num(run.graphs),
        num(run.guard_count),
        num(run.shape_env_guard_count),
        num(run.compile_time_ms, "{:.1f}"),
        num(run.steady_state_us, "{:.1f}"),
        num(run.guard_check_us, "{:.1f}"),
        outputs(run),
        run.status,
    ]


def timeline(run: Run) -> str:
    return " ".join(GLYPHS.get(c.event, "?") for c in run.calls)


def reason(text: str | None) -> str:
    """Reason lines without Dynamo's trailing source comments (the JSON keeps the raw text)."""
    if not text:
        return NA
    return "\n".join(line.split("  #", 1)[0].rstrip() for line in text.splitlines())


def header(name: str) -> str:
    return name.replace("\n", " ")


def error_line(run: Run) -> str | None:
    if run.error is None:
        return None
    where = f" at call {run.error.call_index}" if run.error.call_index is not None else ""
    return f"{run.strategy}: {run.error.type}{where}: {run.error.message}"
