"""pytest plugin (entry point ``pytest11``): a recorder fixture, budget markers, a JSON report.

    @pytest.mark.max_recompiles(0)
    def test_sampler_compiles_once():
        for b in (1, 2, 8):
            sampler(*make_inputs(b))

Markers: ``max_recompiles(n)``, ``max_compiles(n)``; ``reset=True`` on either calls
torch._dynamo.reset() first, so earlier tests cannot have warmed the cache.
``fail_on_rank_divergence``: a distributed test fails when the ranks it starts (spawned, or a
torchrun subprocess: every Python process started during the test records, as under watch)
compile some function differently; the comparison goes to --recompile-report and the JUnit
properties. The fixture
``recompile_recorder`` yields the live Recording. ``--recompile-report FILE`` writes each test's
figures as JSON. Loading the plugin imports no torch.

Scenario files as test items: ``--recompile-scenarios DIR_OR_FILE...`` and every file matching
the ini option ``recompile_scenarios`` (default ``recompile_*.yaml recompile_*.yml``) under the
rootdir give one item per scenario x sequence x strategy. An item runs exactly what ``check
--shard`` runs for that one run and judges it with the same budgets (check.judge): it fails with
check's violation table when a budget breaks, is skipped when the strategy is unsupported in this
torch and no budget says otherwise, and passes otherwise. Items are independent (every run resets
Dynamo and computes its own eager reference), so pytest-xdist may spread them anywhere.
"""

from __future__ import annotations

import contextlib
import dataclasses
import fnmatch
import json
from collections.abc import Generator, Iterator
from pathlib import Path
from typing import Any

import pytest

MARKERS = {"max_recompiles": "recompiles", "max_compiles": "compiles"}
RANKS_MARKER = "fail_on_rank_divergence"
SCENARIO_PATTERNS = ["recompile_*.yaml", "recompile_*.yml"]
SCENARIO_SUFFIXES = (".yaml", ".yml")


@dataclasses.dataclass
class _State:
    """The plugin's state for one session (a controller's or an xdist worker's)."""

    #: (the test's place in the collection, its figures) for --recompile-report
    results: list[tuple[int, dict]] = dataclasses.field(default_factory=list)
    #: custom strategies registered as markers, so --strict-markers accepts them
    markers: set[str] = dataclasses.field(default_factory=set)
    #: nodeid -> place in the final collection: xdist workers finish in any order and the
    #: report keeps the collection's
    order: dict[str, int] = dataclasses.field(default_factory=dict)


STATE = pytest.StashKey[_State]()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("recompile-probe")
    group.addoption(
        "--recompile-report",
        metavar="FILE",
        default=None,
        help="write each test's torch.compile figures (compiles, recompiles, "
        "graphs, reasons per function) to FILE as JSON",
    )
    group.addoption(
        "--recompile-scenarios",
        nargs="+",
        action="extend",
        default=[],
        metavar="DIR_OR_FILE",
        help="collect these scenario files (or every *.yaml/*.yml below these "
        "directories) as tests: one per scenario x sequence x strategy",
    )
    parser.addini(
        "recompile_scenarios",
        type="args",
        default=SCENARIO_PATTERNS,
        help="file name patterns of scenario files collected as tests under the "
        "rootdir (default: recompile_*.yaml recompile_*.yml; empty: none)",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "max_recompiles(n, reset=False): fail the test when "
        "torch.compile recompiles more than n times during it",
    )
    config.addinivalue_line(
        "markers",
        "max_compiles(n, reset=False): fail the test when "
        "Dynamo compiles more than n times during it",
    )
    config.addinivalue_line(
        "markers",
        "recompile_probe: a scenario run collected from a "
        "scenario file (select with -m recompile_probe)",
    )
    config.addinivalue_line(
        "markers",
        f"{RANKS_MARKER}: fail the test when the ranks it starts (torch.multiprocessing.spawn, "
        "a torchrun subprocess) compile some function differently",
    )
    config.stash[STATE] = _State()
    # Explicit scenario paths become collection arguments unless one already covers them (pytest
    # walks only its arguments); xdist workers re-read the same command line and do the same.
    for raw in config.getoption("recompile_scenarios") or ():
        path = Path(raw).resolve()
        if not path.exists():
            raise pytest.UsageError(f"--recompile-scenarios: {raw}: no such file or directory")
        covered = [Path(a.split("::")[0]).resolve() for a in config.args]
        if not any(path == c or c in path.parents for c in covered):
            config.args.append(str(path))


@pytest.fixture
def recompile_recorder() -> Iterator[Any]:
    """The recorder, live for the test body: ``recompile_recorder.recompiles``, ``.explain()``."""
    from .recording.record import record

    with record() as recording:
        yield recording


