"""0.8 property names, defaults and validation."""

from __future__ import annotations

import pytest

from harness.kernel.errors import ConfigError
from legacy_zk.config import ConsumerConfig, parse_properties, read_properties_file


def cfg(**kw) -> ConsumerConfig:
    kw.setdefault("topics", {"t": 1})
    return ConsumerConfig(group_id="g", zookeeper_connect="127.0.0.1:2181", **kw)


def test_defaults_are_those_of_0_8() -> None:
    c = cfg().validate()
    props = c.as_properties()
    assert props["zookeeper.session.timeout.ms"] == 6000
    assert props["zookeeper.connection.timeout.ms"] == 6000  # = session timeout
    assert props["rebalance.max.retries"] == 4
    assert props["rebalance.backoff.ms"] == 2000  # = zookeeper.sync.time.ms
    assert props["auto.commit.enable"] is True and props["auto.commit.interval.ms"] == 60000
    assert props["partition.assignment.strategy"] == "range" and props["auto.offset.reset"] == "largest"
    assert props["takeover.delay.ms"] == 0 and props["offsets.commit.fenced"] is False
    # the ZooKeeper 3.4.6 Java client with one server: 1000 ms + random 0..999 ms between attempts
    assert props["herdlab.zk.reconnect.delay.ms"] == 1000 and props["herdlab.zk.reconnect.random.ms"] == 1000


def test_backoff_follows_sync_time_unless_set() -> None:
    assert cfg(zookeeper_sync_time_ms=500).backoff_ms == 500
    assert cfg(zookeeper_sync_time_ms=500, rebalance_backoff_ms=100).backoff_ms == 100


def test_properties_parse_to_attributes() -> None:
    attrs = parse_properties(
        {"rebalance.max.retries": "7", "auto.commit.enable": "false", "consumer.id": "x"}
    )
    assert attrs == {"rebalance_max_retries": 7, "auto_commit_enable": False, "consumer_id": "x"}
    assert parse_properties(
        {"herdlab.zk.reconnect.random.ms": "0", "herdlab.zk.reconnect.delay.ms": "250"}
    ) == {
        "zk_reconnect_random_ms": 0,
        "zk_reconnect_delay_ms": 250,
    }


@pytest.mark.parametrize(
    ("props", "message"),
    [
        ({"rebalance.max.retrys": "3"}, "unknown consumer property"),
        ({"rebalance.max.retries": "many"}, "rebalance.max.retries"),
        ({"auto.commit.enable": "perhaps"}, "auto.commit.enable"),
    ],
)
def test_bad_properties_name_the_property(props: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        parse_properties(props)


@pytest.mark.parametrize(
    ("kw", "message"),
    [
        ({"rebalance_max_retries": 0}, "rebalance.max.retries"),
        ({"partition_assignment_strategy": "sticky"}, "partition.assignment.strategy"),
        ({"auto_offset_reset": "earliest"}, "auto.offset.reset"),
        ({"offsets_storage": "cassandra"}, "offsets.storage"),
        ({"zookeeper_session_timeout_ms": 0}, "zookeeper.session.timeout.ms"),
        ({"zk_reconnect_delay_ms": -1}, "herdlab.zk.reconnect.delay.ms"),
        ({"zk_reconnect_random_ms": -5}, "herdlab.zk.reconnect.random.ms"),
        ({"topics": {}}, "topic"),
    ],
)
def test_validation_names_the_property(kw: dict, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        cfg(**kw).validate()


def test_properties_file(tmp_path) -> None:
    f = tmp_path / "consumer.properties"
    f.write_text("# comment\ngroup.id = g2\nrebalance.backoff.ms: 100\n\n! other\n")
    assert read_properties_file(str(f)) == {"group.id": "g2", "rebalance.backoff.ms": "100"}
    with pytest.raises(ConfigError, match="cannot read"):
        read_properties_file(str(tmp_path / "missing"))
