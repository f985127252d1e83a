"""The replicated data path with the real ZooKeeper shell: three in-process brokers on real sockets,
a real ZooKeeper server, the controller's elections, unmodified kafka-python. A topic with replication factor 3
takes acks=all produces; its leader stops (its session closes, the controller elects a new leader from the
ISR) and every acknowledged record is still there, the new ones after them.

Needs the ZooKeeper shell's replicated mode (``ZkRegistration(..., sink=, history=)``); skipped without it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import KafkaAdminClient, NewTopic

from coordinator.config import BrokerConfig, ReplicationConfig
from coordinator.inprocess import LoopThread
from coordinator.server import Broker
from harness.cluster.zookeeper import ZooKeeperServer
from tests.support.replicas import ListHistory
from tests.support.waiting import wait_until

T = "e2e"
IDS = (1, 2, 3)


@pytest.fixture
def brokers(
    fresh_zookeeper: ZooKeeperServer, tmp_path: Path
) -> Iterator[tuple[LoopThread, dict[int, Broker]]]:
    loop = LoopThread()
    started: dict[int, Broker] = {}
    try:
        for i in IDS:
            config = BrokerConfig(
                broker_id=i,
                zookeeper=fresh_zookeeper.connect_string,
                data_dir=tmp_path / f"b{i}",
                metrics_interval_s=0,
                replication=ReplicationConfig(enabled=True, replica_fetch_wait_max_ms=200),
            )
            started[i] = Broker(config, history=ListHistory())
            loop.run(started[i].start())
        wait_until(lambda: all(len(b.cluster.peers) == 2 for b in started.values()), what="peers registered")
        yield loop, started
    finally:
        for b in started.values():
            loop.run(b.stop())
        loop.close()


def _info(loop: LoopThread, broker: Broker) -> Any:
    return loop.call(lambda: broker.cluster.partition_info(T, 0))  # type: ignore[attr-defined]


def _produce(bootstrap: list[str], values: list[bytes]) -> list[int]:
    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all", retries=20, request_timeout_ms=10_000)
    try:
        futures = [producer.send(T, value=v, partition=0) for v in values]
        return [f.get(timeout=30).offset for f in futures]
    finally:
        producer.close()


def test_acknowledged_records_survive_the_leaders_stop(brokers: tuple[LoopThread, dict[int, Broker]]) -> None:
    loop, started = brokers
    bootstrap = [f"127.0.0.1:{b.port}" for b in started.values()]
    admin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=15_000)
    try:
        admin.create_topics([NewTopic(T, num_partitions=1, replication_factor=3)])
    finally:
        admin.close()
    wait_until(
        lambda: all((i := _info(loop, b)) is not None and i.leader >= 0 for b in started.values()),
        timeout=20,
        what="a leader every broker knows",
    )
    first = [f"r{i}".encode() for i in range(30)]
    assert _produce(bootstrap, first) == list(range(30))
    old = _info(loop, started[1]).leader
    assert sorted(_info(loop, started[1]).isr) == [1, 2, 3]
    loop.run(started[old].stop())  # its ZooKeeper session closes: the controller elects from the ISR
    rest = {i: b for i, b in started.items() if i != old}
    wait_until(
        lambda: all((i := _info(loop, b)) is not None and i.leader not in (-1, old) for b in rest.values()),
        timeout=30,
        what="a new leader",
    )
    new = _info(loop, next(iter(rest.values()))).leader
    assert new in rest
    survivors = [f"127.0.0.1:{b.port}" for b in rest.values()]
    after = [f"s{i}".encode() for i in range(10)]
    assert _produce(survivors, after) == list(range(30, 40))
    consumer = KafkaConsumer(bootstrap_servers=survivors, enable_auto_commit=False)
    tp = TopicPartition(T, 0)
    consumer.assign([tp])
    consumer.seek_to_beginning(tp)
    got: list[tuple[int, bytes]] = []
    try:
        wait_until(
            lambda: (
                got.extend((r.offset, r.value) for rs in consumer.poll(300).values() for r in rs)
                or len(got) >= 40
            ),
            timeout=30,
            what="40 records",
        )
    finally:
        consumer.close()
    assert got == list(enumerate(first + after))
    history = started[new].history
    assert isinstance(history, ListHistory)
    assert [(e["replica_role"], e["leader"]) for e in history.of("leadership")][-1] == ("leader", new)
