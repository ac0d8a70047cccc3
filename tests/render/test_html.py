"""The HTML page at DOM level, without a browser: self-contained, escaped, one mark per call,
readable at 10 strategies x 50 calls and 100 watched functions. test_html_browser.py opens real
pages in Chromium."""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from html.parser import HTMLParser

from helpers import TESTS, render_report, sample_function, sample_report
from recompile_probe.analysis.diffs import diffs
from recompile_probe.analysis.explain import Explained, Explanation
from recompile_probe.records.report import (
    Environment,
    Report,
    ScenarioRef,
    Tool,
    from_json,
    reports_to_json,
)
from recompile_probe.records.run import CacheEntry, Call, CompileEvent, GuardLine, Run
from recompile_probe.records.watch import WatchReport
from recompile_probe.render.formats import Document, Layout, render
from recompile_probe.render.html import functions as html_functions
from recompile_probe.render.html import timeline as html_timeline

VOID = {"meta", "br", "img", "input", "link", "hr", "col", "wbr", "source", "area", "base"}


@dataclass
class Node:
    tag: str
    attrs: dict
    parent: Node | None = None
    children: list = field(default_factory=list)  # Node or str

    def text(self) -> str:
        return "".join(c if isinstance(c, str) else c.text() for c in self.children)

    def classes(self) -> set[str]:
        return set((self.attrs.get("class") or "").split())

    def find(self, tag: str | None = None, cls: str | None = None) -> list[Node]:
        out = []
        for c in self.children:
            if isinstance(c, Node):
                if (tag is None or c.tag == tag) and (cls is None or cls in c.classes()):
                    out.append(c)
                out += c.find(tag, cls)
        return out

    def folded(self) -> bool:
        """Inside a closed <details> (not its <summary>): hidden until someone opens it."""
        node, child = self.parent, self
        while node is not None:
            if node.tag == "details" and "open" not in node.attrs and child.tag != "summary":
                return True
            node, child = node.parent, node
        return False


class Tree(HTMLParser):
    def __init__(self, text: str):
        super().__init__(convert_charrefs=True)
        self.root = self.node = Node("#root", {})
        self.feed(text)
        self.close()

    def handle_starttag(self, tag, attrs):
        node = Node(tag, dict(attrs), self.node)
        self.node.children.append(node)
        if tag not in VOID:
            self.node = node

    def handle_startendtag(self, tag, attrs):
        self.node.children.append(Node(tag, dict(attrs), self.node))

    def handle_endtag(self, tag):
        node = self.node
        while node is not None and node.tag != tag:
            node = node.parent
        assert node is not None, f"</{tag}> closes nothing"
        self.node = node.parent

    def handle_data(self, data):
        self.node.children.append(data)


def dom(text: str) -> Node:
    tree = Tree(text)
    assert tree.node is tree.root, f"unclosed <{tree.node.tag}>"
    return tree.root


def self_contained(text: str) -> None:
    """Nothing a browser would fetch, and nothing to run."""
    assert not re.search(r"https?://", text)
    assert "<script" not in text.lower() and "<link" not in text.lower()
    assert not re.search(r"\s(src|href)=", text)
    assert "@import" not in text and "url(" not in text


# --- reports to render ----------------------------------------------------------------------------

EVENTS = ("compile", "recompile", "hit", "eager", "error")


