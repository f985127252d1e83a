"""Where faults hit, the broker answers as Kafka 3.7 does: raw-socket requests against a real broker process.

* A JoinGroup that lists a protocol name twice does not deny the group to the members after it.
* A corrupt line in the group log is skipped; the groups before and after it are loaded.
* Produce validation as ``LogValidator``: inconsistent offset ranges, zero counts, control batches from a
  client, more than one batch per partition, a base offset other than 0: INVALID_RECORD, nothing appended.
* Error order NOT_COORDINATOR / INVALID_GROUP_ID / COORDINATOR_LOAD_IN_PROGRESS; SyncGroup v5 needs its
  protocol type and name; a failed acks=0 produce closes the connection.
"""

from __future__ import annotations

import struct
import time
from collections.abc import Callable
from pathlib import Path

import crc32c
import pytest
from kafka import KafkaConsumer
from kafka.admin import KafkaAdminClient, NewTopic
from kafka.protocol.admin import DescribeGroupsRequest
from kafka.protocol.consumer import (
    HeartbeatRequest,
    JoinGroupRequest,
    LeaveGroupRequest,
    OffsetFetchRequest,
    SyncGroupRequest,
)
from kafka.protocol.metadata import MetadataRequest
from kafka.protocol.metadata.find_coordinator import FindCoordinatorRequest
from kafka.protocol.producer import ProduceRequest
from kafka.structs import TopicPartition

from coordinator.core.group.records import (
    GroupMetadataRecord,
    MemberRecord,
    OffsetCommitRecord,
    encode_record,
)
from coordinator.groups.log import LOG_NAME
from coordinator.rawclient import RawClient
from harness.cluster.broker import BrokerProcess
from harness.cluster.zookeeper import ZooKeeperServer
from tests.support.batches import batch
from tests.support.brokers import BrokerFactory
from tests.support.waiting import wait_until

FAST = ["--group-min-session-timeout-ms", "1000"]
NONE, CORRUPT_MESSAGE, LOAD_IN_PROGRESS, INVALID_RECORD = 0, 2, 14, 87
INCONSISTENT_GROUP_PROTOCOL, INVALID_GROUP_ID = 23, 24
PRODUCE_V = 9
JOIN_V, SYNC_V = 3, 3


def _join(group: str, protocols: list[tuple[str, bytes]], *, rebalance_ms: int = 10000) -> JoinGroupRequest:
    return JoinGroupRequest(
        group_id=group,
        session_timeout_ms=6000,
        rebalance_timeout_ms=rebalance_ms,
        member_id="",
        protocol_type="consumer",
        protocols=[JoinGroupRequest.JoinGroupRequestProtocol(name=n, metadata=m) for n, m in protocols],
    )


def _topic(broker: BrokerProcess, name: str, partitions: int = 1) -> None:
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    admin.create_topics([NewTopic(name, partitions, 1)])
    admin.close()


# ====================================================================================== duplicate protocols


def test_a_duplicate_protocol_join_does_not_shut_out_a_normal_member(broker_factory: BrokerFactory) -> None:
    # A 1 s initial delay: both joins surely arrive inside the first window.
    broker = broker_factory(extra_args=[*FAST, "--group-initial-rebalance-delay-ms", "1000"])
    group = "g-duplicate"
    with RawClient("127.0.0.1", broker.port) as x, RawClient("127.0.0.1", broker.port) as y:
        jx = _join(group, [("range", b"x-first"), ("range", b"x-second")])
        jy = _join(group, [("range", b"y")])
        x.send(jx, JOIN_V)
        y.send(jy, JOIN_V)
        rx, ry = x.receive(jx, JOIN_V), y.receive(jy, JOIN_V)
        assert (ry.error_code, ry.generation_id, ry.protocol_name) == (NONE, 1, "range")
        assert (rx.error_code, rx.generation_id, rx.leader) == (NONE, 1, rx.member_id)
        assert sorted((m.member_id, m.metadata) for m in rx.members) == sorted(
            [(rx.member_id, b"x-first"), (ry.member_id, b"y")]
        )
        assignments = [
            SyncGroupRequest.SyncGroupRequestAssignment(member_id=m, assignment=m.encode())
            for m in (rx.member_id, ry.member_id)
        ]
        sx = SyncGroupRequest(
            group_id=group, generation_id=1, member_id=rx.member_id, assignments=assignments
        )
        assert x.call(sx, SYNC_V).error_code == NONE
        sy = SyncGroupRequest(group_id=group, generation_id=1, member_id=ry.member_id, assignments=[])
        r = y.call(sy, SYNC_V)
        assert (r.error_code, r.assignment) == (NONE, ry.member_id.encode())
        described = x.call(DescribeGroupsRequest(groups=[group]), 1).groups[0]
        assert (described.group_state, len(described.members)) == ("Stable", 2)


