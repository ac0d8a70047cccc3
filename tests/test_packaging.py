"""The wheel holds the whole package: every module, the shipped configs and the JSON Schemas."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile

import pytest

from helpers import CONFIGS, ROOT

pytestmark = pytest.mark.slow


def test_the_wheel_holds_every_module_config_and_schema(tmp_path):
    # built from a copy: setuptools leaves build/ beside the sources, and a stale one would hide
    # a module the configuration misses
    source = tmp_path / "src"
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, source / name)
    for name in ("recompile_probe", "configs"):
        shutil.copytree(ROOT / name, source / name, ignore=shutil.ignore_patterns("__pycache__"))
    built = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            str(source),
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(tmp_path / "wheel"),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert built.returncode == 0, built.stderr
    # a package missing from pyproject's list still lands in today's wheels, with this warning
    # (setuptools calls it ambiguous and will drop it): the list must name every package
    assert "Package would be ignored" not in built.stdout + built.stderr, built.stderr
    (wheel,) = (tmp_path / "wheel").glob("recompile_probe-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    package = ROOT / "recompile_probe"
    expected = {p.relative_to(ROOT).as_posix() for p in package.rglob("*.py")}
    expected |= {p.relative_to(ROOT).as_posix() for p in (package / "schemas").glob("*.json")}
    expected |= {
        f"recompile_probe/configs/{p.name}"
        for p in CONFIGS.iterdir()
        if p.suffix in (".yaml", ".py")
    }
    assert len(expected) > 150
    assert expected <= names, sorted(expected - names)
