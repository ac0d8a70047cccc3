"""artefacts: files written whole, with a shareable mode, only when asked, checked before work."""

from __future__ import annotations

import os
import stat

import pytest

from recompile_probe.artefacts import Artefacts, append_step_summary, write_atomic
from recompile_probe.errors import UsageError


def test_write_atomic_leaves_one_whole_file_with_the_umask_mode(tmp_path):
    path = tmp_path / "r.json"
    write_atomic(path, "{}\n")
    write_atomic(path, "[]\n")
    assert path.read_text() == "[]\n"
    assert [p.name for p in tmp_path.iterdir()] == ["r.json"]  # no temporary left behind
    umask = os.umask(0)
    os.umask(umask)
    assert stat.S_IMODE(path.stat().st_mode) == 0o666 & ~umask


def test_artefacts_checked_before_work_and_rendered_only_when_asked(tmp_path):
    with pytest.raises(UsageError, match="--junit: folder"):
        Artefacts({"junit": tmp_path / "missing" / "j.xml"}).check()
    rendered = []
    files = Artefacts({"json": tmp_path / "r.json", "markdown": None})
    files.check()
    assert files.write("markdown", lambda: rendered.append("md") or "md") is None
    assert files.write("json", lambda: rendered.append("json") or "{}") == tmp_path / "r.json"
    assert rendered == ["json"]


def test_step_summary_is_appended_not_replaced(tmp_path, monkeypatch):
    summary = tmp_path / "summary.md"
    summary.write_text("earlier step\n")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    assert append_step_summary("## ours")
    assert summary.read_text() == "earlier step\n## ours\n"
    monkeypatch.delenv("GITHUB_STEP_SUMMARY")
    assert not append_step_summary("## ours")