def synthetic(strategies: int = 10, calls: int = 50, symbols: tuple[str, ...] = ("B",)) -> Report:
    """``strategies`` runs of ``calls`` calls each, every event kind among them, a recompile
    (with a reason) every 7th call."""
    points = tuple({s: (k % 9) * (j + 1) + 1 for j, s in enumerate(symbols)} for k in range(calls))
    sequence = tuple(p[symbols[0]] for p in points)
    runs = []
    for i in range(strategies):
        out, events = [], []
        for k in range(calls):
            event = "compile" if k == 0 else ("recompile" if k % 7 == 0 else "hit")
            if i == 1 and k == calls - 1:
                event = "eager"
            failed = 1 if (i == 2 and k == 14) else 0
            out.append(
                Call(
                    k,
                    sequence[k],
                    event,
                    10.0,
                    True,
                    0 if failed else (1 if event in ("compile", "recompile") else 0),
                    failed,
                    dict(points[k]),
                    k,
                    0,
                )
            )
            if event in ("compile", "recompile"):
                events.append(
                    CompileEvent(
                        compile_id=f"0/{len(events)}",
                        function="f",
                        call_index=k,
                        reason=None
                        if k == 0
                        else f"0/{len(events) - 1}: tensor 'x' size mismatch at "
                        f"index 0. expected {sequence[k - 1]}, actual {sequence[k]}",
                        guard_count=9,
                        shape_env_guard_count=1,
                        graph_op_count=3,
                        compile_time_ms=5.0,
                        failed=bool(failed),
                        recompile=k > 0,
                        reason_kind=None if k == 0 else "static_size_change",
                    )
                )
        recompiles = sum(c.event == "recompile" for c in out)
        runs.append(
            Run(
                target="t.py:f",
                sequence_name="grid",
                sequence=sequence,
                strategy=f"strategy_{i}",
                backend="eager",
                status="ok",
                error=None,
                graphs=recompiles + 1,
                compiles=recompiles + 1,
                recompiles=recompiles,
                cache_entries=recompiles + 1,
                guard_count=9,
                shape_env_guard_count=1,
                leaf_guard_count=10,
                compile_time_ms=5.0 * (recompiles + 1),
                outputs_match=True,
                calls=tuple(out),
                compile_events=tuple(events),
                steady_state_us=20.0 + i,
                points=points,
            )
        )
    return Report(
        Tool("recompile-probe", "0.1.0"),
        Environment("2.13.0", "3.11.7", "Linux"),
        ScenarioRef("grid", "grid.yaml"),
        tuple(runs),
    )


HOSTILE = "<script>alert('x')</script> & \"quoted\" </td></table>"


def hostile() -> Report:
    """User text everywhere it can come from: scenario, strategy, target, reason, notes."""
    report = sample_report()
    run = report.runs[0]
    event = replace(run.compile_events[0], reason=f"0/0: {HOSTILE}", reason_kind="other")
    entry = CacheEntry(
        "f",
        HOSTILE,
        1,
        "0/0",
        0,
        1,
        9,
        1,
        1,
        (GuardLine("TENSOR_MATCH", "L['x']", f"check({HOSTILE}, 1)"),),
    )
    newer = replace(
        entry,
        compile_id="0/1",
        call_index=1,
        guards=(GuardLine("TENSOR_MATCH", "L['x']", "check(2)"),),
    )
    run = replace(
        run,
        strategy=HOSTILE,
        target=HOSTILE,
        compile_events=(event,),
        notes=(HOSTILE,),
        entries=(entry, newer),
    )
    return replace(report, scenario=ScenarioRef(HOSTILE, HOSTILE), runs=(run, report.runs[1]))


# --- tests ----------------------------------------------------------------------------------------


def test_html_is_a_format_of_render():
    text = render_report(sample_report(), "html")
    assert text.startswith("<!DOCTYPE html>")
    self_contained(text)
    dom(text)


def test_user_text_is_escaped_everywhere():
    text = render_report(hostile(), "html")
    self_contained(text)
    root = dom(text)
    assert root.find("script") == [] and "<script>alert" not in text
    # the page still says what the user wrote, as text
    assert HOSTILE in root.find("title")[0].text()
    rows = root.find("tr")
    assert any(HOSTILE in r.text() for r in rows if r.attrs.get("data-strategy") == HOSTILE)
    assert sum(HOSTILE in n.text() for n in root.find("li")) >= 1  # the note
    assert any(HOSTILE in p.text() for p in root.find("pre"))  # the reason and the guard diff
    marks = root.find("g", "mark")
    assert marks and all(HOSTILE in m.find("title")[0].text() for m in marks[:2])


