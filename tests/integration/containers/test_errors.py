"""One-line errors of the containers backend, and its pure parts (no engine needed unless marked)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from harness.cluster.containers import ContainersOptions, preflight
from harness.images import docker_client, image_names
from harness.images.build import EXCLUDED, runtime_requirements
from harness.kernel.errors import ConfigError, EnvironmentProblem

NO_ENGINE = {"DOCKER_HOST": "unix:///nonexistent/herdlab-test/docker.sock"}


def _herdlab(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "harness", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, **(env or {})},
    )


def _one_line_error(r: subprocess.CompletedProcess[str]) -> str:
    assert r.returncode == 2, (r.returncode, r.stdout, r.stderr)
    lines = [x for x in r.stderr.splitlines() if x.strip() and "WARNING" not in x]
    assert len(lines) == 1 and lines[0].startswith("herdlab: error: "), r.stderr
    return lines[0]


def test_no_engine_is_one_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DOCKER_HOST", NO_ENGINE["DOCKER_HOST"])
    with pytest.raises(EnvironmentProblem) as e:
        docker_client(timeout=5)
    assert "\n" not in str(e.value)
    assert "not running" in str(e.value) or "not installed" in str(e.value)
    with pytest.raises(EnvironmentProblem):
        preflight(ContainersOptions())


@pytest.mark.slow
def test_cli_errors_are_one_line(tmp_path: Path) -> None:
    line = _one_line_error(
        _herdlab("run", "herd", "--backend", "containers", "--out", str(tmp_path), env=NO_ENGINE)
    )
    assert "Docker" in line
    assert not (tmp_path / "herd").exists()  # refused before a run directory was made
    line = _one_line_error(_herdlab("run", "herd", "--members-in-containers", "--out", str(tmp_path)))
    assert "--backend containers" in line
    line = _one_line_error(_herdlab("run", "herd", "--kafka-image", "x/y:1", "--out", str(tmp_path)))
    assert "--backend containers" in line
    line = _one_line_error(_herdlab("images", "build", "--offline", env=NO_ENGINE))
    assert "Docker" in line
    line = _one_line_error(_herdlab("images", "build", "--tag-prefix", "bad"))
    assert "--tag-prefix" in line


def test_image_names_and_the_slim_requirements() -> None:
    names = image_names("reg.example/team/")
    assert names.zookeeper.startswith("reg.example/team/zookeeper:")
    assert names.herdlab.startswith("reg.example/team/herdlab:")
    assert names.kafka("3.9.2") == "reg.example/team/kafka:3.9.2"
    with pytest.raises(ConfigError):
        image_names("no-separator")
    reqs = {r.split("==")[0] for r in runtime_requirements()}
    assert {"kazoo", "kafka-python", "kio", "pyarrow", "click"} <= reqs
    assert not reqs & EXCLUDED  # no pyspark, matplotlib or Docker client in the image


@pytest.mark.containers
def test_missing_image_and_missing_debootstrap_are_one_line(engine: Any, tmp_path: Path) -> None:
    line = _one_line_error(
        _herdlab(
            "run",
            "herd",
            "--backend",
            "containers",
            "--image-prefix",
            "herdlab-absent/",
            "--out",
            str(tmp_path),
        )
    )
    assert "herdlab-absent/zookeeper" in line and "herdlab images build" in line
    empty = tmp_path / "bin"
    empty.mkdir()
    line = _one_line_error(
        _herdlab(
            "images",
            "build",
            "--offline",
            "--rebuild-base",
            "--tag-prefix",
            "herdlab-absent/",
            env={"PATH": str(empty)},
        )
    )
    assert "debootstrap is not installed" in line
