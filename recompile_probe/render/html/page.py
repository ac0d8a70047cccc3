"""The page every HTML report is: inline CSS, no network, no script; every piece of text
escaped (function names, reasons and paths come from user code). No torch."""

from __future__ import annotations

from collections.abc import Iterable
from html import escape
from typing import Any

from ...records.report import Environment, Tool
from .. import cells

NUMERIC = ' class="n"'

CSS = """
:root{--fg:#1f2328;--muted:#59636e;--line:#d1d9e0;--alt:#f6f8fa;--win:#1a7f37;--bad:#cf222e;
--warn:#9a6700;--compile:#0969da;--recompile:#cf222e;--failed:#bf8700;--hit:#1a7f37;
--eager:#bf8700;--error:#8250df}
*{box-sizing:border-box}
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,sans-serif;
color:var(--fg);background:#fff;margin:0 auto;padding:16px 20px 40px;max-width:1500px}
h1{font-size:21px;margin:4px 0 2px}h2{font-size:17px;margin:28px 0 8px;padding-bottom:3px;
border-bottom:1px solid var(--line)}h3{font-size:14px;margin:18px 0 6px}
.meta,.muted{color:var(--muted)}
code,pre,.mono{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,"Liberation Mono",monospace;
font-size:12px}
pre{white-space:pre-wrap;overflow-wrap:anywhere;margin:0}
table{border-collapse:collapse;margin:6px 0}
th,td{padding:3px 9px;border-bottom:1px solid var(--line);vertical-align:top;text-align:left}
th{background:var(--alt);font-weight:600;white-space:nowrap}
td.n{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
tr.winner td{font-weight:700;color:var(--win)}tr.unsupported td{color:var(--muted)}
table.reasons td.mono{white-space:nowrap}
td.recompiles,td.bad,.bad{color:var(--bad);font-weight:600}
td.warn{color:var(--warn);font-weight:600}
td.good{color:var(--win);font-weight:600}
.scroll{overflow-x:auto;max-width:100%}
.kind{display:inline-block;padding:0 7px;border-radius:9px;background:#ddf4ff;color:#0550ae;
font:12px ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;white-space:nowrap}
.verdict{margin:12px 0;padding:8px 12px;border-left:4px solid var(--win);background:#f0fff4}
.note{margin:8px 0;padding:6px 12px;border-left:4px solid var(--warn);background:#fff8c5}
.totals{margin:8px 0;padding:6px 12px;border-left:4px solid var(--line);background:var(--alt);
font-weight:600}
.alert{margin:8px 0;padding:6px 12px;border-left:4px solid var(--bad);background:#ffebe9}
details{margin:6px 0}summary{cursor:pointer;font-weight:600}
.legend{display:flex;flex-wrap:wrap;gap:4px 16px;align-items:center;margin:4px 0}
.legend span{display:inline-flex;align-items:center;gap:4px}
svg.timeline text{font:11px ui-monospace,SFMono-Regular,Menlo,Consolas,"Liberation Mono",monospace;
fill:var(--fg)}
svg.timeline text.name{font-size:12px}svg.timeline text.axis{fill:var(--muted)}
svg .band{fill:var(--alt)}svg .rule{stroke:var(--line)}
dl.env{display:grid;grid-template-columns:max-content 1fr;gap:2px 14px;margin:6px 0}
dl.env dt{color:var(--muted)}dl.env dd{margin:0}
ul{margin:4px 0;padding-left:22px}
"""


def esc(value: Any) -> str:
    return escape(str(value), quote=True)


def html_page(title: str, body: Iterable[str]) -> str:
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>{esc(title)}</title>\n<style>{CSS}</style>\n</head>\n<body>\n"
        + "\n".join(body)
        + "\n</body>\n</html>\n"
    )


def pre_block(lines: Iterable[str], cls: str = "") -> str:
    attr = f' class="{cls}"' if cls else ""
    return f"<pre{attr}>" + esc("\n".join(lines)) + "</pre>"


def html_table(headers: Iterable[tuple[str, str]], rows: Iterable[str], cls: str = "") -> str:
    """``headers``: (text, tooltip); ``rows``: ready <tr> elements."""
    head = "".join(
        f'<th title="{esc(tip)}">{esc(h)}</th>' if tip else f"<th>{esc(h)}</th>"
        for h, tip in headers
    )
    attr = f' class="{cls}"' if cls else ""
    return (
        f'<div class="scroll"><table{attr}><thead><tr>{head}</tr></thead><tbody>'
        + "".join(rows)
        + "</tbody></table></div>"
    )


def env_section(tool: Tool, env: Environment, extra: Iterable[tuple[str, Any]] = ()) -> str:
    items = [
        ("recompile-probe", tool.version),
        ("torch", env.torch or cells.NA),
        ("python", env.python),
        ("platform", env.platform),
        *(
            (name, ", ".join(f"{k}={v}" for k, v in settings.items()))
            for name, settings in (
                ("inherited compile settings", env.compile_settings),
                ("kept out by --clean-env", env.cleared_settings),
            )
            if settings
        ),
        *extra,
    ]
    return (
        '<h2>Environment</h2><dl class="env">'
        + "".join(f"<dt>{esc(k)}</dt><dd>{esc(v)}</dd>" for k, v in items)
        + "</dl>"
    )