def test_table_shows_the_report_figures_and_the_verdict():
    """The page against what the hand-built report holds (helpers.sample_report): its two runs'
    figures, the winner, the verdict in words, n/a for what the failed run could not give."""
    root = dom(render_report(sample_report(), "html"))
    table = root.find("table", "summary")[0]
    headers = [th.text() for th in table.find("th")]
    assert headers == [
        "strategy",
        "compiles",
        "recompiles",
        "graphs",
        "guards",
        "shape guards",
        "compile ms",
        "µs/call",
        "guard µs",
        "outputs",
        "status",
    ]
    rows = {
        r.attrs.get("data-strategy"): [td.text() for td in r.find("td")]
        for r in table.find("tr")
        if r.attrs.get("data-strategy")
    }
    assert rows["default"] == [
        "★ default",
        "2",
        "1",
        "2",
        "9",
        "1",
        "20.0",
        "n/a",
        "n/a",
        "match",
        "ok",
    ]
    assert rows["mark_unbacked"] == [
        "mark_unbacked",
        "1",
        "0",
        "0",
        "n/a",
        "n/a",
        "3.0",
        "n/a",
        "n/a",
        "n/a",
        "error",
    ]
    assert (
        "winner"
        in next(r for r in table.find("tr") if r.attrs.get("data-strategy") == "default").classes()
    )
    assert root.find("p", "verdict")[0].text() == (
        "Verdict: rl [1, 2]: default wins with 2 compiles (9 guards, 1 shape guard); recompile: "
        "default (first at call 1, B 1 → 2); error: mark_unbacked."
    )
    assert "GuardOnDataDependentSymNode" in root.text()  # the failed run says why


def _built_kind(run: Run, k: int, calls: int) -> str:
    i = int(run.strategy.rsplit("_", 1)[1])
    if k == 0:
        return "compile"
    if i == 2 and k == 14:
        return "failed"  # a recompile whose compile failed: no graph
    if i == 1 and k == calls - 1:
        return "eager"
    return "recompile" if k % 7 == 0 else "hit"


def test_one_mark_per_call_with_its_kind():
    report = synthetic(3, 15)
    root = dom(render_report(report, "html"))
    for run in report.runs:
        group = next(g for g in root.find("g", "run") if g.attrs["data-strategy"] == run.strategy)
        marks = group.find("g", "mark")
        assert [m.attrs["data-call"] for m in marks] == [str(c.index) for c in run.calls]
        assert [m.attrs["data-event"] for m in marks] == [c.event for c in run.calls]
        # the kind of each call as synthetic() built it: a failed attempt is its own mark
        kinds = ("compile", "recompile", "failed", "hit", "eager", "error")
        drawn = [next(k for k in kinds if k in m.classes()) for m in marks]
        assert drawn == [_built_kind(run, c.index, len(run.calls)) for c in run.calls]
    assert any("failed" in m.classes() for m in root.find("g", "mark"))


def test_ten_strategies_by_fifty_calls_stay_readable():
    report = synthetic(10, 50)
    text = render_report(report, "html")
    self_contained(text)
    root = dom(text)
    assert len(root.find("g", "mark")) == sum(len(r.calls) for r in report.runs) == 500
    assert len(text) < 400_000
    svg = root.find("svg", "timeline")[0]
    assert int(svg.attrs["width"]) <= 1600  # fits a laptop screen without zooming out
    assert int(svg.attrs["height"]) <= 10 * html_timeline.ROW + 60
    # 70 recompile reasons fold; the table and the timeline stay in the open
    reasons = root.find("details", "reasons")
    assert reasons and reasons[0].find("table") and "open" not in reasons[0].attrs
    assert not root.find("table", "summary")[0].folded() and not svg.folded()


