"""Where faults hit, the broker answers as Kafka 3.7 does: raw-socket requests against a real broker process.

* A JoinGroup that lists a protocol name twice does not deny the group to the members after it.
* A corrupt line in the group log is skipped; the groups before and after it are loaded.
* Produce validation as ``LogValidator``: inconsistent offset ranges, zero counts, control batches from a
  client, more than one batch per partition, a base offset other than 0: INVALID_RECORD, nothing appended.
* Error order NOT_COORDINATOR / INVALID_GROUP_ID / COORDINATOR_LOAD_IN_PROGRESS; SyncGroup v5 needs its
  protocol type and name; a failed acks=0 produce closes the connection.
"""

from __future__ import annotations

import time
from pathlib import Path

from kafka import KafkaConsumer, TopicPartition
from kafka.admin import KafkaAdminClient, NewTopic
from kafka.protocol.admin import DescribeGroupsRequest
from kafka.protocol.consumer import JoinGroupRequest, OffsetFetchRequest, SyncGroupRequest

from coordinator.group.records import GroupMetadataRecord, MemberRecord, OffsetCommitRecord, encode_record
from coordinator.group_log import LOG_NAME
from coordinator.rawclient import RawClient
from harness.cluster.broker import BrokerProcess
from tests.integration.conftest import BrokerFactory
from tests.waiting import wait_until

FAST = ["--group-min-session-timeout-ms", "1000"]
NONE, LOAD_IN_PROGRESS = 0, 14
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
