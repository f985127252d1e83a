"""librdkafka fetching through a leader re-election on real processes: three replicating broker processes, a
real ZooKeeper, an unmodified librdkafka consumer (confluent-kafka) with its partitions assigned by hand.

The replicated Metadata gives no leader epoch (-1), and librdkafka sends 0 in its place in Fetch to a broker that
serves Metadata v9+. A broker dies: the controller re-elects every partition it was a replica of, which raises
each partition's leader epoch to 1. The consumer keeps fetching from the new leaders: every record produced after
the re-election reaches it. Expected counts are chosen by hand below.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from harness.cluster.broker import BrokerProcess
from tests.support.broker_cluster import PARTITIONS, TOPIC, bootstrap_of, three_brokers
from tests.support.brokers import BrokerFactory
from tests.support.waiting import wait_until

RECORDS = 5  # per partition, before the death and again after it
KILLED = 0


def _produce(bootstrap: str, tag: str) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all"})
    for p in range(PARTITIONS):
        for i in range(RECORDS):
            producer.produce(TOPIC, value=f"{tag}-{p}-{i}".encode(), partition=p)
    assert producer.flush(60) == 0


def _leader_epochs(brokers: list[BrokerProcess]) -> dict[int, int]:
    """The newest leader epoch of each partition of :data:`TOPIC` that a live broker took the leadership at."""
    epochs: dict[int, int] = {}
    for b in brokers:
        if b.broker_id == KILLED or b.history_path is None or not b.history_path.exists():
            continue
        for line in b.history_path.read_text().splitlines():
            if not line.endswith("}"):
                continue
            e = json.loads(line)
            if e["kind"] == "leadership" and e.get("topic") == TOPIC and e.get("replica_role") == "leader":
                epochs[e["partition"]] = max(epochs.get(e["partition"], -1), e["leader_epoch"])
    return epochs


@pytest.mark.long
def test_librdkafka_keeps_fetching_after_the_leaders_are_re_elected(
    fresh_zookeeper: Any, broker_factory: BrokerFactory
) -> None:
    brokers = three_brokers(fresh_zookeeper, broker_factory)
    everyone = bootstrap_of(brokers)
    _produce(everyone, "before")
    consumer = Consumer(
        {
            "bootstrap.servers": everyone,
            "group.id": "epoch-reader",
            "enable.auto.commit": False,
            "topic.metadata.refresh.interval.ms": 1000,
        }
    )
    got: dict[int, int] = dict.fromkeys(range(PARTITIONS), 0)

    def read_up_to(count: int) -> bool:
        msg = consumer.poll(0.2)
        if msg is not None and msg.error() is None and (p := msg.partition()) is not None:
            got[p] += 1
        return got == dict.fromkeys(range(PARTITIONS), count)

    try:
        consumer.assign([TopicPartition(TOPIC, p, 0) for p in range(PARTITIONS)])
        wait_until(lambda: read_up_to(RECORDS), timeout=30, what="the records produced before the death")
        brokers[KILLED].kill()
        # every partition had broker 0 as a replica (replication 3): each is re-elected at epoch 1
        wait_until(
            lambda: _leader_epochs(brokers) == dict.fromkeys(range(PARTITIONS), 1),
            timeout=40,
            what="every partition led at leader epoch 1 by a survivor",
        )
        _produce(bootstrap_of(brokers, but=KILLED), "after")
        wait_until(
            lambda: read_up_to(2 * RECORDS), timeout=30, what="the records produced after the re-election"
        )
    finally:
        consumer.close()
