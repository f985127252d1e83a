"""The package's front matter: the licence file is the licence pyproject names, the changelog has an entry
for the version, and ``herdlab --version`` prints it; the ``./herdlab`` bootstrap installs only herdlab for
the main job and the dev tools for the tests (run on a stand-in .venv whose python and herdlab record
their calls, so nothing is installed)."""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import time
import tomllib
from importlib.metadata import version
from pathlib import Path

from click.testing import CliRunner

from harness.cli import cli

ROOT = Path(__file__).resolve().parents[3]

#: MD5 of the Apache License 2.0 as published at https://www.apache.org/licenses/LICENSE-2.0.txt.
APACHE_2_MD5 = "3b83ef96387f14655fc854ddc3c6bd57"


def _project() -> dict[str, object]:
    with (ROOT / "pyproject.toml").open("rb") as f:
        return tomllib.load(f)["project"]


def test_license_file_is_the_licence_pyproject_names() -> None:
    project = _project()
    assert project["license"] == "Apache-2.0"
    assert project["license-files"] == ["LICENSE"]
    assert hashlib.md5((ROOT / "LICENSE").read_bytes()).hexdigest() == APACHE_2_MD5


def test_changelog_has_unreleased_then_the_current_version() -> None:
    headings = [ln for ln in (ROOT / "CHANGELOG.md").read_text().splitlines() if ln.startswith("## ")]
    assert headings[0] == "## [Unreleased]"
    assert f"## [{_project()['version']}]" in headings


def test_version_option_prints_the_installed_version() -> None:
    r = CliRunner().invoke(cli, ["--version"], prog_name="herdlab")
    assert r.exit_code == 0
    assert r.stdout == f"herdlab, version {version('herdlab')}\n"
    # ./herdlab installs again whenever pyproject.toml changes, so the two agree in a checkout it set up
    assert version("herdlab") == _project()["version"]


_RECORDER = """#!/bin/sh
echo "$(basename "$0") $*" >> "$(dirname "$0")/../calls"
"""


def _checkout(tmp_path: Path) -> Path:
    """A copy of the bootstrap and pyproject.toml beside a stand-in .venv that records its calls."""
    shutil.copy(ROOT / "herdlab", tmp_path / "herdlab")
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    bin_dir = tmp_path / ".venv" / "bin"
    bin_dir.mkdir(parents=True)
    for name in ("python", "herdlab"):
        (bin_dir / name).write_text(_RECORDER)
        (bin_dir / name).chmod(0o755)
    return tmp_path


def _bootstrap(checkout: Path, *args: str) -> list[str]:
    """Run ``./herdlab ARGS`` in ``checkout``; the calls its stand-ins recorded, this run's only."""
    calls = checkout / ".venv" / "calls"
    before = calls.read_text().splitlines() if calls.exists() else []
    subprocess.run(["sh", str(checkout / "herdlab"), *args], check=True, capture_output=True)
    return calls.read_text().splitlines()[len(before) :]


def _wait_for_archive_writer(venv: Path) -> None:
    """The detached writer removes its claimed marker last: wait for that (it ends by itself)."""
    deadline = time.monotonic() + 30
    while (venv / ".herdlab-archive-claimed").exists():
        assert time.monotonic() < deadline, "the archive writer did not end"
        time.sleep(0.05)


def test_main_job_installs_herdlab_alone_and_writes_the_archive_after_it(tmp_path: Path) -> None:
    checkout = _checkout(tmp_path)
    venv = checkout / ".venv"
    assert _bootstrap(checkout, "demo") == [
        "python -m pip install --quiet --upgrade pip",
        "python -m pip install --quiet -e .",
        "herdlab demo",
    ]
    _wait_for_archive_writer(venv)
    assert (venv / "calls").read_text().splitlines()[-1] == "herdlab spark archive"
    assert not (venv / ".herdlab-dev-stamp").exists()
    # set up: the next command neither installs nor writes the archive again
    assert _bootstrap(checkout, "--help") == ["herdlab --help"]
    assert not (venv / ".herdlab-archive-claimed").exists()


def test_test_command_adds_the_dev_tools_once_and_again_when_pyproject_changes(tmp_path: Path) -> None:
    checkout = _checkout(tmp_path)
    dev_setup = [
        "python -m pip install --quiet --upgrade pip",
        "python -m pip install --quiet -e .[dev]",
        "herdlab spark archive",
    ]
    assert _bootstrap(checkout, "test", "-q") == [*dev_setup, "python -m pytest -q"]
    assert _bootstrap(checkout, "test", "-x") == ["python -m pytest -x"]
    assert _bootstrap(checkout, "demo") == ["herdlab demo"]  # the dev set-up includes herdlab's
    with (checkout / "pyproject.toml").open("a") as f:
        f.write("\n# changed\n")
    assert _bootstrap(checkout, "setup", "dev") == dev_setup


def test_setup_rejects_an_unknown_level(tmp_path: Path) -> None:
    checkout = _checkout(tmp_path)
    done = subprocess.run(
        ["sh", str(checkout / "herdlab"), "setup", "everything"], capture_output=True, text=True
    )
    assert done.returncode == 2
    assert "takes nothing or 'dev'" in done.stderr
