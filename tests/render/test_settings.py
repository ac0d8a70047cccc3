"""The inherited compile settings (and what --clean-env kept out) are shown by every human format
that shows the environment, and by none when there are none."""

from __future__ import annotations

import dataclasses

from helpers import render_report, sample_report


def test_settings_are_shown_only_when_there_are_some():
    report = sample_report()
    env = dataclasses.replace(
        report.environment,
        compile_settings={"TORCH_COMPILE_STATIC_SOURCES": ".*:0"},
        cleared_settings={"TORCH_LOGS": "recompiles"},
    )
    with_settings = dataclasses.replace(report, environment=env)
    for fmt in ("table", "markdown", "html"):
        shown = render_report(with_settings, fmt, width=200)
        assert "TORCH_COMPILE_STATIC_SOURCES" in shown, fmt
        assert "TORCH_LOGS" in shown and "--clean-env" in shown, fmt
        plain = render_report(report, fmt, width=200)
        assert "TORCH_COMPILE_STATIC_SOURCES" not in plain and "--clean-env" not in plain, fmt
