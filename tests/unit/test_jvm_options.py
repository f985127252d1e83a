"""The JVM settings (harness.kernel.jvm): each kind's default options in command-line order with their
placeholders filled, every option with a reason, and the per-kind environment override. Expected
command lines are written out by hand; the last tests check that the launchers put exactly these
options on the JVMs' command lines."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from harness.kernel import jvm

NO_ENV: dict[str, str] = {}


def test_zookeeper_defaults_fill_heap_log_configuration_and_name() -> None:
    assert jvm.options("zookeeper", NO_ENV, heap_mb=256, log4j="/w/log4j2.properties", name="zk-0") == [
        "-Xmx256m",
        "-Xms32m",
        "-XX:+UseSerialGC",
        "-Djava.net.preferIPv4Stack=true",
        "-Dlog4j2.configurationFile=/w/log4j2.properties",
        "-Dzookeeper.admin.enableServer=false",
        "-Dzookeeper.jmx.log4j.disable=true",
        "-Dherdlab.name=zk-0",
    ]


def test_kafka_defaults_end_with_the_log_configuration() -> None:
    assert jvm.options("kafka", NO_ENV, log_config="-Dlog4j2.configurationFile=/w/l.properties") == [
        "-Xms256m",
        "-Xmx768m",
        "-XX:+UseG1GC",
        "-XX:MaxGCPauseMillis=20",
        "-XX:InitiatingHeapOccupancyPercent=35",
        "-XX:ParallelGCThreads=2",
        "-XX:ConcGCThreads=1",
        "-XX:+ExitOnOutOfMemoryError",
        "-Djava.awt.headless=true",
        "-Dlog4j2.configurationFile=/w/l.properties",
    ]


def test_spark_driver_defaults_are_the_parallel_collector_then_the_compiler_thresholds() -> None:
    got = jvm.options("spark", NO_ENV)
    assert got[:6] == [
        "-XX:+UseParallelGC",
        "-XX:Tier4InvocationThreshold=50000",
        "-XX:Tier4MinInvocationThreshold=6000",
        "-XX:Tier4CompileThreshold=150000",
        "-XX:Tier4BackEdgeThreshold=400000",
        "-XX:CompileCommand=quiet",
    ]
    scaled = got[6:]
    assert len(scaled) == 9  # one per planning package
    assert scaled[0] == "-XX:CompileCommand=CompileThresholdScaling,org/codehaus/janino/*.*,10.0"
    assert scaled[-1] == "-XX:CompileCommand=CompileThresholdScaling,jdk/internal/org/objectweb/*.*,10.0"


def test_spark_daemon_defaults() -> None:
    assert jvm.options("spark_daemon", NO_ENV, name="spark-master") == [
        "-Xmx256m",
        "-XX:+UseSerialGC",
        "-Djava.net.preferIPv4Stack=true",
        "-Dspark.master.rest.enabled=false",
        "-Dherdlab.name=spark-master",
    ]


def test_member_defaults() -> None:
    assert jvm.options("member", NO_ENV, heap_mb=64, name="m0") == [
        "-Xmx64m",
        "-Xms16m",
        "-XX:+UseSerialGC",
        "-XX:TieredStopAtLevel=1",
        "-Xss512k",
        "-XX:+ExitOnOutOfMemoryError",
        "-Djava.net.preferIPv4Stack=true",
        "-Dherdlab.name=m0",
    ]


def test_every_option_of_every_kind_has_a_one_line_reason() -> None:
    assert set(jvm.KINDS) == {"zookeeper", "kafka", "spark", "spark_daemon", "member"}
    for kind, opts in jvm.KINDS.items():
        assert opts, kind
        for o in opts:
            assert o.flag.startswith(("-X", "-D", "{")), (kind, o.flag)
            assert o.reason.strip() and "\n" not in o.reason, (kind, o.flag)


@pytest.mark.parametrize(
    ("kind", "var"),
    [
        ("zookeeper", "HERDLAB_JVM_ZOOKEEPER_OPTS"),
        ("kafka", "HERDLAB_JVM_KAFKA_OPTS"),
        ("spark", "HERDLAB_JVM_SPARK_OPTS"),
        ("spark_daemon", "HERDLAB_JVM_SPARK_DAEMON_OPTS"),
        ("member", "HERDLAB_JVM_MEMBER_OPTS"),
    ],
)
def test_each_kind_has_its_environment_variable(kind: str, var: str) -> None:
    assert jvm.env_var(kind) == var


def test_the_override_replaces_the_kinds_options_and_may_use_placeholders() -> None:
    env = {"HERDLAB_JVM_ZOOKEEPER_OPTS": "-Xmx{heap_mb}m -XX:+UseZGC '-Dherdlab.name={name} x'"}
    assert jvm.options("zookeeper", env, heap_mb=64, log4j="/l", name="zk-1") == [
        "-Xmx64m",
        "-XX:+UseZGC",
        "-Dherdlab.name=zk-1 x",
    ]


def test_the_override_of_one_kind_leaves_the_others_alone() -> None:
    env = {"HERDLAB_JVM_SPARK_OPTS": "-XX:+UseG1GC"}
    assert jvm.options("spark", env) == ["-XX:+UseG1GC"]
    assert jvm.options("spark_daemon", env, name="w")[0] == "-Xmx256m"


def test_an_empty_override_passes_no_options() -> None:
    assert jvm.options("kafka", {"HERDLAB_JVM_KAFKA_OPTS": ""}, log_config="-Dx") == []


def test_an_unknown_kind_is_an_error() -> None:
    with pytest.raises(KeyError):
        jvm.options("cassandra", NO_ENV)


def test_the_zookeeper_command_line_carries_exactly_the_kinds_options(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from harness.cluster.zookeeper import server_argv

    monkeypatch.delenv("HERDLAB_JVM_ZOOKEEPER_OPTS", raising=False)
    argv = server_argv(
        "java", ["/a.jar", "/b.jar"], 256, Path("/w/log4j2.properties"), "zk-0", Path("/w/zoo.cfg")
    )
    assert argv == [
        "java",
        "-Xmx256m",
        "-Xms32m",
        "-XX:+UseSerialGC",
        "-Djava.net.preferIPv4Stack=true",
        "-Dlog4j2.configurationFile=/w/log4j2.properties",
        "-Dzookeeper.admin.enableServer=false",
        "-Dzookeeper.jmx.log4j.disable=true",
        "-Dherdlab.name=zk-0",
        "-cp",
        "/a.jar:/b.jar",
        "org.apache.zookeeper.server.quorum.QuorumPeerMain",
        "/w/zoo.cfg",
    ]
    monkeypatch.setenv("HERDLAB_JVM_ZOOKEEPER_OPTS", "-Xmx1g")
    assert server_argv("java", ["/a.jar"], 256, Path("/l"), "zk", Path("/c"))[:3] == ["java", "-Xmx1g", "-cp"]


def test_the_zookeeper_container_gets_the_kinds_options_one_a_line_and_the_override() -> None:
    from harness.cluster.container_services import zookeeper_env

    assert zookeeper_env(Path("/w/zk-0"), 256, "zk-0", NO_ENV) == {
        "ZK_JVM_OPTS": "-Xmx256m\n-Xms32m\n-XX:+UseSerialGC\n-Djava.net.preferIPv4Stack=true\n"
        "-Dlog4j2.configurationFile=/w/zk-0/log4j2.properties\n-Dzookeeper.admin.enableServer=false\n"
        "-Dzookeeper.jmx.log4j.disable=true\n-Dherdlab.name=zk-0"
    }
    given = {"HERDLAB_JVM_ZOOKEEPER_OPTS": "-Xmx{heap_mb}m '-Dx=a b'"}
    assert zookeeper_env(Path("/w"), 64, "zk", given) == {"ZK_JVM_OPTS": "-Xmx64m\n-Dx=a b"}
    assert zookeeper_env(Path("/w"), 64, "zk", {"HERDLAB_JVM_ZOOKEEPER_OPTS": ""}) == {"ZK_JVM_OPTS": ""}


IMAGE_SCRIPT = Path(__file__).resolve().parents[2] / "harness" / "images" / "herdlab-zookeeper"


def _image_java_argv(tmp_path: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """Run the ZooKeeper image's entry point with a ``java`` that prints its arguments, one a line."""
    (tmp_path / "java").write_text('#!/bin/sh\nfor a in "$@"; do printf \'%s\\n\' "$a"; done\n')
    (tmp_path / "java").chmod(0o755)
    path = f"{tmp_path}:{os.environ['PATH']}"
    return subprocess.run(
        ["sh", str(IMAGE_SCRIPT), "/c"], env={"PATH": path, **env}, capture_output=True, text=True, timeout=30
    )


