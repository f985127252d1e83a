"""Missing or old Java, and missing jars, give one clear line and a non-zero exit."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from harness.cluster.java import zookeeper_classpath
from harness.kernel.errors import EnvironmentProblem

HERDLAB = os.path.join(os.path.dirname(sys.executable), "herdlab")


def _run_demo(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([HERDLAB, "demo"], env=env, capture_output=True, text=True, timeout=120)


def _env_without_java(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("JAVA_HOME", "HERDLAB_JAVA")}
    env["PATH"] = str(tmp_path)  # nothing in it: no java
    return env


def test_missing_java_is_one_clear_line(tmp_path: Path) -> None:
    r = _run_demo(_env_without_java(tmp_path))
    assert r.returncode == 2
    assert "Traceback" not in r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1
    assert "Java not found" in lines[0] and "17" in lines[0]


def test_old_java_is_refused(tmp_path: Path) -> None:
    fake = tmp_path / "java"
    fake.write_text("#!/bin/sh\necho 'openjdk version \"11.0.21\" 2023-10-17' >&2\n")
    fake.chmod(0o755)
    env = _env_without_java(tmp_path)
    env["HERDLAB_JAVA"] = str(fake)
    r = _run_demo(env)
    assert r.returncode == 2
    assert "Traceback" not in r.stderr
    assert "Java 11 found" in r.stderr and "17 or newer" in r.stderr


def test_missing_zookeeper_jars_are_named(tmp_path: Path) -> None:
    (tmp_path / "slf4j-api-2.0.jar").write_bytes(b"")
    with pytest.raises(EnvironmentProblem, match="no zookeeper-<version>.jar"):
        zookeeper_classpath(tmp_path)
