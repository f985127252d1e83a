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

from kafka import KafkaConsumer, TopicPartition
from kafka.admin import KafkaAdminClient, NewTopic
from kafka.protocol.admin import DescribeGroupsRequest
from kafka.protocol.consumer import JoinGroupRequest, SyncGroupRequest

from coordinator.rawclient import RawClient
from harness.cluster.broker import BrokerProcess
from tests.integration.conftest import BrokerFactory
from tests.waiting import wait_until

FAST = ["--group-min-session-timeout-ms", "1000"]
NONE = 0
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
