"""The HTML report of a real run, opened in headless Chromium: what a person would see.

Chromium is driven over the DevTools protocol on a pipe (--remote-debugging-pipe: fds 3 and 4,
standard library only), so the checks read the page after load, as rendered: the table's text,
console errors and failed loads, the timeline's marks with their boxes, and a screenshot.
`.ci/run` installs Chromium; without it these tests skip locally and fail under CI.
"""

from __future__ import annotations

import base64
import json
import os
import select
import shutil
import struct
import subprocess
import sys
import time
import zlib
from pathlib import Path

import pytest

from helpers import FIXTURES
from recompile_probe.analysis.sequence import points_of
from recompile_probe.analysis.verdicts import verdict
from recompile_probe.records.report import Environment, Report, Tool
from recompile_probe.records.watch import WatchReport
from recompile_probe.render import cells
from recompile_probe.render.formats import Document, Layout, render
from recompile_probe.render.html import functions as html_functions

BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
WIDTH, HEIGHT = 1280, 1400


def browser_path() -> str:
    found = os.environ.get("CHROMIUM") or next(filter(None, map(shutil.which, BROWSERS)), None)
    if found:
        return found
    message = (
        "headless Chromium not found (looked for $CHROMIUM, "
        + ", ".join(BROWSERS)
        + "): install it, e.g. `apt-get install chromium`, to run the browser tests"
    )
    if os.environ.get("CI"):
        pytest.fail(message + "; CI is set, so this is a failure, not a skip", pytrace=False)
    pytest.skip(message)