def test_the_zookeeper_image_passes_the_options_it_is_given_and_no_others_of_its_own(tmp_path: Path) -> None:
    done = _image_java_argv(tmp_path, {"ZK_JVM_OPTS": "-Xmx64m\n-Dx=a b*"})
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "-Xmx64m",
        "-Dx=a b*",
        "-Duser.home=/tmp",
        "-cp",
        "/opt/zookeeper/lib/*",
        "org.apache.zookeeper.server.quorum.QuorumPeerMain",
        "/c/zoo.cfg",
    ]
    assert _image_java_argv(tmp_path, {"ZK_JVM_OPTS": ""}).stdout.splitlines()[0] == "-Duser.home=/tmp"
    missing = _image_java_argv(tmp_path, {})
    assert missing.returncode != 0 and "ZK_JVM_OPTS" in missing.stderr and not missing.stdout


def test_the_kafka_command_line_names_the_log_configuration_of_its_mode(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from harness.cluster.apache_kafka import java_argv
    from harness.cluster.kafka_dist import KafkaHome

    monkeypatch.delenv("HERDLAB_JVM_KAFKA_OPTS", raising=False)
    zk_mode = java_argv("java", KafkaHome(Path("/k"), "3.9.1"), tmp_path)
    kraft = java_argv("java", KafkaHome(Path("/k"), "4.0.0"), tmp_path)
    assert zk_mode[-3:] == [f"-Dlog4j.configuration=file:{tmp_path}/log4j.properties", "-cp", "/k/libs/*"]
    assert kraft[-3:] == [f"-Dlog4j2.configurationFile={tmp_path}/log4j2.properties", "-cp", "/k/libs/*"]
    assert zk_mode[1:3] == ["-Xms256m", "-Xmx768m"] and len(zk_mode) == 1 + 10 + 2


def test_the_spark_daemon_command_line(monkeypatch: pytest.MonkeyPatch) -> None:
    from harness.cluster.spark_standalone import daemon_argv

    monkeypatch.delenv("HERDLAB_JVM_SPARK_DAEMON_OPTS", raising=False)
    assert daemon_argv("java", Path("/jars"), "org.example.Main", "spark-worker-0", ["--x"]) == [
        "java",
        "-Xmx256m",
        "-XX:+UseSerialGC",
        "-Djava.net.preferIPv4Stack=true",
        "-Dspark.master.rest.enabled=false",
        "-Dherdlab.name=spark-worker-0",
        "-cp",
        "/jars/*",
        "org.example.Main",
        "--x",
    ]
