"""One request at a time per connection (spec 2.19), on raw sockets against a real broker process.

Kafka mutes a connection after reading a request and unmutes it once the response is sent, so a
request a client pipelines behind a JoinGroup parked in the join barrier is not even read before the
join is answered. Each test sends the JoinGroup and the request behind it in *one* write, so both are
in the broker's buffer when the JoinGroup is dispatched: a broker that dispatched pipelined requests
concurrently would act on the second one at once, and every assertion about Kafka's answer below
would fail (the probe in the lead's notes saw exactly that).

The group in every test: A joins alone (generation 1), B joins and A rejoins (generation 2, both
synced, Stable). Then B rejoins with changed metadata, which parks its JoinGroup and starts a
rebalance that completes when A rejoins (generation 3).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kafka.admin import KafkaAdminClient, NewTopic
from kafka.protocol.admin import DescribeGroupsRequest
from kafka.protocol.consumer import (
    HeartbeatRequest,
    JoinGroupRequest,
    LeaveGroupRequest,
    OffsetCommitRequest,
    OffsetFetchRequest,
    SyncGroupRequest,
)
from kafka.protocol.metadata import MetadataRequest

from coordinator.config import BrokerConfig
from coordinator.core.group.config import GroupConfig
from coordinator.rawclient import RawClient
from coordinator.server import Broker
from harness.cluster.broker import BrokerProcess
from tests.support.brokers import BrokerFactory
from tests.support.waiting import wait_until

FAST = ["--group-initial-rebalance-delay-ms", "100", "--group-min-session-timeout-ms", "1000"]
NONE, ILLEGAL_GENERATION, REBALANCE_IN_PROGRESS = 0, 22, 27
JOIN_V, SYNC_V, LEAVE_V, COMMIT_V, FETCH_V = 3, 3, 3, 8, 5


def _encode(request: Any, version: int, correlation_id: int) -> bytes:
    request.API_VERSION = version
    request.with_header(correlation_id=correlation_id, client_id="raw")
    return bytes(request.encode(header=True, framed=True))


def _frame(raw: RawClient, request: Any, version: int) -> bytes:
    """The framed bytes of ``request`` with the connection's next correlation id (not sent)."""
    raw._correlation += 1
    return _encode(request, version, raw._correlation)


def _join_request(group: str, member_id: str, metadata: bytes) -> JoinGroupRequest:
    return JoinGroupRequest(
        group_id=group,
        session_timeout_ms=6000,
        rebalance_timeout_ms=10000,
        member_id=member_id,
        protocol_type="consumer",
        protocols=[JoinGroupRequest.JoinGroupRequestProtocol(name="range", metadata=metadata)],
    )


def _sync(raw: RawClient, group: str, generation: int, member: str, assignments: dict[str, bytes]) -> int:
    a = [
        SyncGroupRequest.SyncGroupRequestAssignment(member_id=m, assignment=b) for m, b in assignments.items()
    ]
    req = SyncGroupRequest(group_id=group, generation_id=generation, member_id=member, assignments=a)
    return raw.call(req, SYNC_V).error_code


def _describe(raw: RawClient, group: str) -> tuple[str, set[str]]:
    g = raw.call(DescribeGroupsRequest(groups=[group]), 1).groups[0]
    return g.group_state, {m.member_id for m in g.members}


def _stable_pair(a: RawClient, b: RawClient, group: str) -> tuple[str, str]:
    """A and B Stable in generation 2 (A the leader); returns their member ids."""
    ja = _join_request(group, "", b"a")
    ra = a.call(ja, JOIN_V)
    assert (ra.error_code, ra.generation_id) == (NONE, 1)
    ma = ra.member_id
    jb = _join_request(group, "", b"b")
    b.send(jb, JOIN_V)  # parks: A must rejoin
    hb = HeartbeatRequest(group_id=group, generation_id=1, member_id=ma)
    wait_until(lambda: a.call(hb, 3).error_code == REBALANCE_IN_PROGRESS, 10, what="A told to rejoin")
    ra = a.call(_join_request(group, ma, b"a"), JOIN_V)
    rb = b.receive(jb, JOIN_V)
    mb = rb.member_id
    assert (ra.generation_id, rb.generation_id, ra.leader) == (2, 2, ma)
    assert _sync(a, group, 2, ma, {ma: b"pa", mb: b"pb"}) == NONE
    assert _sync(b, group, 2, mb, {}) == NONE
    return ma, mb


def _topic(broker: BrokerProcess, name: str) -> None:
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    admin.create_topics([NewTopic(name, 1, 1)])
    admin.close()


