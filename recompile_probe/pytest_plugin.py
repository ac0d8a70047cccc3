"""pytest plugin (entry point ``pytest11``): a recorder fixture, budget markers, a JSON report.

    @pytest.mark.max_recompiles(0)
    def test_sampler_compiles_once():
        for b in (1, 2, 8):
            sampler(*make_inputs(b))

Markers: ``max_recompiles(n)``, ``max_compiles(n)``; ``reset=True`` on either calls
torch._dynamo.reset() first, so earlier tests cannot have warmed the cache. The fixture
``recompile_recorder`` yields the live Recording. ``--recompile-report FILE`` writes each test's
figures as JSON. Loading the plugin imports no torch.
"""

from __future__ import annotations

import json
from typing import Any, Iterator

import pytest

MARKERS = {"max_recompiles": "recompiles", "max_compiles": "compiles"}
_FIGURES = pytest.StashKey[dict]()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("recompile-probe")
    group.addoption("--recompile-report", metavar="FILE", default=None,
                    help="write each test's torch.compile figures (compiles, recompiles, "
                         "graphs, reasons per function) to FILE as JSON")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "max_recompiles(n, reset=False): fail the test when "
                            "torch.compile recompiles more than n times during it")
    config.addinivalue_line("markers", "max_compiles(n, reset=False): fail the test when "
                            "Dynamo compiles more than n times during it")
    config._recompile_results = []  # type: ignore[attr-defined]


@pytest.fixture
def recompile_recorder() -> Iterator[Any]:
    """The recorder, live for the test body: ``recompile_recorder.recompiles``, ``.explain()``."""
    from .recording import record

    with record() as recording:
        yield recording


def _limits(item: pytest.Item) -> tuple[dict[str, int], bool]:
    limits, reset = {}, False
    for name in MARKERS:
        marker = item.get_closest_marker(name)
        if marker is None:
            continue
        if len(marker.args) != 1 or not isinstance(marker.args[0], int) or marker.args[0] < 0:
            raise pytest.UsageError(f"{item.nodeid}: @pytest.mark.{name} takes one "
                                    f"non-negative integer, e.g. @pytest.mark.{name}(0)")
        limits[name] = marker.args[0]
        reset = reset or bool(marker.kwargs.get("reset", False))
    return limits, reset


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:  # a malformed marker stops the session before anything runs
        _limits(item)


# Old-style hookwrapper: it works with every pluggy that pytest 7 and 8 bring, so installing
# recompile-probe can never break a user's test session.
@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    limits, reset = _limits(item)
    if not limits and item.config.getoption("recompile_report") is None:
        yield
        return
    from .recording import record

    if reset:
        import torch

        torch._dynamo.reset()
    with record() as recording:
        outcome = yield
    figures = {"nodeid": item.nodeid, **recording.to_dict()}
    item.config._recompile_results.append(figures)  # type: ignore[attr-defined]
    if outcome.excinfo is not None:
        return  # the test failed on its own: that failure is the one to show
    broken = [f"{name}({limit}): {getattr(recording, MARKERS[name])} {MARKERS[name]}"
              for name, limit in limits.items() if getattr(recording, MARKERS[name]) > limit]
    if broken:
        message = ("torch.compile budget exceeded: " + "; ".join(broken) + "\n"
                   + recording.explain())
        try:
            pytest.fail(message, pytrace=False)
        except pytest.fail.Exception as exc:
            if hasattr(outcome, "force_exception"):
                outcome.force_exception(exc)
            else:  # pluggy < 1.1
                raise


def pytest_sessionfinish(session: pytest.Session) -> None:
    path = session.config.getoption("recompile_report")
    if path is None:
        return
    results = getattr(session.config, "_recompile_results", [])
    with open(path, "w", encoding="utf-8") as handle:
        json.dump({"schema_version": 1, "tests": results}, handle, indent=2)
        handle.write("\n")
