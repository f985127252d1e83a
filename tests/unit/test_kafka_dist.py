"""Apache Kafka's distribution and broker configuration (harness.cluster.kafka_dist, .apache_kafka), pure parts."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.cluster.apache_kafka import broker_properties
from harness.cluster.kafka_dist import LINES, KafkaHome, kafka_home, resolve_version, zookeeper_mode
from harness.kernel.errors import ConfigError
from harness.scenario import load_scenario
from harness.scenario.brokers import kafka_broker_settings


@pytest.mark.parametrize(
    ("given", "exact"),
    [(None, LINES["3.9"]), ("3.9", LINES["3.9"]), ("4", LINES["4"]), ("4.1", LINES["4"]), ("3.9.1", "3.9.1")],
)
def test_versions_resolve_to_an_exact_one(given: str | None, exact: str) -> None:
    assert resolve_version(given) == exact


def test_a_malformed_version_is_a_one_line_error() -> None:
    with pytest.raises(ConfigError, match="expected 3.9, 4 or an exact version"):
        resolve_version("latest")


def test_3_x_runs_in_zookeeper_mode_and_4_x_in_kraft() -> None:
    assert (zookeeper_mode("3.9.2"), zookeeper_mode("4.1.1")) == (True, False)


def test_without_a_fetched_copy_or_a_home_the_error_says_how_to_get_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HERDLAB_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("HERDLAB_KAFKA_HOME", raising=False)
    with pytest.raises(ConfigError) as e:
        kafka_home("4")
    assert str(e.value) == (
        f"Apache Kafka {LINES['4']} is not fetched: run `herdlab kafka fetch {LINES['4']}`, or give --kafka-home "
        "DIR (or HERDLAB_KAFKA_HOME) with an unpacked Apache Kafka distribution"
    )


def test_an_unpacked_distribution_is_found_by_its_core_jar(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "libs").mkdir()
    (tmp_path / "libs" / "kafka-clients-3.8.0.jar").touch()
    (tmp_path / "libs" / "kafka_2.13-3.8.0.jar").touch()
    monkeypatch.setenv("HERDLAB_KAFKA_HOME", str(tmp_path))
    assert kafka_home("3.9") == KafkaHome(tmp_path, "3.8.0")  # the distribution's own version wins
    with pytest.raises(ConfigError, match="is not an Apache Kafka distribution"):
        kafka_home(None, tmp_path / "libs")
    # a ZooKeeper-mode distribution for a scenario checked for KRaft (or the other way round): refused
    with pytest.raises(ConfigError) as e:
        kafka_home("4")
    assert str(e.value) == (
        f"{tmp_path} is Apache Kafka 3.8.0 (ZooKeeper mode) but the scenario asks for 4 (KRaft): give a "
        "distribution of that line, or set cluster.kafka_version to match it"
    )


def test_a_run_needing_an_unfetched_version_stops_before_anything_starts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from harness.run.session import SessionRequest, prepare

    monkeypatch.setenv("HERDLAB_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("HERDLAB_KAFKA_HOME", raising=False)
    with pytest.raises(ConfigError, match=f"Apache Kafka {LINES['3.9']} is not fetched"):
        prepare(SessionRequest("reference", out=tmp_path / "out"))
    assert not (tmp_path / "out").exists()
    with pytest.raises(
        ConfigError, match="--kafka-home needs a scenario with cluster.broker = 'apache-kafka'"
    ):
        prepare(SessionRequest("herd-small", out=tmp_path / "out", kafka_home=tmp_path))


def test_zookeeper_mode_properties(tmp_path: Path) -> None:
    home = KafkaHome(tmp_path, "3.9.2")
    p = broker_properties(home, tmp_path / "data", (9001, 9002, 9003), 9100, "127.0.0.1:2181", {"x.y": "1"})
    # clients on 9001 are told the tap's 9100; the broker's own traffic stays on INTERNAL 9002
    assert p["listeners"] == "PLAINTEXT://127.0.0.1:9001,INTERNAL://127.0.0.1:9002"
    assert p["advertised.listeners"] == "PLAINTEXT://127.0.0.1:9100,INTERNAL://127.0.0.1:9002"
    assert (p["inter.broker.listener.name"], p["zookeeper.connect"], p["broker.id"]) == (
        "INTERNAL",
        "127.0.0.1:2181",
        "0",
    )
    assert "process.roles" not in p and p["x.y"] == "1"
    assert (p["offsets.topic.replication.factor"], p["auto.create.topics.enable"]) == ("1", "false")


def test_kraft_properties(tmp_path: Path) -> None:
    p = broker_properties(KafkaHome(tmp_path, "4.1.1"), tmp_path / "data", (9001, 9002, 9003), 9100, None, {})
    assert p["process.roles"] == "broker,controller"
    assert p["controller.quorum.voters"] == "1@127.0.0.1:9003"
    assert (
        p["listeners"] == "PLAINTEXT://127.0.0.1:9001,INTERNAL://127.0.0.1:9002,CONTROLLER://127.0.0.1:9003"
    )
    assert (
        p["listener.security.protocol.map"] == "PLAINTEXT:PLAINTEXT,INTERNAL:PLAINTEXT,CONTROLLER:PLAINTEXT"
    )
    assert "zookeeper.connect" not in p


def test_the_scenario_s_broker_settings_by_their_kafka_names() -> None:
    s = load_scenario(
        "herd-small",
        ["group.coordinator.initial_rebalance_delay_ms=250", "group.coordinator.min_session_timeout_ms=1000"],
    )
    assert kafka_broker_settings(s) == {
        "group.initial.rebalance.delay.ms": "250",
        "group.min.session.timeout.ms": "1000",
        "group.max.session.timeout.ms": "1800000",
        "auto.create.topics.enable": "false",
    }


def test_legacy_members_run_on_apache_kafka_3_9_only() -> None:
    s = load_scenario("herd-small", ["cluster.broker=apache-kafka", "cluster.kafka_version=3.9"])
    assert s.cluster.kafka_version == "3.9"  # a TOML number reads as the version it spells
    with pytest.raises(ConfigError, match="Apache Kafka 3.9 \\(ZooKeeper mode\\)"):
        load_scenario("herd-small", ["cluster.broker=apache-kafka", "cluster.kafka_version=4"])
    s = load_scenario(
        "herd-small",
        ["cluster.broker=apache-kafka", "cluster.kafka_version=4", 'implementations=["coordinator"]'],
    )
    assert s.cluster.kafka_version == "4"


def test_a_kraft_cluster_id_never_starts_with_a_hyphen(monkeypatch: pytest.MonkeyPatch) -> None:
    # 0xf8 as the first byte makes the first base64 digit 62, which URL-safe base64 writes "-"; the storage
    # tool would then read "-t -..." as two options (Kafka's Uuid.randomUuid draws again for this reason)
    import uuid

    from harness.cluster import apache_kafka

    draws = iter([uuid.UUID(bytes=b"\xf8" + b"\x00" * 15), uuid.UUID(bytes=b"\x01" * 16)])
    monkeypatch.setattr(apache_kafka.uuid, "uuid4", lambda: next(draws))
    assert apache_kafka.cluster_id() == "AQEBAQEBAQEBAQEBAQEBAQ"
