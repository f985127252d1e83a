"""Every advertised (API, version) pair, encoded by kafka-python and answered by the broker in process.

Each request is encoded with kafka-python's codec at that version, decoded and handled by the broker
(kio codec), and the answer decoded again by kafka-python: if a version were advertised but not
really served, the request or the response would fail to cross one of the codecs.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from itertools import count

import pytest
from kafka.protocol.admin import (
    CreatePartitionsRequest,
    CreateTopicsRequest,
    DeleteGroupsRequest,
    DescribeGroupsRequest,
    ListGroupsRequest,
)
from kafka.protocol.admin.cluster import DescribeClusterRequest
from kafka.protocol.consumer import (
    FetchRequest,
    HeartbeatRequest,
    JoinGroupRequest,
    LeaveGroupRequest,
    ListOffsetsRequest,
    OffsetCommitRequest,
    OffsetFetchRequest,
    SyncGroupRequest,
)
from kafka.protocol.metadata import MetadataRequest
from kafka.protocol.metadata.api_versions import ApiVersionsRequest
from kafka.protocol.metadata.find_coordinator import FindCoordinatorRequest
from kafka.protocol.producer import InitProducerIdRequest, ProduceRequest

from coordinator.api_keys import ApiKey
from coordinator.config import BrokerConfig
from coordinator.core.group.config import GroupConfig
from coordinator.inprocess import InProcessClient, LoopbackPeer
from coordinator.server import SERVED_VERSIONS, Broker
from tests.support.batches import batch, read_back

NONE, OUT_OF_RANGE, UNKNOWN_TOPIC = 0, 1, 3
UNKNOWN_MEMBER, MEMBER_ID_REQUIRED = 25, 79


def versions(api_key: int) -> list[int]:
    lo, hi = SERVED_VERSIONS[api_key]
    return list(range(lo, hi + 1))


@pytest.fixture
def loop() -> Iterator[asyncio.AbstractEventLoop]:
    loop = asyncio.new_event_loop()
    yield loop
    loop.close()


@pytest.fixture
def client(loop: asyncio.AbstractEventLoop) -> InProcessClient:
    config = BrokerConfig(group=GroupConfig(initial_rebalance_delay_ms=0, min_session_timeout_ms=10))

    async def make() -> Broker:
        broker = Broker(config)
        await broker.groups.load()
        return broker

    broker = loop.run_until_complete(make())
    return InProcessClient(broker, LoopbackPeer(advertised_host="127.0.0.5", advertised_port=19092))


def test_served_versions_never_exceed_what_kio_has() -> None:
    from kio.schema.index import api_key_map, schema_name_map

    for key, (lo, hi) in SERVED_VERSIONS.items():
        known = schema_name_map[api_key_map[key]]
        assert lo in known and hi in known, key
    assert SERVED_VERSIONS[ApiKey.DESCRIBE_CLUSTER][0] >= 1  # DescribeCluster v0 trips kafka-python


@pytest.mark.parametrize("v", versions(18))
def test_api_versions(client: InProcessClient, v: int) -> None:
    r = client.call(ApiVersionsRequest(client_software_name="t", client_software_version="1"), v)
    assert r.error_code == NONE
    assert {k.api_key: (k.min_version, k.max_version) for k in r.api_keys} == SERVED_VERSIONS


@pytest.mark.parametrize("v", versions(3))
def test_metadata_auto_creates_and_advertises_the_connection_address(client: InProcessClient, v: int) -> None:
    topic = MetadataRequest.MetadataRequestTopic(name=f"meta-{v}")
    r = client.call(MetadataRequest(topics=[topic], allow_auto_topic_creation=True), v)
    assert [(b.node_id, b.host, b.port) for b in r.brokers] == [(0, "127.0.0.5", 19092)]
    [t] = r.topics
    assert (t.error_code, t.name, len(t.partitions)) == (NONE, f"meta-{v}", 1)
    assert t.partitions[0].leader_id == 0
    if v >= 1:  # null topics: every topic (v0 uses an empty list for that)
        everything = client.call(MetadataRequest(topics=None), v)
        assert f"meta-{v}" in {t.name for t in everything.topics}
    if v >= 4:
        missing = MetadataRequest.MetadataRequestTopic(name=f"absent-{v}")
        r = client.call(MetadataRequest(topics=[missing], allow_auto_topic_creation=False), v)
        assert r.topics[0].error_code == UNKNOWN_TOPIC


@pytest.mark.parametrize("v", versions(19))
def test_create_topics(client: InProcessClient, v: int) -> None:
    def create(name: str, partitions: int, rf: int = 1) -> object:
        t = CreateTopicsRequest.CreatableTopic(
            name=name, num_partitions=partitions, replication_factor=rf, assignments=[], configs=[]
        )
        return client.call(CreateTopicsRequest(topics=[t], timeout_ms=1000, validate_only=False), v).topics[0]

    assert create(f"ct-{v}", 3).error_code == NONE
    assert create(f"ct-{v}", 3).error_code == 36  # TOPIC_ALREADY_EXISTS
    assert create("bad name", 1).error_code == 17  # INVALID_TOPIC_EXCEPTION
    assert create(f"ct0-{v}", 0).error_code == 37  # INVALID_PARTITIONS
    assert create(f"ct3-{v}", 1, rf=3).error_code == 38  # INVALID_REPLICATION_FACTOR
    assert len(client.broker.store.get(f"ct-{v}").partitions) == 3


@pytest.mark.parametrize("v", versions(37))
def test_create_partitions(client: InProcessClient, v: int) -> None:
    client.broker.store.create(f"cp-{v}", 2)

    def grow(name: str, n: int) -> object:
        t = CreatePartitionsRequest.CreatePartitionsTopic(name=name, count=n, assignments=None)
        return client.call(
            CreatePartitionsRequest(topics=[t], timeout_ms=1000, validate_only=False), v
        ).results[0]

    assert grow(f"cp-{v}", 5).error_code == NONE
    assert grow(f"cp-{v}", 4).error_code == 37
    assert grow("nope", 4).error_code == UNKNOWN_TOPIC
    assert len(client.broker.store.get(f"cp-{v}").partitions) == 5


def _produce(client: InProcessClient, v: int, topic: str, values: list[bytes], acks: int = 1) -> object:
    part = ProduceRequest.TopicProduceData.PartitionProduceData(index=0, records=batch(values))
    data = ProduceRequest.TopicProduceData(name=topic, partition_data=[part])
    return client.call(
        ProduceRequest(transactional_id=None, acks=acks, timeout_ms=1000, topic_data=[data]), v
    )


@pytest.mark.parametrize("v", versions(0))
def test_produce(client: InProcessClient, v: int) -> None:
    client.broker.store.create("p", 1)
    r = _produce(client, v, "p", [b"a", b"b"])
    p = r.responses[0].partition_responses[0]
    assert (p.error_code, p.base_offset) == (NONE, 0)
    assert _produce(client, v, "p", [b"c"]).responses[0].partition_responses[0].base_offset == 2
    assert _produce(client, v, "p", [b"d"], acks=0) is None
    assert (
        _produce(client, v, "absent", [b"x"]).responses[0].partition_responses[0].error_code == UNKNOWN_TOPIC
    )
    assert client.broker.store.get("p").partitions[0].end_offset == 4


def _fetch(client: InProcessClient, v: int, topic: str, offset: int, wait_ms: int = 0) -> FetchRequest:
    part = FetchRequest.FetchTopic.FetchPartition(
        partition=0,
        fetch_offset=offset,
        partition_max_bytes=1 << 20,
        log_start_offset=-1,
        current_leader_epoch=-1,
    )
    return FetchRequest(
        replica_id=-1,
        max_wait_ms=wait_ms,
        min_bytes=1,
        max_bytes=1 << 20,
        isolation_level=0,
        session_id=0,
        session_epoch=-1,
        topics=[FetchRequest.FetchTopic(topic=topic, partitions=[part])],
        forgotten_topics_data=[],
        rack_id="",
    )


@pytest.mark.parametrize("v", versions(1))
def test_fetch(client: InProcessClient, loop: asyncio.AbstractEventLoop, v: int) -> None:
    client.broker.store.create("f", 1)
    _produce(client, 3, "f", [b"a", b"b"])
    _produce(client, 3, "f", [b"c"])
    r = client.call(_fetch(client, v, "f", 1), v)
    p = r.responses[0].partitions[0]
    assert (p.error_code, p.high_watermark) == (NONE, 3)
    assert read_back(bytes(p.records)) == [(0, b"a"), (1, b"b"), (2, b"c")]
    assert client.call(_fetch(client, v, "f", 4), v).responses[0].partitions[0].error_code == OUT_OF_RANGE
    assert (
        client.call(_fetch(client, v, "absent", 0), v).responses[0].partitions[0].error_code == UNKNOWN_TOPIC
    )

    async def long_poll() -> object:
        waiting = asyncio.ensure_future(client.acall(_fetch(client, v, "f", 3, wait_ms=5000), v))
        await asyncio.sleep(0.05)
        assert not waiting.done()  # nothing to return yet: the fetch waits
        _produce(client, 3, "f", [b"d"])
        return await asyncio.wait_for(waiting, 2.0)

    p = loop.run_until_complete(long_poll()).responses[0].partitions[0]
    assert read_back(bytes(p.records)) == [(3, b"d")]


@pytest.mark.parametrize("v", versions(2))
def test_list_offsets(client: InProcessClient, v: int) -> None:
    client.broker.store.create("lo", 1)
    _produce(client, 3, "lo", [b"a", b"b", b"c"])

    def offset(ts: int, topic: str = "lo") -> tuple[int, int]:
        part = ListOffsetsRequest.ListOffsetsTopic.ListOffsetsPartition(
            partition_index=0, timestamp=ts, current_leader_epoch=-1
        )
        req = ListOffsetsRequest(
            replica_id=-1,
            isolation_level=0,
            topics=[ListOffsetsRequest.ListOffsetsTopic(name=topic, partitions=[part])],
        )
        p = client.call(req, v).topics[0].partitions[0]
        return p.error_code, p.offset

    assert offset(-1) == (NONE, 3)
    assert offset(-2) == (NONE, 0)
    assert offset(1000) == (NONE, 0)
    assert offset(-1, "absent")[0] == UNKNOWN_TOPIC


@pytest.mark.parametrize("v", versions(22))
def test_init_producer_id(client: InProcessClient, v: int) -> None:
    a = client.call(InitProducerIdRequest(transactional_id=None, transaction_timeout_ms=1000), v)
    b = client.call(InitProducerIdRequest(transactional_id=None, transaction_timeout_ms=1000), v)
    assert a.error_code == NONE and a.producer_epoch == 0 and 0 <= a.producer_id < b.producer_id
    txn = client.call(InitProducerIdRequest(transactional_id="tx", transaction_timeout_ms=1000), v)
    assert txn.error_code == 53


@pytest.mark.parametrize("v", versions(60))
def test_describe_cluster(client: InProcessClient, v: int) -> None:
    r = client.call(DescribeClusterRequest(include_cluster_authorized_operations=False), v)
    assert r.error_code == NONE
    assert [(b.broker_id, b.host, b.port) for b in r.brokers] == [(0, "127.0.0.5", 19092)]


@pytest.mark.parametrize("v", versions(10))
def test_find_coordinator(client: InProcessClient, v: int) -> None:
    r = client.call(FindCoordinatorRequest(key="g", key_type=0, coordinator_keys=["g", "h"]), v)
    if v >= 4:
        assert [(c.key, c.error_code, c.node_id, c.host, c.port) for c in r.coordinators] == [
            ("g", NONE, 0, "127.0.0.5", 19092),
            ("h", NONE, 0, "127.0.0.5", 19092),
        ]
    else:
        assert (r.error_code, r.node_id, r.host, r.port) == (NONE, 0, "127.0.0.5", 19092)


_groups = count()


def _clamp(api_key: int, i: int) -> int:
    lo, hi = SERVED_VERSIONS[api_key]
    return max(lo, min(hi, i))


@pytest.mark.parametrize("i", range(max(hi for _, hi in SERVED_VERSIONS.values()) + 1))
def test_group_round_trip_at_every_version(
    client: InProcessClient, loop: asyncio.AbstractEventLoop, i: int
) -> None:
    """Join, sync, heartbeat, commit, fetch offsets, describe, list, leave, delete -- version i of each
    API (clamped to its range), so every served version of every group API runs once."""
    vj, vs, vh, vl = _clamp(11, i), _clamp(14, i), _clamp(12, i), _clamp(13, i)
    vc, vf, vd, vli, vdel = _clamp(8, i), _clamp(9, i), _clamp(15, i), _clamp(16, i), _clamp(42, i)
    group = f"g{i}-{next(_groups)}"
    client.broker.store.create(f"gt{i}", 2)

    async def flow() -> None:
        proto = JoinGroupRequest.JoinGroupRequestProtocol(name="range", metadata=b"\x00\x01meta")
        join = JoinGroupRequest(
            group_id=group,
            session_timeout_ms=6000,
            rebalance_timeout_ms=6000,
            member_id="",
            group_instance_id=None,
            protocol_type="consumer",
            protocols=[proto],
        )
        r = await client.acall(join, vj)
        if vj >= 4:
            assert (r.error_code, r.generation_id) == (MEMBER_ID_REQUIRED, -1) and r.member_id
            join.member_id = r.member_id
            r = await asyncio.wait_for(client.acall(join, vj), 5)
        assert (r.error_code, r.generation_id, r.leader) == (NONE, 1, r.member_id)
        assert [(m.member_id, m.metadata) for m in r.members] == [(r.member_id, b"\x00\x01meta")]
        member = r.member_id
        assignment = SyncGroupRequest.SyncGroupRequestAssignment(member_id=member, assignment=b"asg")
        sync = SyncGroupRequest(
            group_id=group,
            generation_id=1,
            member_id=member,
            group_instance_id=None,
            protocol_type="consumer",
            protocol_name="range",
            assignments=[assignment],
        )
        s = await asyncio.wait_for(client.acall(sync, vs), 5)
        assert (s.error_code, bytes(s.assignment)) == (NONE, b"asg")
        hb = HeartbeatRequest(group_id=group, generation_id=1, member_id=member, group_instance_id=None)
        assert client.call(hb, vh).error_code == NONE
        hb.generation_id = 0
        assert client.call(hb, vh).error_code == 22  # ILLEGAL_GENERATION

        part = OffsetCommitRequest.OffsetCommitRequestTopic.OffsetCommitRequestPartition(
            partition_index=1, committed_offset=42, committed_leader_epoch=-1, committed_metadata="m"
        )
        absent = OffsetCommitRequest.OffsetCommitRequestTopic.OffsetCommitRequestPartition(
            partition_index=9, committed_offset=1, committed_leader_epoch=-1, committed_metadata=""
        )
        commit = OffsetCommitRequest(
            group_id=group,
            generation_id_or_member_epoch=1,
            member_id=member,
            group_instance_id=None,
            retention_time_ms=-1,
            topics=[OffsetCommitRequest.OffsetCommitRequestTopic(name=f"gt{i}", partitions=[part, absent])],
        )
        c = await client.acall(commit, vc)
        assert [(p.partition_index, p.error_code) for p in c.topics[0].partitions] == [
            (1, NONE),
            (9, UNKNOWN_TOPIC),
        ]

        topics = [OffsetFetchRequest.OffsetFetchRequestTopic(name=f"gt{i}", partition_indexes=[0, 1])]
        if vf >= 8:
            g_topics = [
                OffsetFetchRequest.OffsetFetchRequestGroup.OffsetFetchRequestTopics(
                    name=f"gt{i}", partition_indexes=[0, 1]
                )
            ]
            fetch = OffsetFetchRequest(
                groups=[OffsetFetchRequest.OffsetFetchRequestGroup(group_id=group, topics=g_topics)],
                require_stable=False,
            )
            got = client.call(fetch, vf).groups[0].topics[0].partitions
        else:
            got = client.call(OffsetFetchRequest(group_id=group, topics=topics, require_stable=False), vf)
            got = got.topics[0].partitions
        assert sorted((p.partition_index, p.committed_offset) for p in got) == [(0, -1), (1, 42)]

        d = client.call(
            DescribeGroupsRequest(groups=[group], include_authorized_operations=False), vd
        ).groups[0]
        assert (d.error_code, d.group_state, d.protocol_type, d.protocol_data) == (
            NONE,
            "Stable",
            "consumer",
            "range",
        )
        assert [(m.member_id, m.client_host, bytes(m.member_assignment)) for m in d.members] == [
            (member, "/127.0.0.1", b"asg")
        ]
        listed = client.call(ListGroupsRequest(states_filter=[], types_filter=[]), vli)
        assert (group, "consumer") in {(x.group_id, x.protocol_type) for x in listed.groups}

        if vl >= 3:
            leave = LeaveGroupRequest(
                group_id=group,
                members=[LeaveGroupRequest.MemberIdentity(member_id=member, group_instance_id=None)],
            )
            left = await client.acall(leave, vl)
            assert left.error_code == NONE and [(m.member_id, m.error_code) for m in left.members] == [
                (member, NONE)
            ]
        else:
            left = await client.acall(LeaveGroupRequest(group_id=group, member_id=member), vl)
            assert left.error_code == NONE
        for _ in range(100):  # the group empties once the rebalance triggered by the leave completes
            state = client.call(DescribeGroupsRequest(groups=[group]), vd).groups[0].group_state
            if state == "Empty":
                break
            await asyncio.sleep(0.01)
        assert state == "Empty"
        deleted = await client.acall(DeleteGroupsRequest(groups_names=[group, "never-seen"]), vdel)
        assert [(x.group_id, x.error_code) for x in deleted.results] == [(group, NONE), ("never-seen", 69)]

    loop.run_until_complete(asyncio.wait_for(flow(), 20))


def test_a_version_not_served_gets_unsupported_version_or_a_close(client: InProcessClient) -> None:
    from coordinator.server import CloseConnection

    # Heartbeat has a top-level error code: the broker can say UNSUPPORTED_VERSION in that version.
    client.broker.served[12] = (1, 4)
    r = client.call(HeartbeatRequest(group_id="g", generation_id=1, member_id="m"), 0)
    assert r.error_code == 35
    # Produce has none: the connection is closed (as Kafka does).
    client.broker.served[0] = (4, 9)
    with pytest.raises(CloseConnection):
        _produce(client, 3, "p", [b"x"])
    # ApiVersions of an unknown version: v0 with UNSUPPORTED_VERSION and the version list.
    frame = bytearray(client.frame(ApiVersionsRequest(), 3))
    frame[2:4] = (9).to_bytes(2, "big")
    corr, api_key, version, resp = client.broker.dispatch(bytes(frame), client.peer)
    assert (api_key, version, int(resp.error_code)) == (18, 0, 35)
    assert any(k.api_key == 18 for k in resp.api_keys)