def test_several_symbols_get_an_axis_each_under_the_marks():
    report = synthetic(2, 6, ("B", "S"))
    root = dom(render_report(report, "html"))
    svg = root.find("svg", "timeline")[0]
    axes = {
        g.attrs["data-symbol"]: [t.text() for t in g.find("text", "axis")]
        for g in svg.find("g", "axis")
    }
    # synthetic(): call k is at B = k % 9 + 1, S = 2 * (k % 9) + 1
    assert axes == {
        "B": [str(k % 9 + 1) for k in range(6)],
        "S": [str(2 * (k % 9) + 1) for k in range(6)],
    }
    # under the marks: every axis label is lower than every strategy's row
    lowest = max(float(g.find("text", "name")[0].attrs["y"]) for g in svg.find("g", "run"))
    assert all(float(t.attrs["y"]) > lowest for t in svg.find("text", "axis"))
    assert "B 1, S 1" in root.find("g", "mark")[0].find("title")[0].text()


def test_guard_diffs_and_reason_kinds_are_shown():
    report = hostile()
    root = dom(render_report(report, "html"))
    kinds = [s.text() for s in root.find("span", "kind")]
    assert kinds == ["other"]  # hostile(): one recompile, of kind other; the other run has none
    diffs = root.find("details", "diffs")
    assert len(diffs) == 1 and "1 guard diff" in diffs[0].find("summary")[0].text()
    assert f"TENSOR_MATCH check({HOSTILE}, 1) → check(2)" in diffs[0].text()


def test_incomplete_report_says_so():
    root = dom(render_report(replace(sample_report(), complete=False), "html"))
    assert "Interrupted" in root.find("p", "alert")[0].text()


def test_several_reports_on_one_page():
    a, b = sample_report(), replace(sample_report(), scenario=ScenarioRef("t", None))
    root = dom(render(Document.REPORTS, "html", [a, b]))
    assert len(root.find("article", "report")) == 2
    ids = [n.attrs["id"] for n in root.find("section", "sequence")]
    assert len(ids) == len(set(ids)) == 2


def test_explain_page():
    report = sample_report()
    run = report.runs[0]
    e0 = CacheEntry(
        "f",
        "f.py",
        1,
        "0/0",
        0,
        1,
        9,
        1,
        2,
        (GuardLine("TENSOR_MATCH", "L['x']", "check_tensor(L['x'], size=[1, 4], stride=[4, 1])"),),
    )
    e1 = replace(
        e0,
        compile_id="0/1",
        call_index=1,
        batch_size=2,
        guards=(
            GuardLine("TENSOR_MATCH", "L['x']", "check_tensor(L['x'], size=[2, 4], stride=[4, 1])"),
        ),
    )
    run = replace(run, entries=(e0, e1))
    report = replace(report, runs=(run,))
    explanations = [Explanation(run, tuple(diffs(run)), ())]
    text = render(
        Document.EXPLAIN, "html", Explained(report, tuple(explanations), ("rl: a note <b>",))
    )
    self_contained(text)
    root = dom(text)
    assert "size=[1, 4] → size=[2, 4]" in root.text()
    assert len(root.find("g", "mark")) == len(run.calls)
    assert "rl: a note <b>" in root.find("p", "note")[0].text()
    assert root.find("table", "costs")
    assert "Nothing to explain" in render(Document.EXPLAIN, "html", Explained(report, (), ()))


def test_watch_report_with_a_hundred_functions():
    functions = tuple(sample_function(i) for i in range(100))
    report = WatchReport(
        Tool("recompile-probe", "0.1.0"),
        Environment("2.13.0", "3.11.7", "Linux"),
        "python train.py --lr <1e-3>",
        functions,
        exit_code=0,
    )
    text = html_functions.functions(report, Layout())
    self_contained(text)
    root = dom(text)
    rows = [r for r in root.find("tr", "function")]
    assert len(rows) == 100
    shown = [r for r in rows if not r.folded()]
    assert len(shown) == html_functions.TOP_FUNCTIONS
    # most recompiles first, every function once
    names = [r.find("td")[0].text() for r in rows]
    assert sorted(names) == sorted(f.function for f in functions)
    counts = [int(r.find("td")[3].text()) for r in rows]
    assert counts == sorted(counts, reverse=True)
    assert counts[0] == max(f.recompiles for f in functions)
    assert "python train.py --lr <1e-3>" in root.find("h1")[0].text()
    open_reasons = [d for d in root.find("details", "function-reasons") if "open" in d.attrs]
    assert len(open_reasons) == html_functions.TOP_FUNCTIONS
    assert len(text) < 300_000