def _limits(item: pytest.Item) -> tuple[dict[str, int], bool]:
    limits, reset = {}, False
    for name in MARKERS:
        marker = item.get_closest_marker(name)
        if marker is None:
            continue
        if len(marker.args) != 1 or not isinstance(marker.args[0], int) or marker.args[0] < 0:
            raise pytest.UsageError(
                f"{item.nodeid}: @pytest.mark.{name} takes one "
                f"non-negative integer, e.g. @pytest.mark.{name}(0)"
            )
        limits[name] = marker.args[0]
        reset = reset or bool(marker.kwargs.get("reset", False))
    return limits, reset


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:  # a malformed marker stops the session before anything runs
        _limits(item)


def pytest_collection_finish(session: pytest.Session) -> None:
    # after every plugin's reordering and deselection: the order the report keeps
    session.config.stash[STATE].order = {item.nodeid: i for i, item in enumerate(session.items)}


# Old-style hookwrapper: it works with every pluggy that pytest 7 and 8 bring, so installing
# recompile-probe can never break a user's test session.
@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, Any, None]:
    if isinstance(item, ScenarioItem):  # a probe run: it keeps its own figures
        yield
        return
    limits, reset = _limits(item)
    ranks = item.get_closest_marker(RANKS_MARKER) is not None
    if not limits and not ranks and item.config.getoption("recompile_report") is None:
        yield
        return
    from .recording.record import record

    if reset:
        import torch

        torch._dynamo.reset()
    with contextlib.ExitStack() as stack:
        watched = None
        if ranks:
            from .commands.watch import children_watched

            watched = stack.enter_context(children_watched(item.nodeid))
        with record() as recording:
            outcome = yield
    figures = {"nodeid": item.nodeid, **recording.to_dict()}
    diverged: list[str] = []
    if watched is not None and watched.report is not None:
        diverged = _rank_figures(item, watched.report, figures)
    _keep(item, figures)
    if outcome.excinfo is not None:
        return  # the test failed on its own: that failure is the one to show
    broken = [
        f"{name}({limit}): {getattr(recording, MARKERS[name])} {MARKERS[name]}"
        for name, limit in limits.items()
        if getattr(recording, MARKERS[name]) > limit
    ]
    message = ""
    if broken:
        message = "torch.compile budget exceeded: " + "; ".join(broken) + "\n" + recording.explain()
    if diverged:
        message += "\n".join(diverged) + "\n"
    if message:
        try:
            pytest.fail(message, pytrace=False)
        except pytest.fail.Exception as exc:
            if hasattr(outcome, "force_exception"):
                outcome.force_exception(exc)
            else:  # pluggy < 1.1
                raise


def _rank_figures(item: pytest.Item, report: Any, figures: dict) -> list[str]:
    """The ranks' comparison into the test's figures (--recompile-report) and its JUnit
    properties; the failure lines where they compiled differently."""
    from .render.lines import ranks as rank_lines

    divs = report.rank_divergence
    from .records import encode

    figures["rank_divergence"] = None if divs is None else [encode.data(d) for d in divs]
    figures["ranks_compared"] = list(report.ranks_compared)
    if divs is None:
        item.user_properties.append(("rank_divergence", "fewer than two ranks seen"))
        return []
    item.user_properties.append(("rank_divergence", json.dumps(figures["rank_divergence"])))
    if not divs:
        return []
    return [
        f"{RANKS_MARKER}: {rank_lines.heading(report)}",
        *(f"  {line}" for d in divs for line in rank_lines.parting(d)),
    ]


def _keep(item: pytest.Item, figures: dict) -> None:
    """Figures for --recompile-report, with the item's place in the collection: xdist workers
    finish in any order, the report keeps the collection's."""
    state = item.config.stash[STATE]
    state.results.append((state.order.get(item.nodeid, len(state.order)), figures))


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: Any) -> None:
    """xdist controller: a worker's figures arrive as it goes down."""
    output = getattr(node, "workeroutput", None) or {}
    if "recompile_results" in output:
        node.config.stash[STATE].results.extend(
            (order, figures) for order, figures in json.loads(output["recompile_results"])
        )


def pytest_sessionfinish(session: pytest.Session) -> None:
    path = session.config.getoption("recompile_report")
    if path is None:
        return
    results = session.config.stash[STATE].results
    if hasattr(session.config, "workeroutput"):  # an xdist worker: the controller writes
        session.config.workeroutput["recompile_results"] = json.dumps(results)
        return
    tests = [figures for _, figures in sorted(results, key=lambda pair: pair[0])]
    with open(path, "w", encoding="utf-8") as handle:
        json.dump({"schema_version": 1, "tests": tests}, handle, indent=2)
        handle.write("\n")