def test_a_kafka_python_member_gets_an_assignment_after_a_duplicate_protocol_join(
    broker_factory: BrokerFactory,
) -> None:
    broker = broker_factory(extra_args=[*FAST, "--group-initial-rebalance-delay-ms", "100"])
    _topic(broker, "dup", 2)
    group = "g-duplicate-kp"
    with RawClient("127.0.0.1", broker.port) as x:
        # x joins alone with a duplicated protocol, then falls silent (no heartbeat, no rejoin).
        jx = _join(group, [("range", b"x"), ("range", b"x")], rebalance_ms=2000)
        rx = x.call(jx, JOIN_V)
        assert (rx.error_code, rx.generation_id, rx.protocol_name) == (NONE, 1, "range")
        sx = SyncGroupRequest(group_id=group, generation_id=1, member_id=rx.member_id, assignments=[])
        assert x.call(sx, SYNC_V).error_code == NONE
        consumer = KafkaConsumer(
            "dup",
            bootstrap_servers=broker.bootstrap,
            group_id=group,
            session_timeout_ms=6000,
            heartbeat_interval_ms=500,
            max_poll_interval_ms=3000,  # the group's rebalance timeout: x is dropped after 3 s
            enable_auto_commit=False,
        )
        try:
            t0 = time.monotonic()
            wanted = {TopicPartition("dup", 0), TopicPartition("dup", 1)}

            def assigned() -> bool:
                consumer.poll(timeout_ms=100)
                return consumer.assignment() == wanted

            wait_until(assigned, 20, interval=0, what="the kafka-python member's assignment")
            assert time.monotonic() - t0 < 10.0
        finally:
            consumer.close()


# ====================================================================================== group log recovery


def _committed(raw: RawClient, group: str) -> dict[tuple[str, int], int] | None:
    """The group's committed offsets; None while the broker still loads its group log."""
    r = raw.call(OffsetFetchRequest(group_id=group, topics=None), 5)
    if r.error_code == LOAD_IN_PROGRESS:
        return None
    assert r.error_code == NONE
    return {(t.name, p.partition_index): p.committed_offset for t in r.topics for p in t.partitions}


def test_a_corrupt_group_log_line_is_skipped_and_the_groups_around_it_load(tmp_path: Path) -> None:
    member = MemberRecord("m-1", None, "c", "/127.0.0.1", 30000, 6000, b"sub", b"asg")
    good_before = [
        OffsetCommitRecord("g-before", "t", 0, 11, -1, "", 1000),
        GroupMetadataRecord("g-before", 4, "consumer", None, None, 1000, ()),
    ]
    good_after = [
        OffsetCommitRecord("g-after", "t", 1, 22, -1, "", 2000),
        GroupMetadataRecord("g-after", 7, "consumer", "range", "m-1", 2000, (member,)),
    ]
    lines = [encode_record(r) for r in good_before]
    lines.append(b'{"type":"group","group_id":"g-lost","generation_id":\x00\x13 bit rot')  # line 3
    lines += [encode_record(r) for r in good_after]
    log_file = tmp_path / "data" / "groups" / LOG_NAME
    log_file.parent.mkdir(parents=True)
    log_file.write_bytes(b"\n".join(lines) + b"\n")
    broker_log = tmp_path / "broker.log"
    with (
        BrokerProcess(data_dir=tmp_path / "data", log_path=broker_log) as broker,
        RawClient("127.0.0.1", broker.port) as raw,
    ):
        assert wait_until(lambda: _committed(raw, "g-before"), 10, what="the log loaded") == {("t", 0): 11}
        assert _committed(raw, "g-after") == {("t", 1): 22}
        groups = raw.call(DescribeGroupsRequest(groups=["g-before", "g-after", "g-lost"]), 1).groups
        assert [(g.group_state, [m.member_id for m in g.members]) for g in groups] == [
            ("Empty", []),
            ("Stable", ["m-1"]),
            ("Dead", []),  # never loaded: DescribeGroups' answer for an unknown group
        ]
    text = broker_log.read_text()
    assert f"group log {log_file} line 3 skipped" in text
    assert "group log loaded: 4 records (1 skipped)" in text
    assert "unavailable" not in text


