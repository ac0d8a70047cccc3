"""The eager reference: a driver that never calls the target is a usage error, named."""

from __future__ import annotations

import textwrap

from typer.testing import CliRunner

from recompile_probe.cli import app


def test_a_driver_that_never_calls_the_target_is_an_error_naming_it(write_scenario, tmp_path):
    (tmp_path / "prog.py").write_text(
        textwrap.dedent("""
            import torch

            def double(x):
                return x * 2

            def forgetful(fn, B):
                return double(torch.ones(B, 3))  # the program's own function, not fn
            """)
    )
    path = write_scenario("""
        target: prog.py:double
        driver: prog.py:forgetful
        dims: {B: {x: [0]}}
        sequences: {s: [1, 2]}
        strategies: [default]
        repeats: 0
        """)
    result = CliRunner().invoke(app, ["run", str(path), "-q"])
    assert result.exit_code == 2, result.output
    assert "the driver prog.py:forgetful never called the target prog.py:double" in result.output
    assert "must call it where the program calls the target" in result.output
    assert "Traceback" not in result.output


def test_the_eager_figure_carries_its_spread_and_the_documented_noise_rule():
    """eager_us is the median of the re-run's samples, eager_min_us its fastest; noisy where the
    median is above 1.3x the fastest (docs/output.md), written here as the literal rule."""
    from recompile_probe.execution.session import run_scenario
    from recompile_probe.scenario.load import loads

    scenario = loads(
        "target: logprobs.count_greater_than\nsequences: {rl: [1, 2]}\n"
        "strategies: [default]\nrepeats: 15\n"
    )
    (run,) = run_scenario(scenario).runs
    assert run.eager_us is not None and run.eager_min_us is not None
    assert 0 < run.eager_min_us <= run.eager_us
    assert run.eager_noisy is (run.eager_us > 1.3 * run.eager_min_us)
    untimed = loads(
        "target: logprobs.count_greater_than\nsequences: {rl: [1, 2]}\n"
        "strategies: [default]\nrepeats: 0\n"
    )
    (run,) = run_scenario(untimed).runs
    assert (run.eager_us, run.eager_min_us, run.eager_noisy) == (None, None, None)