# --- scenario files as items ---------------------------------------------------------------------


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    if file_path.suffix not in SCENARIO_SUFFIXES:
        return None
    config = parent.config
    resolved = file_path.resolve()
    explicit = [Path(raw).resolve() for raw in config.getoption("recompile_scenarios") or ()]
    wanted = any(resolved == p or p in resolved.parents for p in explicit)
    if not wanted and config.rootpath.resolve() in resolved.parents:
        relative = resolved.relative_to(config.rootpath.resolve()).as_posix()
        wanted = any(
            fnmatch.fnmatch(relative if "/" in pattern else file_path.name, pattern)
            for pattern in config.getini("recompile_scenarios")
        )
    return ScenarioFile.from_parent(parent, path=file_path) if wanted else None


class ScenarioFile(pytest.File):
    """A scenario YAML: one item per sequence x strategy, in `check`'s report order."""

    def collect(self) -> Iterator[pytest.Item]:
        from .errors import ProbeError
        from .scenario.load import load  # no torch

        try:
            # Named as `check` run from here names it, so a budget's `source` (file:line) is the
            # same in an item's report as in check's
            scenario = load(_as_given(self.path))
        except ProbeError as exc:
            raise self.CollectError(str(exc)) from None
        registered = self.config.stash[STATE].markers
        for sequence in scenario.points:
            for strategy in scenario.strategies:
                if strategy not in registered:  # so --strict-markers accepts custom strategies
                    registered.add(strategy)
                    self.config.addinivalue_line(
                        "markers", f"{strategy}: scenario runs of the {strategy} strategy"
                    )
                item = ScenarioItem.from_parent(
                    self,
                    name=f"{scenario.name}[{sequence}-{strategy}]",
                    scenario=scenario,
                    sequence=sequence,
                    strategy=strategy,
                )
                item.add_marker("recompile_probe")
                item.add_marker(strategy)
                yield item


class ScenarioFailure(Exception):
    """A broken budget, or a scenario that could not run: the text is check's own output."""


class ScenarioItem(pytest.Item):
    """One (scenario, sequence, strategy) run, judged by the scenario's budgets."""

    def __init__(self, *, scenario: Any, sequence: str, strategy: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.scenario, self.sequence, self.strategy = scenario, sequence, strategy

    def runtest(self) -> None:
        from .commands import check as check_mod
        from .records import encode
        from .render.formats import Document, render

        key = (self.scenario.name, self.sequence, self.strategy)
        outcome = check_mod.run_check([self.scenario], runs={key})
        if outcome.interrupted:
            raise KeyboardInterrupt
        figures = {
            "nodeid": self.nodeid,
            "scenario": self.scenario.name,
            "path": self.scenario.path,
            "sequence": self.sequence,
            "strategy": self.strategy,
        }
        if outcome.failures:
            _keep(
                self,
                {
                    **figures,
                    "verdict": "failed",
                    "error": outcome.failures[0][1].message,
                    "run": None,
                },
            )
            raise ScenarioFailure(render(Document.CHECK, "table", outcome))
        (run,) = outcome.reports[0].runs
        verdict = (
            "failed" if run.violations else "skipped" if run.status == "unsupported" else "passed"
        )
        _keep(self, {**figures, "verdict": verdict, "run": encode.data(run)})
        if run.violations:
            raise ScenarioFailure(render(Document.CHECK, "table", outcome))
        if verdict == "skipped":
            why = f": {run.error.message}" if run.error else ""
            message = f"{self.strategy} is unsupported in this torch{why}"
            try:  # reported at the scenario file, not at this plugin's line
                raise pytest.skip.Exception(message, _use_item_location=True)
            except TypeError:  # a pytest without the keyword
                pytest.skip(message)

    def repr_failure(
        self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None
    ) -> Any:  # str, or pytest's own TerminalRepr
        if isinstance(excinfo.value, ScenarioFailure):
            return str(excinfo.value)
        return super().repr_failure(excinfo, style=style)

    def reportinfo(self) -> tuple[Path, int, str]:
        line = self.scenario.line_of("strategies") or self.scenario.line_of("target") or 1
        return self.path, line - 1, self.name  # 0-based, as pytest wants it

    def add_report_section(self, when: str, key: str, content: str) -> None:
        # Captured logs would be torch's own (Dynamo's recompiles log, structured-trace records
        # at DEBUG): the violation table already gives every reason. Output is kept.
        if key != "log":
            super().add_report_section(when, key, content)


def _as_given(path: Path) -> Path:
    """``path`` relative to the working directory when it lies below it (as a user types it)."""
    try:
        return path.relative_to(Path.cwd())
    except ValueError:
        return path
