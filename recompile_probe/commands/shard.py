"""Shards for CI matrices: which runs `check --shard K/N` executes, and joining the shard reports
back into the report one unsharded `check` writes. No torch.

A run is one (scenario, sequence, strategy); the plan is every run of the scenarios given, in the
order an unsharded `check` reports them (scenarios as given, then sequence-major, strategies as
the scenario lists them). Runs are matched by (scenario name, sequence name, strategy), the key
baselines use, so two scenarios of one plan must not share a name.

**Cost estimate** (deterministic: never a timing, so every shard job computes the same split):
``SETUP_COST + BACKEND_WEIGHT[backend] * points``. Each point of a sequence may compile (a
``static`` run compiles at every new size), and a compile dominates a call: on CPU an eager-backend
compile of a small op is ~0.1 s, aot_eager ~3x that, inductor seconds (a C++ build per graph).
``SETUP_COST`` stands for what every run pays whatever its length (the Dynamo reset, the
strategy's config, the timed steady-state calls).

**Assignment**: longest-processing-time greedy. Runs sorted by cost, most expensive first, ties
in plan order; each goes to the shard with the least cost so far, ties to the lowest shard. The
heaviest shard then exceeds the lightest by at most one run's cost.

**Merging**: every shard report (``check --shard K/N --json``) carries the whole plan's runs and
its fingerprint, so `merge` refuses shards of different plans (other scenario files, another
``--strategy``), a shard given twice or missing, a run reported twice or by nobody, an
interrupted shard, and shards run on another torch, Python or recompile-probe. The merged report
is the unsharded one: same reports, runs, order, figures, statuses, reasons and violations.
What differs by nature is what a second run differs in anyway (tests/comparable.py: wall times,
compile times, guard-check times and the noise flag drawn from them, trace file paths, and in
guard texts the object addresses and Dynamo's per-process global counters),
``environment.platform``, taken from the lowest shard that ran the scenario (CI runners may
report different kernels; a difference is returned as a note), and ``runs[].isolation`` when
shards ran with different flags (``--jobs N`` runs say ``process``). ``complete`` is true: an
incomplete shard is refused.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import ReportError, UsageError
from ..records.order import planned
from ..records.report import SCHEMA_VERSION, Report, reports_from_json, to_dict

#: relative cost of one point (one possible compile) per backend; unknown backends count as inductor
BACKEND_WEIGHT: Mapping[str, int] = {"eager": 1, "aot_eager": 3, "inductor": 20}
SETUP_COST = 1

Key = tuple[str, str, str]  #: (scenario name, sequence name, strategy)


@dataclass(frozen=True)
class PlannedRun:
    index: int  #: position in the unsharded report order
    scenario: str
    sequence: str
    strategy: str
    cost: int

    @property
    def key(self) -> Key:
        return (self.scenario, self.sequence, self.strategy)


@dataclass(frozen=True)
class Shard:
    index: int  #: K of K/N, from 1
    count: int  #: N
    runs: tuple[PlannedRun, ...]  #: this shard's, in plan order
    plan: tuple[PlannedRun, ...]  #: every run of every shard, in plan order
    fingerprint: str  #: of the plan: equal for every shard of one matrix

    @property
    def keys(self) -> frozenset[Key]:
        return frozenset(r.key for r in self.runs)

    @property
    def cost(self) -> int:
        return sum(r.cost for r in self.runs)

    @property
    def label(self) -> str:
        return f"{self.index}/{self.count}"


def parse(text: str) -> tuple[int, int]:
    """``"2/3"`` -> (2, 3)."""
    try:
        k, n = (int(part) for part in text.split("/"))
    except ValueError:
        raise UsageError(f"--shard: expected K/N such as 1/3, got {text!r}") from None
    if n < 1 or not 1 <= k <= n:
        raise UsageError(f"--shard: expected 1 <= K <= N, got {text!r}")
    return k, n


def cost(scenario: Any, sequence: str) -> int:
    weight = BACKEND_WEIGHT.get(scenario.backend, max(BACKEND_WEIGHT.values()))
    return SETUP_COST + weight * len(scenario.points[sequence])


def plan(scenarios: Sequence[Any]) -> tuple[PlannedRun, ...]:
    """Every run of the scenarios, in the order an unsharded `check` reports them."""
    seen: dict[str, str | None] = {}
    out: list[PlannedRun] = []
    for s in scenarios:
        if s.name in seen:
            raise UsageError(
                f"two scenarios are named {s.name!r} ({seen[s.name]}, {s.path}): "
                "shards match runs by scenario name",
                "Give each a distinct `name:`.",
            )
        seen[s.name] = s.path
        for sequence, strategy in planned(s.points, s.strategies):
            out.append(PlannedRun(len(out), s.name, sequence, strategy, cost(s, sequence)))
    return tuple(out)


def fingerprint(scenarios: Sequence[Any]) -> str:
    """What every shard of one matrix must agree on: runs, their points, backends, budgets."""
    data = [
        [
            s.name,
            s.backend,
            list(s.strategies),
            {name: [p.to_dict() for p in points] for name, points in s.points.items()},
            sorted([b.strategy, b.sequence, b.key, repr(b.limit)] for b in s.budgets),
        ]
        for s in scenarios
    ]
    return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()[:16]


def assign(runs: Sequence[PlannedRun], count: int) -> list[tuple[PlannedRun, ...]]:
    """Longest-processing-time greedy; each shard's runs in plan order."""
    loads = [0] * count
    shards: list[list[PlannedRun]] = [[] for _ in range(count)]
    for run in sorted(runs, key=lambda r: (-r.cost, r.index)):
        k = min(range(count), key=lambda i: (loads[i], i))
        loads[k] += run.cost
        shards[k].append(run)
    return [tuple(sorted(s, key=lambda r: r.index)) for s in shards]