class Browser:
    """One headless Chromium and one page, over the DevTools protocol on a pipe."""

    def __init__(self, exe: str, profile: Path):
        to_chrome, self._writer = os.pipe()
        self._reader, from_chrome = os.pipe()

        # Chromium reads commands on fd 3 and answers on fd 4. A small Python trampoline puts
        # the pipes there and execs it (no preexec_fn: the test process may run torch threads).
        trampoline = (
            "import os, sys; os.dup2(int(sys.argv[1]), 3); "
            "os.dup2(int(sys.argv[2]), 4); os.execv(sys.argv[3], sys.argv[3:])"
        )
        self._log = open(profile.parent / "chromium.log", "wb")
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-c",
                trampoline,
                str(to_chrome),
                str(from_chrome),
                exe,
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-dev-shm-usage",
                "--remote-debugging-pipe",
                f"--user-data-dir={profile}",
                "--no-first-run",
                "--no-default-browser-check",
                "--hide-scrollbars",
                "about:blank",
            ],
            stdin=subprocess.DEVNULL,
            stdout=self._log,
            stderr=self._log,
            pass_fds=(to_chrome, from_chrome),
        )
        os.close(to_chrome)
        os.close(from_chrome)
        self._buffer = b""
        self._next = 0
        self.messages: list[dict] = []
        target = self.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        self.session = self.send("Target.attachToTarget", {"targetId": target, "flatten": True})[
            "sessionId"
        ]
        for domain in ("Page", "Runtime", "Log"):
            self.page(f"{domain}.enable")
        self.page(
            "Emulation.setDeviceMetricsOverride",
            {"width": WIDTH, "height": HEIGHT, "deviceScaleFactor": 1, "mobile": False},
        )

    def _read(self, deadline: float) -> None:
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([self._reader], [], [], left)[0]:
            raise TimeoutError("Chromium did not answer in time")
        chunk = os.read(self._reader, 1 << 20)
        if not chunk:
            raise RuntimeError(
                "Chromium closed the pipe: "
                + (self._log.name and Path(self._log.name).read_text()[-2000:])
            )
        self._buffer += chunk
        *done, self._buffer = self._buffer.split(b"\0")
        self.messages += [json.loads(m) for m in done if m]

    def wait(self, match, timeout: float = 60.0) -> dict:
        deadline = time.monotonic() + timeout
        seen = 0
        while True:
            for m in self.messages[seen:]:
                if match(m):
                    return m
            seen = len(self.messages)
            self._read(deadline)

    def send(self, method: str, params: dict | None = None, session: str | None = None) -> dict:
        self._next += 1
        ident = self._next
        message = {"id": ident, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        os.write(self._writer, json.dumps(message).encode() + b"\0")
        answer = self.wait(lambda m: m.get("id") == ident)
        if "error" in answer:
            raise RuntimeError(f"{method}: {answer['error']}")
        return answer["result"]

    def page(self, method: str, params: dict | None = None) -> dict:
        return self.send(method, params, self.session)

    def open(self, path: Path) -> None:
        start = len(self.messages)
        self.page("Page.navigate", {"url": path.resolve().as_uri()})
        self.wait(
            lambda m: m.get("method") == "Page.loadEventFired" and self.messages.index(m) >= start
        )

    def evaluate(self, expression: str):
        result = self.page("Runtime.evaluate", {"expression": expression, "returnByValue": True})
        if "exceptionDetails" in result:
            raise RuntimeError(f"{expression}: {result['exceptionDetails']}")
        return result["result"].get("value")

    def errors(self) -> list[str]:
        """Console errors, uncaught exceptions and failed loads the page produced."""
        out = []
        for m in self.messages:
            method, params = m.get("method"), m.get("params", {})
            if method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
                out.append(
                    "console: "
                    + " ".join(
                        str(a.get("value", a.get("description"))) for a in params.get("args", ())
                    )
                )
            elif method == "Runtime.exceptionThrown":
                details = params["exceptionDetails"]
                out.append(
                    f"exception: {details.get('text', '')} "
                    f"{details.get('exception', {}).get('description', '')}"
                )
            elif method == "Log.entryAdded" and params["entry"].get("level") == "error":
                out.append(
                    f"{params['entry'].get('source')}: {params['entry'].get('text')} "
                    f"{params['entry'].get('url', '')}"
                )
        return out

    def screenshot(self) -> bytes:
        return base64.b64decode(self.page("Page.captureScreenshot", {"format": "png"})["data"])

    def close(self) -> None:
        try:
            self.send("Browser.close")
        except (RuntimeError, TimeoutError, OSError):
            pass
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        for fd in (self._reader, self._writer):
            os.close(fd)
        self._log.close()


def png_pixels(data: bytes) -> tuple[int, int, list[bytes]]:
    """(width, height, rows of RGBA or RGB bytes): a PNG decoded with zlib, filters undone."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, header = 8, b"", None
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos : pos + 8])
        body = data[pos + 8 : pos + 8 + length]
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    width, height, depth, colour, _, _, interlace = header
    assert depth == 8 and colour in (2, 6) and interlace == 0, header
    bpp = 4 if colour == 6 else 3
    raw, stride, rows, prev = zlib.decompress(idat), width * bpp, [], bytearray(width * bpp)
    for y in range(height):
        start = y * (stride + 1)
        kind, line = raw[start], bytearray(raw[start + 1 : start + 1 + stride])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b, c = prev[i], prev[i - bpp] if i >= bpp else 0
            if kind == 1:
                line[i] = (line[i] + a) & 255
            elif kind == 2:
                line[i] = (line[i] + b) & 255
            elif kind == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif kind == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(bytes(line))
        prev = line
    return width, height, rows


def colours(data: bytes) -> tuple[int, int, set[bytes], float]:
    """(width, height, distinct RGB colours, share of pixels that are not the background)."""
    width, height, rows = png_pixels(data)
    bpp = len(rows[0]) // width
    pixels = [r[i : i + 3] for r in rows for i in range(0, len(r), bpp)]
    background = max(set(pixels[:width]), key=pixels[:width].count)
    return width, height, set(pixels), sum(p != background for p in pixels) / len(pixels)


# --- fixtures -------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def chromium(tmp_path_factory):
    exe = browser_path()
    profile = tmp_path_factory.mktemp("chromium") / "profile"
    browser = Browser(exe, profile)
    yield browser
    browser.close()


@pytest.fixture(scope="module")
def default_report() -> Report:
    """The default scenario (configs/logprobs.yaml, eager), a few strategies, run for real."""
    from recompile_probe.execution.session import run_scenario
    from recompile_probe.scenario.load import load
    from recompile_probe.scenario.overrides import with_overrides

    loaded = with_overrides(load(None), strategies=["default", "static", "mark_unbacked"])
    return run_scenario(loaded)


@pytest.fixture(scope="module")
def grid_scenario(tmp_path_factory) -> Path:
    """Two size symbols, B and S on a grid, an eager user target."""
    folder = tmp_path_factory.mktemp("symbols")
    fixtures = FIXTURES
    (folder / "user_targets.py").write_text((fixtures / "user_targets.py").read_text())
    (folder / "grid.yaml").write_text(
        "target: user_targets.py:scale_shift\n"
        "inputs:\n  - {shape: [B, S]}\n  - {shape: [B, S]}\n"
        "sequences: {grid: {grid: {B: [1, 2], S: [3, 5]}}}\n"
        "backend: eager\nrepeats: 3\nstrategies: [default, mark_unbacked]\n"
    )
    return folder / "grid.yaml"


@pytest.fixture(scope="module")
def symbols_report(grid_scenario) -> Report:
    """The points go on an axis per symbol."""
    from recompile_probe.execution.session import run_scenario
    from recompile_probe.scenario.load import load

    return run_scenario(load(grid_scenario))


def _opened(chromium: Browser, report_or_page, tmp_path: Path) -> Path:
    text = (
        report_or_page
        if isinstance(report_or_page, str)
        else render(Document.REPORTS, "html", [report_or_page])
    )
    path = tmp_path / "report.html"
    path.write_text(text, encoding="utf-8")
    chromium.messages.clear()
    chromium.open(path)
    return path


SUMMARY_ROWS = """[...document.querySelectorAll('table.summary tbody tr')].map(
    tr => [tr.dataset.strategy, [...tr.cells].map(td => td.innerText)])"""
HEADERS = "[...document.querySelectorAll('table.summary th')].map(th => th.innerText)"
MARKS = """[...document.querySelectorAll('svg.timeline g.mark')].map(g => {
    const r = g.getBoundingClientRect(), svg = g.closest('svg').getBoundingClientRect();
    return {strategy: g.closest('g.run').dataset.strategy, call: +g.dataset.call,
            event: g.dataset.event, w: r.width, h: r.height,
            inside: r.left >= svg.left && r.right <= svg.right && r.top >= svg.top &&
                    r.bottom <= svg.bottom}; })"""


# --- tests ----------------------------------------------------------------------------------------


def test_error_detection_is_real(chromium, tmp_path):
    """The "no console errors" check catches what it claims to: a page that logs an error,
    throws, and loads a missing file shows all three."""
    _opened(
        chromium,
        "<!DOCTYPE html><p>x</p><img src='missing.png'><script>"
        "console.error('boom'); throw new Error('thrown')</script>",
        tmp_path,
    )
    time.sleep(0.2)
    found = "\n".join(chromium.errors())
    assert "boom" in found and "thrown" in found and "missing.png" in found


def test_default_scenario_in_a_browser(chromium, default_report, tmp_path):
    _opened(chromium, default_report, tmp_path)
    assert chromium.errors() == []
    assert chromium.evaluate("performance.getEntriesByType('resource').length") == 0
    # the table as it reads on screen: the report's figures, row by row
    for name, _ in default_report.sequences():
        runs = default_report.runs_for(name)
        headers = chromium.evaluate(HEADERS)
        assert [h.replace("\n", " ") for h in headers[: len(cells.columns(runs))]] == [
            cells.header(h) for h, _ in cells.columns(runs)
        ]
    rows = chromium.evaluate(SUMMARY_ROWS)
    assert len(rows) == len(default_report.runs)
    for (strategy, values), run in zip(rows, default_report.runs):
        assert strategy == run.strategy
        assert values[0].lstrip("★ ") == run.strategy
        assert (values[1], values[2], values[3]) == (
            str(run.compiles),
            str(run.recompiles),
            str(run.graphs),
        )
    # one visible mark per call of the report, in the timeline's box
    marks = chromium.evaluate(MARKS)
    assert len(marks) == sum(len(r.calls) for r in default_report.runs)
    assert all(m["w"] > 0 and m["h"] > 0 and m["inside"] for m in marks)
    for run in default_report.runs:
        drawn = [m["event"] for m in marks if m["strategy"] == run.strategy]
        # both sequences' timelines, in report order
        assert drawn == [
            c.event for r in default_report.runs if r.strategy == run.strategy for c in r.calls
        ]
    text = chromium.evaluate("document.body.innerText")
    for name, _ in default_report.sequences():
        assert "Verdict: " + verdict(name, default_report.runs_for(name)) in text
    assert default_report.environment.torch in text
    # what a person sees: a screenshot with content in it
    png = chromium.screenshot()
    assert len(png) > 0
    width, height, seen, inked = colours(png)
    assert (width, height) == (WIDTH, HEIGHT)
    assert len(seen) > 20 and inked > 0.02, (len(seen), inked)


def test_several_symbols_in_a_browser(chromium, symbols_report, tmp_path):
    _opened(chromium, symbols_report, tmp_path)
    assert chromium.errors() == []
    marks = chromium.evaluate(MARKS)
    assert len(marks) == sum(len(r.calls) for r in symbols_report.runs) > 0
    assert all(m["w"] > 0 and m["inside"] for m in marks)
    axes = chromium.evaluate("""Object.fromEntries([...document.querySelectorAll('g.axis')].map(
        g => [g.dataset.symbol, [...g.querySelectorAll('text.axis')].map(t => t.textContent)]))""")
    points = points_of(list(symbols_report.runs))
    assert axes == {s: [str(p.get(s)) for p in points] for s in ("B", "S")}


def test_watch_page_folds_past_the_top_functions(chromium, tmp_path):
    from helpers import sample_function as _function

    report = WatchReport(
        Tool("recompile-probe", "0.1.0"),
        Environment("2.13.0", "3.11.7", "Linux"),
        "python train.py",
        tuple(_function(i) for i in range(100)),
        exit_code=0,
    )
    _opened(chromium, html_functions.functions(report, Layout()), tmp_path)
    assert chromium.errors() == []
    visible = chromium.evaluate("""[...document.querySelectorAll('tr.function')]
        .filter(tr => tr.checkVisibility()).length""")
    assert visible == html_functions.TOP_FUNCTIONS


CLI = [sys.executable, "-m", "recompile_probe"]


def test_explain_command_html_in_a_browser(chromium, grid_scenario, tmp_path):
    """`explain --format html` end to end: its timeline and guard diffs, and its JSON's count of
    recompiles as headings."""
    page, data = tmp_path / "explain.html", tmp_path / "explain.json"
    for fmt, out in (("html", page), ("json", data)):
        done = subprocess.run(
            [*CLI, "explain", str(grid_scenario), "--quiet", "-f", fmt, "-o", str(out)],
            capture_output=True,
            text=True,
        )
        assert done.returncode == 0, done.stderr
    saved = json.loads(data.read_text())
    explained = saved["explanations"]
    calls = {(r["sequence_name"], r["strategy"]): len(r["calls"]) for r in saved["report"]["runs"]}
    assert explained, "the grid recompiles under default: something to explain"
    _opened(chromium, page.read_text(), tmp_path)
    assert chromium.errors() == []
    marks = chromium.evaluate(MARKS)
    assert len(marks) == sum(calls[x["sequence_name"], x["strategy"]] for x in explained)
    headings = chromium.evaluate("[...document.querySelectorAll('h3')].map(h => h.innerText)")
    recompiles = sum(len(x["recompile_reasons"]) for x in explained)
    assert sum(h.startswith("Recompile at call") for h in headings) == recompiles > 0
    assert sum(h.startswith("Guard diff") for h in headings) == sum(
        len(x["diffs"]) for x in explained
    )


def test_summarize_command_html_in_a_browser(chromium, tmp_path):
    """`summarize TRACE --format html` of a real program's TORCH_TRACE: one row per function
    with the figures its JSON has."""
    program = FIXTURES / "known_compiles.py"
    trace = tmp_path / "trace"
    subprocess.run(
        [sys.executable, str(program)],
        env={**os.environ, "TORCH_TRACE": str(trace)},
        check=True,
        capture_output=True,
    )
    page = tmp_path / "summary.html"
    done = subprocess.run(
        [*CLI, "summarize", str(trace), "-f", "html", "-o", str(page)],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    data = json.loads(
        subprocess.run(
            [*CLI, "summarize", str(trace), "-f", "json"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    )
    _opened(chromium, page.read_text(), tmp_path)
    assert chromium.errors() == []
    rows = chromium.evaluate("""[...document.querySelectorAll('tr.function')].map(
        tr => [...tr.cells].map(td => td.innerText))""")
    assert {r[0]: (int(r[2]), int(r[3])) for r in rows} == {
        f["function"]: (f["compiles"], f["recompiles"]) for f in data["functions"]
    }
