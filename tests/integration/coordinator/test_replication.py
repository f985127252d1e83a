"""Replication on real sockets: three in-process brokers with replication on, partition
states injected by the test through a fake ZooKeeper shell (the state znodes and their conditional ISR writes
in memory, delivered to every broker as the real watches would), unmodified kafka-python clients.

Every broker runs on one event loop in a thread of its own; the test reads the brokers' state on that loop
(:meth:`LoopThread.call`), so what it sees is a consistent snapshot between two loop steps."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.protocol.producer import ProduceRequest

from coordinator.config import BrokerConfig, ReplicationConfig
from coordinator.core.replication.state import PartitionState
from coordinator.inprocess import LoopThread
from coordinator.rawclient import RawClient
from coordinator.server import Broker
from tests.support.batches import batch
from tests.support.replicas import FakeZk, ListHistory, replicated_cluster
from tests.support.waiting import wait_until

T = "replicated"
#: replica.lag.time.max.ms of the test that waits for an ISR shrink; the others keep Kafka's 10 s, so a loaded
#: machine cannot drop a follower from the ISR under them.
SHORT_LAG_MS = 2_000
ALL = (1, 2, 3)


@dataclass
class Trio:
    loop: LoopThread
    zk: FakeZk
    brokers: dict[int, Broker]
    histories: dict[int, ListHistory]

    def bootstrap(self, *ids: int) -> list[str]:
        return [f"127.0.0.1:{self.brokers[i].port}" for i in ids or sorted(self.brokers)]

    def inject(self, state: PartitionState, partition: int = 0, assigned: tuple[int, ...] = ALL) -> None:
        self.loop.call(self.zk.inject, T, partition, state, assigned)

    def log_bytes(self, broker_id: int, partition: int = 0) -> bytes:
        rm = self.brokers[broker_id].replicas
        assert rm is not None

        def read() -> bytes:
            plog = rm.local_log(T, partition)
            return plog.read(0, 1 << 30) if plog is not None else b""

        return self.loop.call(read)

    def core(self, broker_id: int, attr: str, partition: int = 0) -> Any:
        rm = self.brokers[broker_id].replicas
        assert rm is not None
        return self.loop.call(lambda: getattr(rm.partition(T, partition), attr))

    def stop(self, broker_id: int) -> None:
        self.loop.run(self.brokers[broker_id].stop())


@pytest.fixture
def trio(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Trio]:
    lag_ms = getattr(request, "param", 10_000)
    loop = LoopThread()
    zk = FakeZk()
    brokers: dict[int, Broker] = {}
    histories: dict[int, ListHistory] = {}
    try:
        for i in ALL:
            config = BrokerConfig(
                broker_id=i,
                zookeeper="127.0.0.1:1",  # replaced by the fake shell (zk_factory): never contacted
                data_dir=tmp_path / f"b{i}",
                metrics_interval_s=0,
                replication=ReplicationConfig(
                    enabled=True, replica_lag_time_max_ms=lag_ms, replica_fetch_wait_max_ms=200
                ),
            )
            histories[i] = ListHistory()
            brokers[i] = Broker(
                config, history=histories[i], cluster=replicated_cluster(i), zk_factory=zk.factory
            )
            loop.run(brokers[i].start())
        trio = Trio(loop, zk, brokers, histories)
        wait_until(lambda: all(len(b.cluster.peers) == 2 for b in brokers.values()), what="peers registered")
        yield trio
    finally:
        for b in brokers.values():
            loop.run(b.stop())
        loop.close()


def _produce_all(
    trio: Trio, values: list[bytes], acks: Any = "all", bootstrap: list[str] | None = None
) -> list[int]:
    producer = KafkaProducer(
        bootstrap_servers=bootstrap or trio.bootstrap(), acks=acks, linger_ms=0, request_timeout_ms=10_000
    )
    try:
        futures = [producer.send(T, value=v, partition=0) for v in values]
        return [f.get(timeout=15).offset for f in futures]
    finally:
        producer.close()


def _consume(trio: Trio, bootstrap: list[str], count: int, timeout: float = 15.0) -> list[tuple[int, bytes]]:
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False, consumer_timeout_ms=500)
    tp = TopicPartition(T, 0)
    consumer.assign([tp])
    consumer.seek_to_beginning(tp)
    got: list[tuple[int, bytes]] = []
    try:
        wait_until(
            lambda: (
                got.extend((r.offset, r.value) for rs in consumer.poll(300).values() for r in rs)
                or len(got) >= count
            ),
            timeout=timeout,
            what=f"{count} records",
        )
    finally:
        consumer.close()
    return got


def test_acks_all_produce_is_on_every_replica_when_acknowledged(trio: Trio) -> None:
    trio.inject(PartitionState(1, 0, ALL, 1))
    values = [f"v{i}".encode() for i in range(20)]
    offsets = _produce_all(trio, values, bootstrap=trio.bootstrap(2))  # metadata from a follower
    assert offsets == list(range(20))
    # acknowledged with acks=all: every ISR member already had them, so the HW is at the end everywhere it
    # was told, and the followers' logs are byte for byte the leader's
    leader_log = trio.log_bytes(1)
    assert trio.log_bytes(2) == leader_log and trio.log_bytes(3) == leader_log
    assert trio.core(1, "hw") == 20
    acks = trio.histories[1].of("produce_ack")
    assert sum(a["count"] for a in acks) == 20 and {a["acks"] for a in acks} == {-1}
    assert _consume(trio, trio.bootstrap(3), 20) == list(enumerate(values))


@pytest.mark.parametrize("trio", [SHORT_LAG_MS], indirect=True)
def test_a_stopped_follower_leaves_the_isr_after_the_lag_time_and_acks_all_resumes(trio: Trio) -> None:
    trio.inject(PartitionState(1, 0, ALL, 1))
    assert _produce_all(trio, [b"a", b"b"]) == [0, 1]
    trio.stop(3)
    # acks=1 while 3 is gone but still in the ISR: written, not committed
    assert _produce_all(trio, [b"c", b"d"], acks=1) == [2, 3]
    rm1 = trio.brokers[1].replicas
    assert rm1 is not None
    core1 = trio.loop.call(rm1.partition, T, 0)
    hw, leo, isr = trio.loop.call(lambda: (core1.hw, core1.leo, core1.isr))
    # normally 3 is still in the ISR here (the lag time has not passed): the HW waits at its LEO, 2; on a machine
    # so loaded that the shrink came first, the ISR is {1, 2} and the HW moved on to the end
    assert leo == 4 and hw == (2 if 3 in isr else 4), (hw, leo, isr)
    consumer = KafkaConsumer(bootstrap_servers=trio.bootstrap(1, 2), enable_auto_commit=False)
    tp = TopicPartition(T, 0)
    consumer.assign([tp])
    consumer.seek_to_beginning(tp)
    seen: list[tuple[int, int]] = []  # (offset, the leader's HW right after the poll that returned it)
    try:

        def poll() -> bool:
            records = [r for rs in consumer.poll(200).values() for r in rs]
            hw_now = trio.core(1, "hw")
            seen.extend((r.offset, hw_now) for r in records)
            return len(seen) >= 4

        wait_until(poll, timeout=SHORT_LAG_MS / 1000 * 8, what="all four records, after the ISR shrank")
    finally:
        consumer.close()
    assert [o for o, _ in seen] == [0, 1, 2, 3]
    assert all(offset < hw for offset, hw in seen), seen  # never a record at or above the high watermark
    writes = trio.zk.states.writes
    assert [(w[2].isr, w[4]) for w in writes] == [((1, 2), True)]
    assert trio.core(1, "isr") == (1, 2)
    # acks=all completes again with the smaller ISR
    assert _produce_all(trio, [b"e"]) == [4]
    assert trio.log_bytes(2) == trio.log_bytes(1)


def test_moving_leadership_fences_the_old_leader_and_keeps_committed_records(trio: Trio) -> None:
    trio.inject(PartitionState(1, 0, ALL, 1))
    first = [f"before{i}".encode() for i in range(10)]
    assert _produce_all(trio, first) == list(range(10))
    trio.inject(PartitionState(2, 1, ALL, 1))  # the controller moves leadership to 2 (epoch 1)
    assert trio.core(2, "is_leader") and not trio.core(1, "is_leader")
    # the old leader refuses a produce (NOT_LEADER_OR_FOLLOWER) and writes nothing
    with RawClient("127.0.0.1", trio.brokers[1].port) as raw:
        req = ProduceRequest(
            transactional_id=None,
            acks=-1,
            timeout_ms=5000,
            topic_data=[
                ProduceRequest.TopicProduceData(
                    name=T,
                    partition_data=[
                        ProduceRequest.TopicProduceData.PartitionProduceData(index=0, records=batch([b"x"]))
                    ],
                )
            ],
        )
        resp = raw.call(req, 7)
    assert resp.responses[0].partition_responses[0].error_code == 6
    fenced = trio.histories[1].of("fenced")
    assert [(f["what"], f["error"]) for f in fenced] == [("produce", "NOT_LEADER_OR_FOLLOWER")]
    # the new leader serves; every committed record is there, the new ones after them
    after = [f"after{i}".encode() for i in range(5)]
    assert _produce_all(trio, after) == list(range(10, 15))
    assert _consume(trio, trio.bootstrap(1), 15) == list(enumerate(first + after))
    wait_until(lambda: trio.log_bytes(1) == trio.log_bytes(2) == trio.log_bytes(3), what="replicas converge")
    roles = [(e["replica_role"], e["leader_epoch"]) for e in trio.histories[1].of("leadership")]
    assert roles == [("leader", 0), ("follower", 1)]


def test_followers_of_a_leader_that_has_not_taken_over_yet_back_off_until_it_has(trio: Trio) -> None:
    trio.inject(PartitionState(1, 0, ALL, 1))
    first = [b"a", b"b", b"c"]
    assert _produce_all(trio, first) == [0, 1, 2]
    # leadership moves to 2, but only 1 and 3 learn it: 3 fetches from 2, which still follows 1 (and 1, now a
    # follower of 2, refuses 2's fetches): both answers are NOT_LEADER_OR_FOLLOWER
    trio.loop.call(lambda: trio.zk.inject(T, 0, PartitionState(2, 1, ALL, 1), ALL, only=(1, 3)))
    fetchers = {i: trio.brokers[i].fetchers for i in ALL}
    assert fetchers[3] is not None and fetchers[2] is not None
    wait_until(lambda: trio.loop.call(lambda: fetchers[3].errors[(2, 6)] >= 1), what="3 refused by 2")
    wait_until(lambda: trio.loop.call(lambda: fetchers[2].errors[(1, 6)] >= 1), what="2 refused by 1")
    assert not trio.core(2, "is_leader")
    trio.loop.call(trio.zk.redeliver, T, 0, (2,))  # 2's watch fires at last
    assert trio.core(2, "is_leader")
    assert _produce_all(trio, [b"d"]) == [3]  # acks=all: 1 and 3 fetch from 2 again after their back-off
    assert trio.log_bytes(1) == trio.log_bytes(2) == trio.log_bytes(3)
    assert _consume(trio, trio.bootstrap(3), 4) == list(enumerate([*first, b"d"]))


def test_metadata_lists_leaders_replicas_and_isr_and_an_offline_partition_has_no_leader(trio: Trio) -> None:
    from kafka.protocol.metadata import MetadataRequest

    # the ISR is the whole assignment (in another order: Metadata shows the state's ISR, not the replicas), so no
    # follower can join it meanwhile; none leaves it within the lag time
    trio.inject(PartitionState(3, 4, (3, 2, 1), 2), assigned=(3, 1, 2))
    trio.inject(PartitionState(-1, 0, (), 2), partition=1, assigned=(2, 3, 1))  # offline: no leader
    answers = []
    for b in (1, 2, 3):
        with RawClient("127.0.0.1", trio.brokers[b].port) as raw:
            answers.append(
                raw.call(MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name=T)]), 10)
            )  # v7+: epochs, v10+: topic ids
    resp = answers[0]
    (topic,) = resp.topics
    # one topic id whichever broker answers (a client takes a changed id for a re-created topic)
    assert topic.topic_id.int != 0
    assert {a.topics[0].topic_id for a in answers} == {topic.topic_id}
    parts = {p.partition_index: p for p in topic.partitions}
    p0, p1 = parts[0], parts[1]
    # leader epoch -1: 0.9's Metadata had none (a real one makes KIP-320 clients ask OffsetForLeaderEpoch)
    assert (p0.error_code, p0.leader_id, p0.leader_epoch) == (0, 3, -1)
    assert (list(p0.replica_nodes), list(p0.isr_nodes)) == ([3, 1, 2], [3, 2, 1])
    assert (p1.error_code, p1.leader_id, list(p1.replica_nodes)) == (5, -1, [2, 3, 1])  # LEADER_NOT_AVAILABLE
    assert sorted(b.node_id for b in resp.brokers) == [1, 2, 3]


def test_metadata_finds_a_topic_by_its_id(trio: Trio) -> None:
    from kafka.protocol.metadata import MetadataRequest

    trio.inject(PartitionState(3, 4, (3, 2, 1), 2), assigned=(3, 1, 2))
    with RawClient("127.0.0.1", trio.brokers[1].port) as raw:
        by_name = raw.call(MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name=T)]), 12)
        topic_id = by_name.topics[0].topic_id
        # v12: by id only (a consumer-protocol member resolves its assignment's topic ids so)
        by_id = raw.call(
            MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(topic_id=topic_id, name=None)]), 12
        )
        unknown = raw.call(
            MetadataRequest(
                topics=[MetadataRequest.MetadataRequestTopic(topic_id=uuid.UUID(int=7), name=None)]
            ),
            12,
        )
    [found] = by_id.topics
    assert (found.error_code, found.name, found.topic_id) == (0, T, topic_id)
    assert unknown.topics[0].error_code == 100  # UNKNOWN_TOPIC_ID


def test_topics_are_created_through_the_zookeeper_shell(trio: Trio) -> None:
    from kafka.admin import KafkaAdminClient, NewTopic
    from kafka.errors import InvalidReplicationFactorError, TopicAlreadyExistsError

    # auto-creation from a producer's Metadata: LEADER_NOT_AVAILABLE until the states arrive, then it produces
    producer = KafkaProducer(bootstrap_servers=trio.bootstrap(2), acks="all")
    try:
        assert producer.send("auto", value=b"x").get(timeout=15).offset == 0
    finally:
        producer.close()
    assert trio.zk.created == [("auto", 1, None)]  # num.partitions 1, the default replication rule
    admin = KafkaAdminClient(bootstrap_servers=trio.bootstrap(1), request_timeout_ms=10_000)
    try:
        admin.create_topics([NewTopic("made", num_partitions=2, replication_factor=-1)])
        assert trio.zk.created[-1] == ("made", 2, None)
        with pytest.raises(TopicAlreadyExistsError):
            admin.create_topics([NewTopic("made", num_partitions=2, replication_factor=2)])
        with pytest.raises(InvalidReplicationFactorError):
            admin.create_topics([NewTopic("wide", num_partitions=1, replication_factor=4)])
    finally:
        admin.close()
    rm3 = trio.brokers[3].replicas
    assert rm3 is not None
    # partition 1 of "made": replicas rotated by one (2, 3, 1), so broker 2 leads it and 3 follows
    wait_until(lambda: trio.loop.call(lambda: rm3.partition("made", 1) is not None), what="state of made-1")
    assert trio.loop.call(lambda: (rm3.partition("made", 1).leader, rm3.partition("made", 1).assigned)) == (
        2,
        (2, 3, 1),
    )


def test_list_offsets_latest_is_the_high_watermark(trio: Trio) -> None:
    trio.stop(3)  # 3 stays in the ISR for the lag time (10 s): nothing acks=1 writes is committed meanwhile
    trio.inject(PartitionState(1, 0, ALL, 1))
    assert _produce_all(trio, [b"a", b"b"], acks=1, bootstrap=trio.bootstrap(1)) == [0, 1]
    consumer = KafkaConsumer(bootstrap_servers=trio.bootstrap(1, 2))
    tp = TopicPartition(T, 0)
    try:
        end = consumer.end_offsets([tp])[tp]
        begin = consumer.beginning_offsets([tp])[tp]
    finally:
        consumer.close()
    hw, leo, isr = trio.loop.call(
        lambda: (lambda c: (c.hw, c.leo, c.isr))(trio.brokers[1].replicas.partition(T, 0))
    )
    assert leo == 2 and begin == 0
    assert 3 not in isr or (hw, end) == (0, 0), (hw, end, isr)  # the end offset consumers see is the HW
