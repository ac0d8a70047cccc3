#!/usr/bin/env python3
"""The compatibility matrix: the test suite on each torch release, one line per release.

For each release: a throw-away virtual environment (one at a time, deleted afterwards: each is
5-7 GB, the wheels being CUDA builds that run on the CPU here), torch pinned to that release with
an empty pip constraints file (so a machine-wide cap does not refuse it), the project installed
on top with torch held where it is, then `pytest -m "not inductor"`. Never part of `.ci/run`.

    python3 .ci/compat.py                       # the default list
    python3 .ci/compat.py 2.9.1 2.15.0 --keep   # some releases; keep the venvs in /tmp
    python3 .ci/compat.py --venvs /tmp/compat   # reuse /tmp/compat/v291 (for 2.9.1) etc. where
                                                # they hold that torch (editable install: they
                                                # test this working tree); build the others

Writes a line per release to stdout as it finishes, and the whole table to --output (default
compat-results.txt in the current folder, not committed).
"""

from __future__ import annotations

import argparse
import datetime
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RELEASES = ["2.9.1", "2.11.0", "2.13.0", "2.14.1", "2.15.0"]
_SUMMARY = re.compile(
    r"^(?:=+ )?(\d+ (?:passed|failed|skipped|deselected|error).*?) in [\d.]+s", re.MULTILINE
)  # with or without -q's "=====" frame


def run(cmd: list[str], log: Path, **kwargs) -> int:
    with open(log, "a", encoding="utf-8") as out:
        out.write(f"$ {' '.join(cmd)}\n")
        out.flush()
        return subprocess.run(cmd, stdout=out, stderr=subprocess.STDOUT, **kwargs).returncode


def reusable(venvs: str | None, release: str) -> Path | None:
    """A kept venv for this release (DIR/v291 for 2.9.1) whose torch is that release."""
    if not venvs:
        return None
    py = Path(venvs) / f"v{release.replace('.', '')}" / "bin" / "python"
    if not py.exists():
        return None
    probe = "import torch, recompile_probe; print(torch.__version__)"
    done = subprocess.run([str(py), "-c", probe], capture_output=True, text=True)
    return py if done.returncode == 0 and done.stdout.strip().split("+")[0] == release else None


def summarize(release: str, code: int, log: Path, started: float, how: str) -> str:
    text = log.read_text(encoding="utf-8", errors="replace")
    found = _SUMMARY.findall(text)
    summary = found[-1] if found else f"pytest exit {code}"
    failed = sorted(set(re.findall(r"^FAILED (\S+)", text, re.MULTILINE)))
    minutes = (time.monotonic() - started) / 60
    line = f"{release:8}  {'pass' if code == 0 else 'FAIL'}  {summary}  ({minutes:.0f} min{how})"
    return line + "".join(f"\n          {t}" for t in failed)


def check(
    release: str,
    keep: bool,
    pytest_args: list[str],
    logs: Path,
    marks: str,
    venvs: str | None = None,
) -> str:
    started = time.monotonic()
    kept = reusable(venvs, release)
    if kept is not None:
        log = logs / f"torch-{release}.log"
        log.write_text("")
        code = run(
            [str(kept), "-m", "pytest", "-q", "-p", "no:cacheprovider", "-m", marks, *pytest_args],
            log,
            cwd=ROOT,
        )
        return summarize(release, code, log, started, f", reused {kept.parent.parent}")
    folder = Path(tempfile.mkdtemp(prefix=f"rp-compat-{release}-"))
    log = logs / f"torch-{release}.log"
    log.write_text("")
    venv = folder / "venv"
    py = venv / "bin" / "python"
    none = folder / "none.txt"
    none.write_text("\n")
    pinned = folder / "pinned.txt"
    pinned.write_text(f"torch=={release}\n")
    env = {**__import__("os").environ, "PIP_CONSTRAINT": str(none)}
    try:
        if run([sys.executable, "-m", "venv", str(venv)], log) != 0:
            return f"{release:8}  venv failed (see {log})"
        # the build tools `make install` has (a venv's bundled setuptools may predate
        # bdist_wheel: tests/test_packaging.py builds the wheel)
        upgrade = [str(py), "-m", "pip", "install", "-q", "--upgrade", "pip", "setuptools", "wheel"]
        if run(upgrade, log, env=env) != 0:
            return f"{release:8}  pip and setuptools did not upgrade (see {log})"
        if (
            run([str(py), "-m", "pip", "install", "-q", f"torch=={release}", "numpy"], log, env=env)
            != 0
        ):
            return f"{release:8}  torch {release} did not install (see {log})"
        if (
            run(
                [str(py), "-m", "pip", "install", "-q", "-c", str(pinned), "-e", f"{ROOT}[dev]"],
                log,
                env=env,
            )
            != 0
        ):
            return f"{release:8}  the project did not install (see {log})"
        code = run(
            [str(py), "-m", "pytest", "-q", "-p", "no:cacheprovider", "-m", marks, *pytest_args],
            log,
            cwd=ROOT,
        )
        return summarize(release, code, log, started, "")
    finally:
        if keep:
            print(f"  kept {venv}", file=sys.stderr)
        else:
            shutil.rmtree(folder, ignore_errors=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("releases", nargs="*", default=RELEASES)
    parser.add_argument("--keep", action="store_true", help="keep each virtual environment")
    parser.add_argument("--output", default="compat-results.txt")
    parser.add_argument("--logs", default="compat-logs", help="folder for each release's log")
    parser.add_argument("--venvs", help="folder of kept venvs to reuse (v291 for 2.9.1, ...)")
    parser.add_argument("--marks", default="not inductor", help="pytest -m expression")
    argv = sys.argv[1:]
    # after --: extra pytest arguments (split here: argparse would swallow options after a release)
    extra = argv[argv.index("--") + 1 :] if "--" in argv else []
    args = parser.parse_args(argv[: argv.index("--")] if "--" in argv else argv)
    logs = Path(args.logs)
    logs.mkdir(parents=True, exist_ok=True)
    lines = [
        f"# torch compatibility matrix, {datetime.date.today()}, python "
        f"{sys.version.split()[0]}, pytest -m '{args.marks}'"
    ]
    print(lines[0], flush=True)
    failed = False
    for release in args.releases:
        line = check(release, args.keep, extra, logs, args.marks, args.venvs)
        failed = failed or " pass " not in line
        print(line, flush=True)
        lines.append(line)
        Path(args.output).write_text("\n".join(lines) + "\n", encoding="utf-8")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
