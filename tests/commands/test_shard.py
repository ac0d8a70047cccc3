"""Shards: the split is deterministic and balanced, merged shards are the unsharded report, and
`merge` / `check --from-report` work without torch."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from comparable import comparable
from helpers import CONFIGS, copy_configs
from recompile_probe.commands import shard
from recompile_probe.commands.check import from_reports, load_all
from recompile_probe.errors import ReportError, UsageError
from recompile_probe.records.report import (
    Environment,
    Report,
    ScenarioRef,
    Tool,
    reports_from_json,
    to_dict,
)
from recompile_probe.records.run import RunError, figureless_run
from recompile_probe.scenario.overrides import with_overrides

CLI = [sys.executable, "-m", "recompile_probe"]


def shipped(backend: str | None = None):
    loaded = load_all([CONFIGS], None, None)
    return [with_overrides(s, backend=backend) for s in loaded] if backend else loaded


# --- the split ------------------------------------------------------------------------------------


def test_plan_holds_every_run_once_and_costs_follow_backend_and_length():
    """The plan's order is checked against a real unsharded report in
    test_shards_merged_equal_the_unsharded_report_and_verdicts."""
    scenarios = shipped()
    plan = shard.plan(scenarios)
    keys = [r.key for r in plan]
    assert len(set(keys)) == len(keys) == sum(len(s.points) * len(s.strategies) for s in scenarios)
    assert [r.index for r in plan] == list(range(len(plan)))
    s = scenarios[0]
    seq = next(iter(s.points))
    by_backend = {
        b: shard.cost(with_overrides(s, backend=b), seq) for b in ("eager", "aot_eager", "inductor")
    }
    assert by_backend["eager"] < by_backend["aot_eager"] < by_backend["inductor"]
    lengths = {len(p): shard.cost(s, name) for name, p in s.points.items()}
    assert len(lengths) > 1 and sorted(lengths.values()) == [lengths[k] for k in sorted(lengths)]


@pytest.mark.parametrize("count", [1, 2, 3, 4, 7])
def test_assignment_is_a_balanced_partition(count):
    scenarios = shipped()  # inductor.yaml keeps its inductor backend: uneven costs
    plan = shard.plan(scenarios)
    shards = [shard.select(scenarios, k, count) for k in range(1, count + 1)]
    keys = [r.key for s in shards for r in s.runs]
    assert sorted(keys) == sorted(r.key for r in plan) and len(set(keys)) == len(keys)
    for s in shards:
        assert [r.index for r in s.runs] == sorted(r.index for r in s.runs)
        assert s.fingerprint == shards[0].fingerprint
    costs = [s.cost for s in shards]
    assert max(costs) - min(costs) <= max(r.cost for r in plan)


def test_assignment_is_the_same_in_another_process_and_hash_seed():
    scenarios = shipped()
    here = {k: [list(r.key) for r in shard.select(scenarios, k, 3).runs] for k in (1, 2, 3)}
    code = (
        "import json; from pathlib import Path; from recompile_probe.commands import check, shard; "
        f"s = check.load_all([Path({str(CONFIGS)!r})], None, None); "
        "print(json.dumps({k: [list(r.key) for r in shard.select(s, k, 3).runs] "
        "for k in (1, 2, 3)}))"
    )
    for seed in ("1", "12345"):
        out = subprocess.run(
            [sys.executable, "-c", code],
            capture_output=True,
            text=True,
            check=True,
            env={**os.environ, "PYTHONHASHSEED": seed},
        ).stdout
        assert {int(k): v for k, v in json.loads(out).items()} == here


def test_shard_argument_errors():
    assert shard.parse("2/3") == (2, 3)
    for bad in ("0/3", "4/3", "3", "a/b", "1/0"):
        with pytest.raises(UsageError, match="--shard"):
            shard.parse(bad)


def test_fingerprint_differs_when_the_plan_or_budgets_do():
    scenarios = shipped()
    base = shard.fingerprint(scenarios)
    assert shard.fingerprint(shipped()) == base
    fewer = [
        with_overrides(scenarios[0], strategies=list(scenarios[0].strategies[:1])),
        *scenarios[1:],
    ]
    assert shard.fingerprint(fewer) != base
    flagged = load_all([CONFIGS], None, 0)
    assert shard.fingerprint(flagged) != base


# --- merge mechanics (figureless runs: nothing here is a Dynamo figure) ---------------------------


def _fake_shards(scenarios, count, *, torch="2.13.0", fail: str | None = None):
    """Shard reports as `check --shard` writes them, with runs that carry no figures."""
    out = []
    for k in range(1, count + 1):
        part = shard.select(scenarios, k, count)
        reports = []
        for s in scenarios:
            runs = [
                figureless_run(
                    s.target,
                    r.sequence,
                    s.sequences[r.sequence],
                    r.strategy,
                    s.backend,
                    "unsupported",
                    RunError("X", "m", None),
                )
                for r in part.runs
                if r.scenario == s.name and s.name != fail
            ]
            if runs:
                reports.append(
                    Report(
                        Tool("recompile-probe", "0.1.0"),
                        Environment(torch, "3.11.0", f"linux-{k}"),
                        ScenarioRef(s.name, s.path),
                        tuple(runs),
                    )
                )
        failures = (
            [(fail, "x.yaml", "target fails")]
            if fail and any(r.scenario == fail for r in part.runs)
            else []
        )
        out.append(shard.read(shard.to_json(reports, part, failures), f"s{k}.json"))
    return out


def test_merge_orders_runs_as_the_plan_and_names_the_platform_choice():
    scenarios = shipped()
    parts = _fake_shards(scenarios, 3)
    merged = shard.merge(list(reversed(parts)))
    assert [
        (r.scenario.name, run.sequence_name, run.strategy) for r in merged.reports for run in r.runs
    ] == [r.key for r in shard.plan(scenarios)]
    assert all(r.complete for r in merged.reports)
    for report in merged.reports:  # the lowest shard that ran the scenario names the platform
        lowest = min(
            p.index for p in parts if report.scenario.name in [r.scenario.name for r in p.reports]
        )
        assert report.environment.platform == f"linux-{lowest}"
    assert any("platforms" in n for n in merged.notes)


def test_merge_leaves_out_a_scenario_a_shard_could_not_run():
    scenarios = shipped()
    merged = shard.merge(_fake_shards(scenarios, 3, fail=scenarios[1].name))
    assert [f[0] for f in merged.failures] == [scenarios[1].name]
    assert scenarios[1].name not in [r.scenario.name for r in merged.reports]
    assert len(merged.reports) == len(scenarios) - 1


def test_merge_errors():
    scenarios = shipped()
    parts = _fake_shards(scenarios, 3)
    with pytest.raises(ReportError, match="shard 3/3 missing"):
        shard.merge(parts[:2])
    with pytest.raises(ReportError, match="given twice"):
        shard.merge([parts[0], parts[0], parts[1], parts[2]])
    other = _fake_shards(scenarios[:-1], 3)
    with pytest.raises(ReportError, match="different scenarios"):
        shard.merge([parts[0], parts[1], other[2]])
    with pytest.raises(ReportError, match="not the same matrix"):
        shard.merge([parts[0], _fake_shards(scenarios, 2)[1]])
    with pytest.raises(ReportError, match="ran on torch 2.13.0 but s3.json on 2.14.0"):
        shard.merge([parts[0], parts[1], _fake_shards(scenarios, 3, torch="2.14.0")[2]])
    # a run that two shards report, and one that none does
    moved = parts[1].reports[0].runs[0]
    grown = _with_runs(parts[0], parts[1].reports[0].scenario.name, extra=moved)
    with pytest.raises(ReportError, match="shards overlap"):
        shard.merge([grown, parts[1], parts[2]])
    shrunk = _with_runs(parts[1], parts[1].reports[0].scenario.name, drop=moved)
    with pytest.raises(ReportError, match=r"1 run\(s\) of the plan are in no shard report"):
        shard.merge([parts[0], shrunk, parts[2]])
    stopped = shard.ShardReport(
        **{
            **parts[2].__dict__,
            "reports": tuple(
                Report(r.tool, r.environment, r.scenario, r.runs, complete=False)
                for r in parts[2].reports
            ),
        }
    )
    with pytest.raises(ReportError, match="interrupted"):
        shard.merge([parts[0], parts[1], stopped])
    plain = json.dumps({"schema_version": 1, "reports": []})
    with pytest.raises(ReportError, match="not a shard report"):
        shard.read(plain, "plain.json")


def _with_runs(part, name, *, extra=None, drop=None):
    reports = []
    names = [r.scenario.name for r in part.reports]
    template = part.reports[0]
    if extra is not None and name not in names:
        reports = [
            *part.reports,
            Report(template.tool, template.environment, ScenarioRef(name, None), (extra,)),
        ]
    else:
        for r in part.reports:
            runs = tuple(x for x in r.runs if x is not drop)
            if r.scenario.name == name and extra is not None:
                runs = (*runs, extra)
            reports.append(Report(r.tool, r.environment, r.scenario, runs))
    return shard.ShardReport(**{**part.__dict__, "reports": tuple(reports)})


def test_from_report_refuses_a_report_that_is_not_the_scenarios_runs():
    scenarios = shipped()
    merged = list(shard.merge(_fake_shards(scenarios, 2)).reports)
    outcome = from_reports(scenarios, merged)
    assert len(outcome.reports) == len(scenarios)
    with pytest.raises(ReportError, match="no report for scenario"):
        from_reports(scenarios, merged[1:])
    with pytest.raises(ReportError, match="which no scenario given names"):
        from_reports(scenarios[1:], merged)
    narrowed = [
        with_overrides(scenarios[0], strategies=list(scenarios[0].strategies[:1])),
        *scenarios[1:],
    ]
    with pytest.raises(ReportError, match="not planned"):
        from_reports(narrowed, merged)


# --- real runs: shards 1/3 + 2/3 + 3/3 through the command line -----------------------------------


def _cli(*args, cwd, importtime=False):
    cmd = [
        sys.executable,
        *(["-X", "importtime"] if importtime else []),
        "-m",
        "recompile_probe",
        *args,
    ]
    return subprocess.run(
        cmd,
        capture_output=True,
        text=True,
        cwd=cwd,
        env={**os.environ, "OMP_NUM_THREADS": "1", "NO_COLOR": "1"},
    )


def _imported_torch(stderr: str) -> bool:
    """`python -X importtime` lists every module imported: was torch one of them?"""
    names = [
        line.rsplit("|", 1)[-1].strip()
        for line in stderr.splitlines()
        if line.startswith("import time:")
    ]
    return any(n == "torch" or n.startswith("torch.") for n in names)


@pytest.mark.slow
@pytest.mark.exhaustive
def test_shards_merged_equal_the_unsharded_report_and_verdicts(tmp_path):
    """Three shipped configs (the seed op on three of its strategies, its budgets, a non-batch
    dim; sequences not shortened), so that three shards cut across scenarios. A budget for every
    run makes some runs violate and some pass, so the verdicts compared are not all the same."""
    # three of the seed op's strategies: every run is made twice here (whole, then in shards)
    configs = copy_configs(
        tmp_path / "configs",
        {"logprobs.yaml", "ci_budgets.yaml", "non_batch_dim.yaml"},
        "[default, mark_dynamic, mark_unbacked]",
    )
    flags = ["configs", "--max-recompiles", "1", "-q"]

    live = _cli("check", *flags, "--json", "all_live.json", "--junit", "live.xml", cwd=tmp_path)
    assert live.returncode == 1, live.stderr  # some runs recompile more than once
    for k in (1, 2, 3):
        part = _cli("check", *flags, "--shard", f"{k}/3", "--json", f"s{k}.json", cwd=tmp_path)
        assert part.returncode in (0, 1), part.stderr
        assert f"shard {k}/3:" in part.stderr
    merged = _cli(
        "merge", "s3.json", "s1.json", "s2.json", "-o", "all.json", cwd=tmp_path, importtime=True
    )
    assert merged.returncode == 0, merged.stderr
    assert not _imported_torch(merged.stderr)

    unsharded = reports_from_json((tmp_path / "all_live.json").read_text())
    # the plan shards are cut from is the order the unsharded report lists its runs in
    ran = [(rep.scenario.name, r.sequence_name, r.strategy) for rep in unsharded for r in rep.runs]
    assert [r.key for r in shard.plan(load_all([configs], None, 1))] == ran
    joined = reports_from_json((tmp_path / "all.json").read_text())
    assert [comparable(to_dict(r)) for r in joined] == [comparable(to_dict(r)) for r in unsharded]
    assert sum(len(r.violations) for rep in joined for r in rep.runs) > 0
    assert sum(r.status == "ok" for rep in joined for r in rep.runs) > 0

    judged = _cli(
        "check",
        *flags,
        "--from-report",
        "all.json",
        "--junit",
        "judged.xml",
        cwd=tmp_path,
        importtime=True,
    )
    assert judged.returncode == live.returncode
    assert not _imported_torch(judged.stderr)
    assert judged.stdout == live.stdout  # every violation, reason and the summary line

    # JUnit: same testcases and failures; only the times differ
    def strip(text: str) -> str:
        return "\n".join(line for line in text.splitlines() if "time=" not in line)

    assert strip((tmp_path / "judged.xml").read_text()).count("<failure") == strip(
        (tmp_path / "live.xml").read_text()
    ).count("<failure")


@pytest.mark.slow
def test_shard_flags_usage_errors(tmp_path):
    r = _cli("check", str(CONFIGS / "ci_budgets.yaml"), "--shard", "4/3", cwd=tmp_path)
    assert r.returncode == 2 and "1 <= K <= N" in r.stderr
    r = _cli(
        "check",
        str(CONFIGS / "ci_budgets.yaml"),
        "--shard",
        "1/2",
        "--baseline",
        "b.json",
        cwd=tmp_path,
    )
    assert r.returncode == 2 and "--from-report all.json --baseline" in r.stderr
    (tmp_path / "x.json").write_text('{"schema_version": 1, "reports": []}')
    r = _cli("merge", "x.json", cwd=tmp_path)
    assert r.returncode == 2 and "not a shard report" in r.stderr
    r = _cli("check", str(CONFIGS / "ci_budgets.yaml"), "--from-report", "x.json", cwd=tmp_path)
    assert r.returncode == 2 and "no report for scenario 'sampler-gate'" in r.stderr