def select(scenarios: Sequence[Any], index: int, count: int) -> Shard:
    runs = plan(scenarios)
    return Shard(index, count, assign(runs, count)[index - 1], runs, fingerprint(scenarios))


# --- shard reports --------------------------------------------------------------------------------


def to_json(
    reports: Iterable[Report], shard: Shard, failures: Iterable[tuple[str, str | None, str]] = ()
) -> str:
    """A bundle of the shard's reports (readable by `render` and `diff`) with a ``shard`` section:
    ``index``, ``count``, ``fingerprint``, ``runs`` (this shard's keys), ``plan`` (every key, in
    report order) and ``failures`` (scenario, path, message: scenarios that could not run)."""
    meta = {
        "index": shard.index,
        "count": shard.count,
        "fingerprint": shard.fingerprint,
        "cost": shard.cost,
        "runs": [list(r.key) for r in shard.runs],
        "plan": [list(r.key) for r in shard.plan],
        "failures": [{"scenario": n, "path": p, "message": m} for n, p, m in failures],
    }
    return (
        json.dumps(
            {
                "schema_version": SCHEMA_VERSION,
                "reports": [to_dict(r) for r in reports],
                "shard": meta,
            },
            indent=2,
        )
        + "\n"
    )


@dataclass(frozen=True)
class ShardReport:
    source: str  #: the file it was read from
    index: int
    count: int
    fingerprint: str
    runs: tuple[Key, ...]
    plan: tuple[Key, ...]
    failures: tuple[tuple[str, str | None, str], ...]
    reports: tuple[Report, ...]


