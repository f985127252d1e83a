"""Consumer groups (KIP-848) through a coordinator failover on real processes: three replicating broker processes,
a real ZooKeeper, librdkafka members with ``group.protocol=consumer``. The group's coordinator is killed (SIGKILL):
its successor loads the group from ``__consumer_offsets`` (members, epochs, offsets), the members keep owning every
partition once without rejoining, and every commit acknowledged before the kill is still there."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Producer

from harness.cluster.broker import BrokerProcess
from harness.faults.kafka_probe import fetch_offsets, find_coordinator
from tests.support.broker_cluster import PARTITIONS, REPLICATION, TOPIC, bootstrap_of, three_brokers
from tests.support.brokers import BrokerFactory
from tests.support.kip848_member import Kip848Members
from tests.support.waiting import wait_until

RECORDS = 5
CONSUMER = [
    "--consumer-heartbeat-interval-ms",
    "500",
    "--consumer-min-heartbeat-interval-ms",
    "500",
    "--consumer-session-timeout-ms",
    "10000",
    "--consumer-min-session-timeout-ms",
    "1000",
]


def _heartbeats(broker: BrokerProcess, group: str) -> list[dict[str, Any]]:
    assert broker.history_path is not None
    if not broker.history_path.exists():
        return []
    events = [json.loads(x) for x in broker.history_path.read_text().splitlines() if x.endswith("}")]
    return [
        e
        for e in events
        if e["kind"] == "group_request" and e["api"] == "ConsumerGroupHeartbeat" and e.get("group") == group
    ]


@pytest.mark.long
def test_a_consumer_group_survives_its_coordinators_death(
    fresh_zookeeper: Any, broker_factory: BrokerFactory, tmp_path: Path
) -> None:
    def factory(**kw: Any) -> BrokerProcess:
        return broker_factory(**{**kw, "extra_args": [*REPLICATION, *CONSUMER]})

    brokers = three_brokers(fresh_zookeeper, factory)
    everyone = bootstrap_of(brokers)
    producer = Producer({"bootstrap.servers": everyone, "acks": "all"})
    for p in range(PARTITIONS):
        for i in range(RECORDS):
            producer.produce(TOPIC, value=f"{p}-{i}".encode(), partition=p)
    assert producer.flush(60) == 0
    members = Kip848Members(everyone, "cg-kill", TOPIC, tmp_path, "--commit")
    try:
        members.start("a")
        members.start("b")

        def committed_all() -> bool:
            got: dict[int, int] = {}
            for n in ("a", "b"):
                for e in members.events(n):
                    if e["kind"] == "committed":
                        got[e["partition"]] = max(got.get(e["partition"], 0), e["offset"])
            return got == dict.fromkeys(range(PARTITIONS), RECORDS)

        wait_until(
            lambda: members.owned_once(PARTITIONS, ["a", "b"]), timeout=60, what="a and b own the topic"
        )
        wait_until(committed_all, timeout=60, what="every record committed (each partition at 5)")
        coordinator = find_coordinator(everyone, "cg-kill")
        assert coordinator is not None
        epochs = {
            e["member"]: e["epoch"] for e in _heartbeats(brokers[coordinator], "cg-kill") if "error" not in e
        }
        brokers[coordinator].kill()

        survivors = bootstrap_of(brokers, but=coordinator)
        successor = wait_until(
            lambda: (
                (c := find_coordinator(survivors, "cg-kill", timeout=2.0)) not in (None, coordinator) and c
            ),
            timeout=40,
            what="a new coordinator",
        )
        # the successor serves both members at the epochs they had: their steady heartbeats are answered
        wait_until(
            lambda: (
                {
                    e["member"]
                    for e in _heartbeats(brokers[successor], "cg-kill")
                    if "error" not in e and e["change"] is False and e["epoch"] == epochs.get(e["member"])
                }
                == set(epochs)
            ),
            timeout=60,
            what="both members' steady heartbeats answered by the successor",
        )
        assert members.owned_once(PARTITIONS, ["a", "b"])
        assert not any(e["kind"] == "lost" for n in ("a", "b") for e in members.events(n))
        answer = fetch_offsets(survivors, "cg-kill", TOPIC, PARTITIONS, timeout=30)
        assert answer.error is None and answer.broker_id == successor
        assert answer.offsets == {f"{TOPIC}/{p}": RECORDS for p in range(PARTITIONS)}
    finally:
        members.stop_all()