# ====================================================================================== produce validation


def _with(data: bytes, offset: int, fmt: str, value: int) -> bytes:
    """``data`` with the header field at ``offset`` set to ``value`` and the CRC recomputed (a valid CRC)."""
    buf = bytearray(data)
    struct.pack_into(fmt, buf, offset, value)
    struct.pack_into(">I", buf, 17, crc32c.crc32c(bytes(buf[21:])))
    return bytes(buf)


LAST_OFFSET_DELTA, RECORD_COUNT, ATTRIBUTES, BASE_OFFSET, BASE_SEQUENCE = 23, 57, 21, 0, 53

INVALID_BATCHES: dict[str, Callable[[], bytes]] = {
    # The reproduction: one record claiming offsets 0..99 (the next record would get offset 100).
    "offset range wider than the records": lambda: _with(batch([b"a"]), LAST_OFFSET_DELTA, ">i", 99),
    "offset range narrower than the records": lambda: _with(
        batch([b"a", b"b", b"c"]), LAST_OFFSET_DELTA, ">i", 0
    ),
    "a count of zero": lambda: _with(batch([b"a"]), RECORD_COUNT, ">i", 0),
    "an empty offset range": lambda: _with(
        _with(batch([b"a"]), LAST_OFFSET_DELTA, ">i", -1), RECORD_COUNT, ">i", 0
    ),
    "a control batch": lambda: _with(batch([b"a"]), ATTRIBUTES, ">h", 0x20),
    "two batches": lambda: batch([b"a"]) + batch([b"b", b"c"]),
    "a base offset other than 0": lambda: _with(batch([b"a"]), BASE_OFFSET, ">q", 5),
    "an idempotent batch without a sequence": lambda: _with(
        batch([b"a"], producer_id=7, epoch=0, seq=0), BASE_SEQUENCE, ">i", -1
    ),
}


def _produce(
    raw: RawClient, topic: str, records: dict[int, bytes], acks: int = 1
) -> dict[int, tuple[int, int]]:
    """Produce ``records`` (partition -> bytes); partition -> (error code, base offset)."""
    parts = [
        ProduceRequest.TopicProduceData.PartitionProduceData(index=p, records=r) for p, r in records.items()
    ]
    req = ProduceRequest(
        transactional_id=None,
        acks=acks,
        timeout_ms=5000,
        topic_data=[ProduceRequest.TopicProduceData(name=topic, partition_data=parts)],
    )
    r = raw.call(req, PRODUCE_V)
    return {p.index: (p.error_code, p.base_offset) for p in r.responses[0].partition_responses}


@pytest.mark.parametrize("case", sorted(INVALID_BATCHES))
def test_an_invalid_batch_is_rejected_and_nothing_is_appended(broker: BrokerProcess, case: str) -> None:
    _topic(broker, "v", 2)
    with RawClient("127.0.0.1", broker.port) as raw:
        # Partition 0 gets the invalid batch, partition 1 a valid one in the same request.
        got = _produce(raw, "v", {0: INVALID_BATCHES[case](), 1: batch([b"ok"])})
        assert got == {0: (INVALID_RECORD, -1), 1: (NONE, 0)}
        # Nothing of the invalid batch was appended: the next batch of partition 0 starts at offset 0.
        assert _produce(raw, "v", {0: batch([b"x", b"y"])}) == {0: (NONE, 0)}
        assert _produce(raw, "v", {0: batch([b"z"])}) == {0: (NONE, 2)}


def test_a_damaged_batch_is_corrupt_not_invalid(broker: BrokerProcess) -> None:
    data = bytearray(batch([b"a"]))
    data[-1] ^= 0xFF  # CRC no longer matches
    _topic(broker, "c", 1)
    with RawClient("127.0.0.1", broker.port) as raw:
        assert _produce(raw, "c", {0: bytes(data)}) == {0: (CORRUPT_MESSAGE, -1)}


