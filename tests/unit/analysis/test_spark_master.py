"""Pure parts of the Spark set-up: which masters are local, where the driver binds on a cluster, and
the Scala version the standalone daemons are told (no JVM started here)."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.analysis.spark import driver_address, is_local, is_loopback, master_hosts
from harness.cluster.spark_standalone import scala_version
from harness.kernel.errors import ConfigError, EnvironmentProblem


@pytest.mark.parametrize(
    ("master", "local"),
    [
        (None, True),
        ("local", True),
        ("local[2]", True),
        ("local[*]", True),
        ("spark://h:7077", False),
        ("yarn", False),
    ],
)
def test_is_local(master: str | None, local: bool) -> None:
    assert is_local(master) is local


def test_master_hosts_of_a_standalone_url_with_standby_masters() -> None:
    assert master_hosts("spark://a.example:7077,127.0.0.1:7078") == ["a.example", "127.0.0.1"]
    assert master_hosts("spark://[::1]:7077") == ["::1"]
    assert master_hosts("yarn") == []


@pytest.mark.parametrize(
    ("host", "loop"),
    [
        ("127.0.0.1", True),
        ("127.3.2.1", True),
        ("localhost", True),
        ("::1", True),
        ("10.0.0.1", False),
        ("spark.example", False),
    ],
)
def test_is_loopback(host: str, loop: bool) -> None:
    assert is_loopback(host) is loop


def test_driver_binds_loopback_for_a_master_on_loopback(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SPARK_LOCAL_IP", "10.1.2.3")  # not consulted: the cluster is on loopback
    assert driver_address("spark://127.0.0.1:7077") == "127.0.0.1"
    assert driver_address("spark://localhost:7077,127.0.0.2:7078") == "127.0.0.1"


def test_remote_master_needs_spark_local_ip(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SPARK_LOCAL_IP", raising=False)
    with pytest.raises(ConfigError, match="set SPARK_LOCAL_IP") as e:
        driver_address("spark://spark.example:7077")
    assert "\n" not in str(e.value)
    monkeypatch.setenv("SPARK_LOCAL_IP", "10.1.2.3")
    assert driver_address("spark://spark.example:7077") == "10.1.2.3"
    assert driver_address("yarn") == "10.1.2.3"  # no host to judge by: the user's address


def test_scala_version_from_the_spark_core_jar(tmp_path: Path) -> None:
    (tmp_path / "spark-core_2.13-4.3.0.jar").write_bytes(b"")
    (tmp_path / "scala-library-2.13.18.jar").write_bytes(b"")
    assert scala_version(tmp_path) == "2.13"


def test_scala_version_without_spark_jars_is_an_environment_problem(tmp_path: Path) -> None:
    with pytest.raises(EnvironmentProblem, match="no spark-core"):
        scala_version(tmp_path)
