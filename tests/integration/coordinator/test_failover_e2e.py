"""Coordinator failover on real processes: three replicating broker processes, a real ZooKeeper,
unmodified kafka-python clients.

* a group commits offsets (acknowledged with ``offsets.commit.required.acks = -1``), its coordinator is killed
  at once (SIGKILL): the successor returns every committed offset, every record acknowledged with acks=all is
  still there, and a new member of the group resumes exactly at the committed offsets;
* the coordinator is paused past its ZooKeeper session (a zombie) and resumed: a commit sent straight to it
  afterwards is not acknowledged, and what the group's real coordinator returns is unchanged.

Expected offsets are chosen by hand below. ZooKeeper runs with a 200 ms tick, so the brokers' 6 s session is
capped at 20 ticks = 4 s (``maxSessionTimeout``): that is how long a killed or paused broker takes to be
declared dead.
"""

from __future__ import annotations

import signal
import socket
import struct
from typing import Any

import pytest
from kafka import KafkaConsumer, KafkaProducer
from kafka.structs import OffsetAndMetadata, TopicPartition

from harness.faults.kafka_probe import fetch_offsets, find_coordinator
from tests.support.broker_cluster import PARTITIONS, TOPIC, bootstrap_of, three_brokers, wait_for
from tests.support.brokers import BrokerFactory

RECORDS_PER_PARTITION = 20


def _produce(bootstrap: str) -> None:
    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all", retries=5, request_timeout_ms=15000)
    try:
        for p in range(PARTITIONS):
            for i in range(RECORDS_PER_PARTITION):
                producer.send(TOPIC, value=f"{p}-{i}".encode(), partition=p)
        producer.flush(timeout=60)
    finally:
        producer.close()


def _commit_as_member(bootstrap: str, group: str, offsets: dict[int, int]) -> None:
    """Join ``group``, commit ``offsets`` synchronously (raises unless every partition was acknowledged), leave."""
    consumer = KafkaConsumer(
        TOPIC,
        bootstrap_servers=bootstrap,
        group_id=group,
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        session_timeout_ms=6000,
        heartbeat_interval_ms=500,
    )
    try:
        wait_for(
            lambda: consumer.poll(timeout_ms=200) is not None and len(consumer.assignment()) == PARTITIONS,
            60,
            "the member to own every partition",
        )
        consumer.commit({TopicPartition(TOPIC, p): OffsetAndMetadata(o, "", -1) for p, o in offsets.items()})
    finally:
        consumer.close()


def _first_offsets(bootstrap: str, group: str) -> dict[int, int]:
    """The first offset a new member of ``group`` processes on each partition."""
    consumer = KafkaConsumer(
        TOPIC,
        bootstrap_servers=bootstrap,
        group_id=group,
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        session_timeout_ms=6000,
        heartbeat_interval_ms=500,
    )
    first: dict[int, int] = {}
    try:

        def all_seen() -> bool:
            for tp, records in consumer.poll(timeout_ms=200).items():
                first.setdefault(tp.partition, records[0].offset)
            return len(first) == PARTITIONS

        wait_for(all_seen, 60, "records of every partition")
    finally:
        consumer.close()
    return first


def _log_end(bootstrap: str) -> dict[int, int]:
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, client_id="herdlab-harness")
    try:
        ends = consumer.end_offsets([TopicPartition(TOPIC, p) for p in range(PARTITIONS)])
    finally:
        consumer.close()
    return {tp.partition: o for tp, o in ends.items()}


