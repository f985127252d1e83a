"""The java member's pure parts: its scenario keys (client version, properties checked against the names the
build dumped, the consumer group protocol's refusals), its command line and what is missing to run it. The
build is faked by writing what it leaves in the cache (a real build is the ``clients`` tests')."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.kernel import jvm
from harness.kernel.errors import ConfigError
from harness.members import java_dist
from harness.members.jvm_build import digest
from harness.members.recorder import MemberConfig
from harness.run.launch import Endpoints, coordinator_argv
from harness.scenario import load_scenario
from harness.scenario.properties import (
    check_client_properties,
    check_client_version,
    coordinator_properties,
    java_config_names,
)

#: Some of ConsumerConfig.configNames() (the real dump has some sixty)
NAMES = [
    "session.timeout.ms",
    "heartbeat.interval.ms",
    "max.poll.interval.ms",
    "partition.assignment.strategy",
    "auto.commit.interval.ms",
    "enable.auto.commit",
    "metadata.max.age.ms",
    "fetch.max.wait.ms",
    "group.protocol",
    "auto.offset.reset",
]


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("HERDLAB_CACHE_DIR", str(tmp_path))
    return tmp_path


def _fake_build(cache: Path, version: str, names: list[str] = NAMES) -> Path:
    where = cache / "java-member" / version
    where.mkdir(parents=True)
    (where / "config-names.json").write_text(json.dumps(names))
    (where / java_dist.MARKER).write_text(
        json.dumps({"version": version, "source": digest(java_dist.source())})
    )
    return where


def test_properties_are_checked_against_the_names_the_build_of_that_version_dumped(cache: Path) -> None:
    _fake_build(cache, "4.1.1", [*NAMES, "only.in.four"])
    _fake_build(cache, "3.9.2")
    check_client_properties("java", {"only.in.four": 1}, "4")
    with pytest.raises(ValueError, match="^unknown java property 'only.in.four'$"):
        check_client_properties("java", {"only.in.four": 1})  # the default: the 3.9 line
    assert "fetch.max.wait.ms" in java_config_names("3.9")


def test_an_unbuilt_versions_names_wait_for_its_build_but_the_protocol_check_does_not(cache: Path) -> None:
    assert java_config_names("4") is None
    check_client_properties("java", {"no.such.name": 5}, "4")  # checked once a run has built it
    with pytest.raises(ValueError, match="'session.timeout.ms' cannot be set with group.protocol=consumer"):
        check_client_properties("java", {"group.protocol": "consumer", "session.timeout.ms": 6000}, "4")


def test_the_harness_properties_are_refused_for_java_as_for_the_others(cache: Path) -> None:
    _fake_build(cache, "3.9.2", [*NAMES, "group.id"])
    with pytest.raises(ValueError, match="'group.id' is set by the harness"):
        check_client_properties("java", {"group.id": "x"})


def test_the_consumer_group_protocol_drops_the_typed_shorthands_and_refuses_them_given_by_name(
    cache: Path,
) -> None:
    _fake_build(cache, "4.1.1")
    typed = {
        "session_timeout_ms": 6000,
        "heartbeat_interval_ms": 500,
        "max_poll_interval_ms": 30000,
        "auto_commit_interval_ms": 5000,
        "metadata_max_age_ms": 300000,
    }
    props = coordinator_properties(typed, {"group.protocol": "consumer"}, "range", "java")
    assert props == {
        "max.poll.interval.ms": "30000",
        "auto.commit.interval.ms": "5000",
        "metadata.max.age.ms": "300000",
        "group.protocol": "consumer",
    }
    check_client_properties("java", props, "4")
    with pytest.raises(
        ValueError, match="java property 'session.timeout.ms' cannot be set with group.protocol=consumer"
    ):
        check_client_properties("java", {"group.protocol": "CONSUMER", "session.timeout.ms": 6000}, "4")
    # the classic protocol (and every other client) keeps them
    classic = coordinator_properties(typed, {}, "range", "java")
    assert classic["session.timeout.ms"] == "6000" and classic["partition.assignment.strategy"] == "range"


@pytest.mark.parametrize(
    ("client", "version", "error"),
    [
        ("java", None, None),
        ("java", "3.9", None),
        ("java", "4", None),
        ("java", "4.0.0", None),
        ("java", "five", "java client version 'five': expected 3.9, 4 or an exact kafka-clients version"),
        ("kafka-python", "2.0", "client 'kafka-python' has one version"),
        ("kafka-python", None, None),
    ],
)
def test_a_client_version_is_for_java_only(client: str, version: str | None, error: str | None) -> None:
    if error is None:
        check_client_version(client, version)
    else:
        with pytest.raises(ValueError, match=error):
            check_client_version(client, version)


def test_a_scenarios_client_version_reaches_the_members_command_line(cache: Path) -> None:
    _fake_build(cache, "4.1.1")
    s = load_scenario(
        "herd-small",
        [
            'implementations=["coordinator"]',
            'group.coordinator.client="java"',
            'group.coordinator.client_version="4"',
        ],
    )
    argv = coordinator_argv(s, "m0", Endpoints("", "127.0.0.1:9"), Path("h.jsonl"), "g", "t")
    assert argv[argv.index("--client") + 1] == "java"
    assert argv[argv.index("--client-version") + 1] == "4"
    with pytest.raises(ConfigError, match="client 'kafka-python' has one version"):
        load_scenario(
            "herd-small", ['implementations=["coordinator"]', 'group.coordinator.client_version="4"']
        )
    with pytest.raises(ConfigError, match="unknown java property 'no.such'"):
        load_scenario(
            "herd-small",
            [
                'implementations=["coordinator"]',
                'group.coordinator.client="java"',
                'group.coordinator.client_version="4"',
                'group.coordinator.properties={"no.such"=1}',
            ],
        )


def test_the_command_is_java_the_member_jvm_options_the_build_and_the_poll_window(
    cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    where = _fake_build(cache, "3.9.2")
    monkeypatch.delenv(jvm.env_var("member"), raising=False)
    config = MemberConfig(
        bootstrap="b:1", group="g", topic="t", name="m0", client="java", poll_timeout_ms=150
    )
    argv = java_dist.command(config)
    assert argv[0].endswith("java")
    assert argv[1:-5] == jvm.options("member", heap_mb=java_dist.HEAP_MB, name="m0")
    assert argv[-5:] == [
        "-cp",
        f"{where / 'classes'}:{where / 'libs' / '*'}",
        "HerdlabMember",
        "--poll-ms",
        "150",
    ]


def test_a_build_of_another_program_source_is_not_used(cache: Path) -> None:
    where = _fake_build(cache, "3.9.2")
    (where / java_dist.MARKER).write_text(json.dumps({"version": "3.9.2", "source": "an older program"}))
    config = MemberConfig(bootstrap="b:1", group="g", topic="t", name="m0", client="java")
    with pytest.raises(ConfigError, match="not built: run `herdlab clients build java`"):
        java_dist.command(config)


def test_missing_names_the_tool_that_is_not_on_path(
    cache: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    monkeypatch.setenv("PATH", str(bin_dir))
    assert java_dist.missing("java", None) == "java not found on PATH: install a JDK 17 or newer"
    for tool in ("java", "javac"):
        (bin_dir / tool).write_text("#!/bin/sh\n")
        (bin_dir / tool).chmod(0o755)
    assert (
        java_dist.missing("java", "4")
        == "mvn not found on PATH: install Maven (it resolves kafka-clients for the java member)"
    )
    _fake_build(cache, "4.1.1")
    assert java_dist.missing("java", "4") is None  # built: java is enough
    with pytest.raises(ConfigError, match="not built by harness.members.java_dist"):
        java_dist.missing("kafka-go", None)


def test_the_consumer_protocol_needs_a_broker_that_serves_it() -> None:
    java = [
        'implementations=["coordinator"]',
        'group.coordinator.client="java"',
        'group.coordinator.client_version="4"',
    ]
    consumer = 'group.coordinator.properties={"group.protocol"="consumer"}'
    with pytest.raises(
        ConfigError, match=r"group.protocol = 'consumer' \(KIP-848\) needs a broker .*not 'herdlab'\)"
    ):
        load_scenario("herd-small", [*java, consumer])
    with pytest.raises(ConfigError, match=r"not 'apache-kafka' 3\.9\)"):
        load_scenario("herd-small", [*java, consumer, 'cluster.broker="apache-kafka"'])
    s = load_scenario(
        "herd-small", [*java, consumer, 'cluster.broker="apache-kafka"', 'cluster.kafka_version="4"']
    )
    assert s.group.coordinator.properties["group.protocol"] == "consumer"