def test_a_failed_acks_zero_produce_closes_the_connection(broker: BrokerProcess) -> None:
    _topic(broker, "z0", 1)
    with RawClient("127.0.0.1", broker.port) as raw:
        part = ProduceRequest.TopicProduceData.PartitionProduceData(index=0, records=batch([b"fine"]))
        good = ProduceRequest(
            transactional_id=None,
            acks=0,
            timeout_ms=5000,
            topic_data=[ProduceRequest.TopicProduceData(name="z0", partition_data=[part])],
        )
        raw.send(good, PRODUCE_V)  # no response, connection stays open:
        assert raw.call(MetadataRequest(topics=None), 1).brokers
        bad_part = ProduceRequest.TopicProduceData.PartitionProduceData(index=0, records=batch([b"a"]) * 2)
        bad = ProduceRequest(
            transactional_id=None,
            acks=0,
            timeout_ms=5000,
            topic_data=[ProduceRequest.TopicProduceData(name="z0", partition_data=[bad_part])],
        )
        raw.send(bad, PRODUCE_V)
        assert raw.is_closed_by_peer(5)
    with RawClient("127.0.0.1", broker.port) as raw:
        # The first (valid) acks=0 batch was appended, the failed one was not.
        assert _produce(raw, "z0", {0: batch([b"next"])}) == {0: (NONE, 1)}


# ====================================================================================== error order


def test_group_errors_come_in_kafkas_order_on_a_two_broker_cluster(
    broker_factory: BrokerFactory, fresh_zookeeper: ZooKeeperServer
) -> None:
    # Brokers 0 and 1: group g is coordinated by broker [0, 1][partitionFor(g) % 2] (spec 2.2 vectors):
    # "" -> partition 0 -> broker 0, "my-group" -> 12 -> broker 0, "Java Exercises." -> 43 -> broker 1.
    zk = fresh_zookeeper.connect_string
    broker_factory(broker_id=0, zookeeper=zk, extra_args=["--group-initial-rebalance-delay-ms", "0"])
    one = broker_factory(broker_id=1, zookeeper=zk, extra_args=["--group-initial-rebalance-delay-ms", "0"])
    with RawClient("127.0.0.1", one.port) as raw:
        wait_until(
            lambda: raw.call(FindCoordinatorRequest(key="my-group", key_type=0), 1).node_id == 0,
            20,
            what="broker 1 sees broker 0",
        )
        # An empty group id is INVALID_GROUP_ID, not NOT_COORDINATOR, though broker 0 would coordinate "".
        sync = SyncGroupRequest(group_id="", generation_id=1, member_id="m", assignments=[])
        leave = LeaveGroupRequest(group_id="", members=[LeaveGroupRequest.MemberIdentity(member_id="m")])
        assert [
            raw.call(_join("", [("range", b"")]), JOIN_V).error_code,
            raw.call(sync, SYNC_V).error_code,
            raw.call(HeartbeatRequest(group_id="", generation_id=1, member_id="m"), 4).error_code,
            raw.call(leave, 5).error_code,
        ] == [INVALID_GROUP_ID] * 4
        # A SyncGroup v5 without protocol type or name: INCONSISTENT_GROUP_PROTOCOL before anything else.
        for group in ("", "my-group"):
            v5 = SyncGroupRequest(
                group_id=group, generation_id=1, member_id="m", protocol_type=None, protocol_name="range"
            )
            assert raw.call(v5, 5).error_code == INCONSISTENT_GROUP_PROTOCOL
        # A real member of broker 1's group: v5 needs both fields, and then they must match the group's.
        r = raw.call(_join("Java Exercises.", [("range", b"m")]), JOIN_V)
        assert (r.error_code, r.generation_id, r.protocol_name) == (NONE, 1, "range")

        def sync_v5(kind: str | None, name: str | None) -> int:
            req = SyncGroupRequest(
                group_id="Java Exercises.",
                generation_id=1,
                member_id=r.member_id,
                protocol_type=kind,
                protocol_name=name,
                assignments=[
                    SyncGroupRequest.SyncGroupRequestAssignment(member_id=r.member_id, assignment=b"a")
                ],
            )
            return raw.call(req, 5).error_code

        assert sync_v5("consumer", None) == INCONSISTENT_GROUP_PROTOCOL
        assert sync_v5(None, None) == INCONSISTENT_GROUP_PROTOCOL
        assert sync_v5("consumer", "roundrobin") == INCONSISTENT_GROUP_PROTOCOL
        assert sync_v5("consumer", "range") == NONE