def test_a_leave_pipelined_behind_a_parked_join_takes_effect_after_the_join(
    broker_factory: BrokerFactory,
) -> None:
    broker = broker_factory(extra_args=FAST)
    group = "g-pipelined-leave"
    with (
        RawClient("127.0.0.1", broker.port) as a,
        RawClient("127.0.0.1", broker.port) as b,
        RawClient("127.0.0.1", broker.port) as admin,
    ):
        ma, mb = _stable_pair(a, b, group)
        rejoin = _join_request(group, mb, b"b-changed")
        leave = LeaveGroupRequest(group_id=group, members=[LeaveGroupRequest.MemberIdentity(member_id=mb)])
        b.send_bytes(_frame(b, rejoin, JOIN_V) + _frame(b, leave, LEAVE_V))
        # B's join parked the group in PreparingRebalance; the LeaveGroup has not been read, so B
        # is still a member (a concurrent dispatcher would have removed it already).
        state = wait_until(
            lambda: (s := _describe(admin, group))[0] == "PreparingRebalance" and s,
            10,
            what="B's rejoin starts a rebalance",
        )
        assert state == ("PreparingRebalance", {ma, mb})
        # A rejoins: everyone has joined, generation 3 has both members.
        ra = a.call(_join_request(group, ma, b"a"), JOIN_V)
        assert (ra.error_code, ra.generation_id, ra.leader) == (NONE, 3, ma)
        assert sorted(m.member_id for m in ra.members) == sorted([ma, mb])
        rb = b.receive(rejoin, JOIN_V)
        assert (rb.error_code, rb.generation_id, rb.member_id) == (NONE, 3, mb)
        # Only now is the LeaveGroup read: B leaves generation 3, which starts the next rebalance.
        rl = b.receive(leave, LEAVE_V)
        assert (rl.error_code, [(m.member_id, m.error_code) for m in rl.members]) == (NONE, [(mb, NONE)])
        assert _describe(admin, group) == ("PreparingRebalance", {ma})


def test_a_commit_pipelined_behind_a_parked_join_is_judged_against_the_new_generation(
    broker_factory: BrokerFactory,
) -> None:
    broker = broker_factory(extra_args=FAST)
    _topic(broker, "t")
    group = "g-pipelined-commit"
    with RawClient("127.0.0.1", broker.port) as a, RawClient("127.0.0.1", broker.port) as b:
        ma, mb = _stable_pair(a, b, group)
        rejoin = _join_request(group, mb, b"b-changed")
        part = OffsetCommitRequest.OffsetCommitRequestTopic.OffsetCommitRequestPartition(
            partition_index=0, committed_offset=42, committed_metadata=""
        )
        commit = OffsetCommitRequest(
            group_id=group,
            generation_id_or_member_epoch=2,  # the generation B holds when it sends both
            member_id=mb,
            topics=[OffsetCommitRequest.OffsetCommitRequestTopic(name="t", partitions=[part])],
        )
        b.send_bytes(_frame(b, rejoin, JOIN_V) + _frame(b, commit, COMMIT_V))
        with RawClient("127.0.0.1", broker.port) as admin:
            wait_until(lambda: _describe(admin, group)[0] == "PreparingRebalance", 10, what="B's rejoin")
        ra = a.call(_join_request(group, ma, b"a"), JOIN_V)
        assert (ra.error_code, ra.generation_id) == (NONE, 3)
        assert b.receive(rejoin, JOIN_V).generation_id == 3
        # Read after the join completed: generation 2 is over (a concurrent dispatcher accepts it
        # in PreparingRebalance, where generation 2 is still current).
        rc = b.receive(commit, COMMIT_V)
        assert rc.topics[0].partitions[0].error_code == ILLEGAL_GENERATION
        topics = [OffsetFetchRequest.OffsetFetchRequestTopic(name="t", partition_indexes=[0])]
        fetched = a.call(OffsetFetchRequest(group_id=group, topics=topics), FETCH_V)
        assert fetched.topics[0].partitions[0].committed_offset == -1


def test_pipelined_requests_are_all_answered_in_order(broker: BrokerProcess) -> None:
    with RawClient("127.0.0.1", broker.port) as raw:
        requests = [MetadataRequest(topics=None) for _ in range(20)]
        data = b"".join(_frame(raw, r, 1) for r in requests)
        raw.send_bytes(data)
        ids = [raw.receive(r, 1).header.correlation_id for r in requests]
    assert ids == list(range(1, 21))


def test_stop_does_not_wait_for_a_parked_join(tmp_path: Path) -> None:
    """A connection waiting for a parked JoinGroup is closed at once by :meth:`Broker.stop`."""

    async def scenario() -> None:
        broker = Broker(BrokerConfig(port=0, group=GroupConfig(initial_rebalance_delay_ms=60_000)))
        await broker.start()
        reader, writer = await asyncio.open_connection("127.0.0.1", broker.port)
        writer.write(_encode(_join_request("g-stop", "", b"x"), JOIN_V, 1))  # parks for 60 s
        await writer.drain()
        await asyncio.wait_for(_until(lambda: broker.machine.group("g-stop") is not None), 5)
        await asyncio.wait_for(broker.stop(), 1.0)
        assert await reader.read() == b""  # closed without an answer
        writer.close()

    asyncio.run(scenario())


async def _until(predicate: Callable[[], bool]) -> None:
    while not predicate():
        await asyncio.sleep(0.01)