def test_watch_report_with_nothing_compiled():
    report = WatchReport(
        Tool("recompile-probe", "0.1.0"), Environment(None, "3.11.7", "Linux"), "python x.py", ()
    )
    root = dom(html_functions.functions(report, Layout()))
    assert "No torch.compile activity was recorded." in root.text()
    assert "n/a" in root.find("dl", "env")[0].text()  # torch not known


def test_saved_report_re_renders():
    """A report written before size symbols (tests/render/data) renders without torch."""

    data = TESTS / "render" / "data" / "batch_only_without_points.json"
    report = from_json(data.read_text())
    root = dom(render_report(report, "html"))
    assert len(root.find("g", "mark")) == sum(len(r.calls) for r in report.runs) > 0


def test_render_command_writes_html_without_torch(tmp_path):
    """`render REPORT.json --format html` with torch unimportable; a bundle is one page."""
    import subprocess
    import sys

    data = TESTS / "render" / "data" / "batch_only_without_points.json"
    report = from_json(data.read_text())
    bundle = tmp_path / "bundle.json"
    bundle.write_text(reports_to_json([report, sample_report()]))
    code = (
        "import sys; sys.modules['torch'] = None; from recompile_probe.cli import main; "
        "sys.argv = ['recompile-probe'] + sys.argv[1:]; main()"
    )
    for source, out in ((data, tmp_path / "one.html"), (bundle, tmp_path / "two.html")):
        done = subprocess.run(
            [sys.executable, "-c", code, "render", str(source), "--format", "html", "-o", str(out)],
            capture_output=True,
            text=True,
        )
        assert done.returncode == 0, done.stderr
        self_contained(out.read_text())
    one, two = dom((tmp_path / "one.html").read_text()), dom((tmp_path / "two.html").read_text())
    assert len(one.find("g", "mark")) == sum(len(r.calls) for r in report.runs)
    assert len(two.find("article", "report")) == 2
    assert len(two.find("g", "mark")) == sum(len(r.calls) for r in report.runs) + sum(
        len(r.calls) for r in sample_report().runs
    )


def test_check_html_shows_every_broken_budget(write_scenario, tmp_path):
    """`check --html`: a real run (eager) that breaks its budget; the page names the budget with
    the figure the JSON artefact holds."""
    import json
    import subprocess
    import sys

    path = write_scenario("""
        target: user_targets.py:double
        inputs: [{shape: [B, 4]}]
        sequences: {s: [1, 2, 3]}
        backend: eager
        repeats: 0
        strategies: [static]
        expect: {static: {max_recompiles: 0}}
    """)
    page, data = tmp_path / "check.html", tmp_path / "check.json"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "recompile_probe",
            "check",
            str(path),
            "--quiet",
            "--html",
            str(page),
            "--json",
            str(data),
        ],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 1, done.stderr
    run = json.loads(data.read_text())["runs"][0]
    assert run["recompiles"] > 0
    text = page.read_text()
    self_contained(text)
    root = dom(text)
    assert "recompile-probe check: failed" in root.find("h1")[0].text()
    (row,) = root.find("table", "violations")[0].find("tbody")[0].find("tr")
    cells_ = [td.text() for td in row.find("td")]
    assert cells_[:4] == ["static", "max_recompiles", "≤ 0", str(run["recompiles"])]
    assert len(root.find("g", "mark")) == len(run["calls"])