@pytest.mark.long  # moved out of the default run (12-minute budget); CI's long step runs it
def test_a_killed_coordinators_successor_returns_every_committed_offset(
    fresh_zookeeper: Any, broker_factory: BrokerFactory
) -> None:
    brokers = three_brokers(fresh_zookeeper, broker_factory)
    everyone = bootstrap_of(brokers)
    _produce(everyone)
    committed = {0: 3, 1: 11, 2: 17}  # by hand: below the 20 records of each partition
    _commit_as_member(everyone, "g-kill", committed)
    coordinator = find_coordinator(everyone, "g-kill")
    assert coordinator is not None
    brokers[coordinator].kill()  # right after the acknowledged commit

    survivors = bootstrap_of(brokers, but=coordinator)
    successor = wait_for(
        lambda: (c := find_coordinator(survivors, "g-kill", timeout=2.0)) not in (None, coordinator) and c,
        40,
        "a new coordinator",
    )
    answer = fetch_offsets(survivors, "g-kill", TOPIC, PARTITIONS, timeout=30)
    assert answer.error is None
    assert answer.broker_id == successor
    assert answer.offsets == {f"{TOPIC}/{p}": o for p, o in committed.items()}
    # Every record acknowledged with acks=all survived the leader's death.
    assert _log_end(survivors) == {p: RECORDS_PER_PARTITION for p in range(PARTITIONS)}
    # The group resumes at its committed offsets.
    assert _first_offsets(survivors, "g-kill") == committed


def _simple_commit(address: tuple[str, int], group: str, offset: int) -> int:
    """One OffsetCommit v2 (generation -1, no member: the admin commit) of ``offset`` on partition 0, sent
    straight to ``address``; the partition's error code (-1 when the broker closed or did not answer)."""
    from kafka.protocol.consumer import OffsetCommitRequest  # pyright: ignore[reportMissingTypeStubs]

    request: Any = OffsetCommitRequest(
        group_id=group,
        generation_id_or_member_epoch=-1,
        member_id="",
        retention_time_ms=-1,
        topics=[
            OffsetCommitRequest.OffsetCommitRequestTopic(
                name=TOPIC,
                partitions=[
                    OffsetCommitRequest.OffsetCommitRequestTopic.OffsetCommitRequestPartition(
                        partition_index=0, committed_offset=offset, committed_metadata=""
                    )
                ],
            )
        ],
    )
    request.API_VERSION = 2
    request.with_header(correlation_id=7, client_id="herdlab-harness")
    try:
        with socket.create_connection(address, timeout=15) as sock:
            sock.settimeout(15)
            sock.sendall(bytes(request.encode(header=True, framed=True)))
            size = struct.unpack(">i", _recv(sock, 4))[0]
            response = request.header.get_response_class().decode(_recv(sock, size), version=2, header=True)
    except (OSError, ConnectionError):
        return -1
    return int(response.topics[0].partitions[0].error_code)


def _recv(sock: socket.socket, n: int) -> bytes:
    out = b""
    while len(out) < n:
        chunk = sock.recv(n - len(out))
        if not chunk:
            raise ConnectionError("closed")
        out += chunk
    return out


@pytest.mark.failover
def test_a_zombie_coordinator_accepts_nothing_clients_can_see(
    fresh_zookeeper: Any, broker_factory: BrokerFactory
) -> None:
    brokers = three_brokers(fresh_zookeeper, broker_factory)
    everyone = bootstrap_of(brokers)
    _produce(everyone)
    committed = {0: 5, 1: 6, 2: 7}  # by hand
    _commit_as_member(everyone, "g-zombie", committed)
    coordinator = find_coordinator(everyone, "g-zombie")
    assert coordinator is not None
    zombie = brokers[coordinator]
    zombie.signal(signal.SIGSTOP)
    try:
        survivors = bootstrap_of(brokers, but=coordinator)
        wait_for(
            lambda: find_coordinator(survivors, "g-zombie", timeout=2.0) not in (None, coordinator),
            40,
            "a new coordinator while the old one is paused",
        )
    finally:
        zombie.signal(signal.SIGCONT)
    # Straight to the zombie, as a client with a stale coordinator would: it must not acknowledge.
    host, _, port = zombie.bootstrap.rpartition(":")
    error = _simple_commit((host, int(port)), "g-zombie", 19)
    assert error != 0, "a deposed coordinator acknowledged an offset commit"
    answer = fetch_offsets(everyone, "g-zombie", TOPIC, PARTITIONS, timeout=30)
    assert answer.error is None
    assert answer.offsets == {f"{TOPIC}/{p}": o for p, o in committed.items()}