def read(text: str, source: str) -> ShardReport:
    reports = reports_from_json(text, source)  # the format errors, worded as for any report
    meta = json.loads(text).get("shard") if text.lstrip().startswith("{") else None
    if not isinstance(meta, dict):
        raise ReportError(
            f"{source}: not a shard report (no 'shard' section)",
            "merge joins the --json files of `check --shard K/N`.",
        )
    try:

        def keys(items: Any) -> tuple[tuple[str, str, str], ...]:
            return tuple((str(s), str(q), str(t)) for s, q, t in items)

        return ShardReport(
            source,
            int(meta["index"]),
            int(meta["count"]),
            str(meta["fingerprint"]),
            keys(meta["runs"]),
            keys(meta["plan"]),
            tuple((f["scenario"], f.get("path"), f["message"]) for f in meta.get("failures", ())),
            tuple(reports),
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise ReportError(f"{source}: malformed 'shard' section ({exc!r})") from None


@dataclass(frozen=True)
class Merged:
    reports: tuple[Report, ...]  #: exactly what an unsharded `check --json` writes
    #: scenarios a shard could not run (eager failure, unloadable target): left out, as `check`
    #: leaves them out; (scenario, path, message)
    failures: tuple[tuple[str, str | None, str], ...]
    notes: tuple[str, ...]  #: e.g. platforms that differ between shards


def merge(shards: Sequence[ShardReport]) -> Merged:
    if not shards:
        raise UsageError("merge: no shard report given")
    first = shards[0]
    for s in shards:
        if s.count != first.count:
            raise ReportError(
                f"{s.source} is shard {s.index}/{s.count} but {first.source} is "
                f"{first.index}/{first.count}: not the same matrix"
            )
        if s.fingerprint != first.fingerprint or s.plan != first.plan:
            raise ReportError(
                f"{s.source} and {first.source} come from different scenarios "
                "(files, sequences, strategies, backend or budgets differ)",
                "Run every shard with the same scenarios and flags.",
            )
    by_index: dict[int, ShardReport] = {}
    for s in shards:
        if s.index in by_index:
            raise ReportError(
                f"shard {s.index}/{s.count} given twice: {by_index[s.index].source} and {s.source}"
            )
        by_index[s.index] = s
    missing = [k for k in range(1, first.count + 1) if k not in by_index]
    if missing:
        raise ReportError(
            f"shard{'s' * (len(missing) > 1)} "
            f"{', '.join(f'{k}/{first.count}' for k in missing)} missing",
            "Give merge every shard's report.",
        )
    ordered = [by_index[k] for k in sorted(by_index)]
    _same_environment(ordered)

    failures: dict[str, tuple[str, str | None, str]] = {}
    for s in ordered:
        for f in s.failures:
            failures.setdefault(f[0], f)
    rank = {key: i for i, key in enumerate(first.plan)}
    found: dict[Key, tuple[Any, ShardReport, Report]] = {}
    for s in ordered:
        for report in s.reports:
            if not report.complete:
                raise ReportError(
                    f"{s.source}: shard {s.index}/{s.count} was interrupted; "
                    f"scenario {report.scenario.name!r} is incomplete",
                    "Rerun that shard.",
                )
            for run in report.runs:
                key = (report.scenario.name, run.sequence_name, run.strategy)
                if key not in rank:
                    raise ReportError(f"{s.source}: run {_name(key)} is not in the plan")
                if key in found:
                    raise ReportError(
                        f"run {_name(key)} is in {found[key][1].source} and in "
                        f"{s.source}: shards overlap"
                    )
                found[key] = (run, s, report)
    lost = [k for k in first.plan if k not in found and k[0] not in failures]
    if lost:
        shown = ", ".join(_name(k) for k in lost[:5]) + (" ..." if len(lost) > 5 else "")
        raise ReportError(f"{len(lost)} run(s) of the plan are in no shard report: {shown}")

    reports: list[Report] = []
    notes: list[str] = []
    for name in dict.fromkeys(k[0] for k in first.plan):
        if name in failures:
            continue
        keys = [k for k in first.plan if k[0] == name]
        holders = sorted({found[k][1].index for k in keys})
        head = next(rep for rep in by_index[holders[0]].reports if rep.scenario.name == name)
        platforms = {rep.environment.platform for k in keys for rep in [found[k][2]]}
        if len(platforms) > 1:
            notes.append(
                f"{name}: shards ran on {len(platforms)} platforms "
                f"({', '.join(sorted(platforms))}); the report names shard "
                f"{holders[0]}/{first.count}'s"
            )
        reports.append(
            Report(
                head.tool,
                head.environment,
                head.scenario,
                tuple(found[k][0] for k in keys),
                head.schema_version,
                complete=True,
            )
        )
    return Merged(tuple(reports), tuple(failures.values()), tuple(notes))


def _same_environment(shards: Sequence[ShardReport]) -> None:
    seen: dict[str, tuple[str, Any]] = {}
    for s in shards:
        for report in s.reports:
            for what, value in (
                ("torch", report.environment.torch),
                ("Python", report.environment.python),
                ("recompile-probe", report.tool.version),
            ):
                held = seen.setdefault(what, (s.source, value))
                if held[1] != value:
                    raise ReportError(
                        f"{held[0]} ran on {what} {held[1]} but {s.source} on "
                        f"{value}: figures of different {what} builds are not one "
                        "report"
                    )


def _name(key: Key) -> str:
    return f"{key[0]} / {key[1]} / {key[2]}"
