"""The consumer group type's shell (coordinator.groups.consumer) over a scripted fake machine, through the broker in
process: what it decodes for the machine, what it encodes of the answer for each version, the one ``group_request``
event per ConsumerGroupHeartbeat, a classic group's id, the classic APIs on a consumer group's id, OffsetFetch v9's
member fields, ListGroups of a group id taken over, ConsumerGroupDescribe's topic names, and a failing machine."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest
from kafka.protocol.admin import ListGroupsRequest
from kafka.protocol.consumer import HeartbeatRequest, JoinGroupRequest, LeaveGroupRequest, SyncGroupRequest
from kio.index import load_request_schema
from kio.schema.errors import ErrorCode as KioError

from coordinator.api_keys import ApiKey
from coordinator.config import BrokerConfig, ReplicationConfig
from coordinator.core.consumer import api as c
from coordinator.core.group import api as g
from coordinator.core.group.config import GroupConfig
from coordinator.core.group.errors import ErrorCode
from coordinator.core.group.machine import GroupCoordinator
from coordinator.core.group.offsets import OffsetManager
from coordinator.inprocess import InProcessClient
from coordinator.server import Broker
from coordinator.wire import nested
from tests.support.kio_wire import cgh, dispatch, owned
from tests.support.recording import RecordingHistory

HB, DESCRIBE = ApiKey.CONSUMER_GROUP_HEARTBEAT, ApiKey.CONSUMER_GROUP_DESCRIBE


class FakeMachine:
    """Answers heartbeats with the responses queued in ``answers`` and records every request it is given."""

    def __init__(self, topics: c.TopicsImage, offsets: OffsetManager) -> None:
        self.topics = topics
        self.offsets = offsets
        self.held: set[str] = set()
        self.answers: list[c.ConsumerGroupHeartbeatResponse] = []
        self.requests: list[c.ConsumerGroupHeartbeatRequest] = []
        self.fetches: list[g.OffsetFetchRequest] = []
        self.fail = False

    def heartbeat(self, now_ms: int, token: Any, req: c.ConsumerGroupHeartbeatRequest) -> list[g.Effect]:
        self.requests.append(req)
        if self.fail:
            raise RuntimeError("a bug in the machine")
        self.held.add(req.group_id)
        return [g.Respond(token, self.answers.pop(0))]  # type: ignore[arg-type]

    def on_timer(self, now_ms: int, key: Any) -> list[g.Effect]:
        return []

    def consumer_group_describe(self, group_ids: list[str]) -> list[c.DescribedConsumerGroup]:
        t = next(iter(self.topics.names()))
        meta = self.topics.by_name(t)
        assert meta is not None
        parts = (c.TopicPartitions(meta.topic_id, (0, 1)),)
        member = c.DescribedConsumerMember(
            "m-1", None, None, 3, "rdkafka", "/127.0.0.1", (t,), None, parts, parts
        )
        return [
            c.DescribedConsumerGroup(gid, ErrorCode.NONE, None, "Stable", 3, 3, "uniform", [member])
            for gid in group_ids
        ]

    def holds(self, group_id: str) -> bool:
        return group_id in self.held

    def offset_commit(self, now_ms: int, token: Any, req: g.OffsetCommitRequest) -> list[g.Effect]:
        return [g.Respond(token, g.OffsetCommitResponse([]))]

    def offset_fetch(self, req: g.OffsetFetchRequest) -> g.OffsetFetchResponse:
        self.fetches.append(req)
        return g.OffsetFetchResponse(ErrorCode.STALE_MEMBER_EPOCH)

    def describe_groups(self, group_ids: list[str]) -> list[g.DescribedGroup]:
        # Kafka 4 (4.1.1 asked): a consumer group in DescribeGroups v6
        return [
            g.DescribedGroup(
                gid,
                ErrorCode.GROUP_ID_NOT_FOUND,
                "Dead",
                error_message=f"Group {gid} is not a classic group.",
            )
            for gid in group_ids
        ]

    def list_groups(self, states: list[str] | None) -> g.ListGroupsResponse:
        return g.ListGroupsResponse(
            ErrorCode.NONE, [g.ListedGroup(gid, "consumer", "Stable") for gid in sorted(self.held)]
        )

    def delete_groups(self, now_ms: int, token: Any, group_ids: list[str]) -> list[g.Effect]:
        return [g.Respond(token, g.DeleteGroupsResponse([]))]

    def begin_loading(self, partition: int | None = None) -> list[g.Effect]:
        return []

    def own_by_partition(self, offsets_partitions: int) -> None:
        raise AssertionError("not replicated in these tests")

    def takes_record(self, record: object) -> bool:
        return False

    def load(self, record: Any) -> None:
        return None

    def finish_loading(self, now_ms: int, partition: int | None = None) -> list[g.Effect]:
        return []


class Rig:
    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.history = RecordingHistory()
        made: list[FakeMachine] = []

        def make(topics: c.TopicsImage, offsets: OffsetManager) -> FakeMachine:
            made.append(FakeMachine(topics, offsets))
            return made[-1]

        config = BrokerConfig(group=GroupConfig(initial_rebalance_delay_ms=0))
        self.broker = Broker(
            config, history=self.history, machine=GroupCoordinator(config.group), consumer_machine=make
        )
        self.loop.run_until_complete(self.broker.groups.load())
        [self.fake] = made
        self.client = InProcessClient(self.broker)
        self.topic = self.broker.store.create("t", 2)

    def call(self, api_key: int, version: int, body: Any) -> Any:
        return dispatch(self.broker, api_key, version, body, self.loop)

    def events(self) -> list[dict[str, Any]]:
        return self.history.of("group_request")


@pytest.fixture
def rig() -> Iterator[Rig]:
    r = Rig()
    yield r
    r.loop.close()


def test_the_machine_gets_the_version_neutral_request_and_shares_the_classic_offsets(rig: Rig) -> None:
    assert rig.fake.offsets is rig.broker.machine.offsets
    tid = rig.topic.topic_id
    rig.fake.answers.append(c.ConsumerGroupHeartbeatResponse(ErrorCode.NONE, None, "m-1", 4, 5000))
    body = cgh(
        1,
        "cg",
        "m-1",
        4,
        topics=("t",),
        owned=owned(1, {tid: (1, 0)}),
        assignor="range",
        rebalance_timeout_ms=30000,
    )
    rig.call(HB, 1, body)
    [req] = rig.fake.requests
    assert (req.group_id, req.member_id, req.member_epoch, req.rebalance_timeout_ms) == (
        "cg",
        "m-1",
        4,
        30000,
    )
    assert (req.subscribed_topic_names, req.server_assignor, req.api_version) == (("t",), "range", 1)
    assert req.topic_partitions == (c.TopicPartitions(tid, (1, 0)),)
    assert (req.client_id, req.client_host, req.instance_id) == ("kio", "/127.0.0.1", None)


def test_null_fields_stay_unchanged_and_the_topics_image_reads_the_store(rig: Rig) -> None:
    rig.fake.answers.append(c.ConsumerGroupHeartbeatResponse(ErrorCode.NONE, None, "m-1", 4, 5000))
    rig.call(HB, 0, cgh(0, "cg", "m-1", 4))
    [req] = rig.fake.requests
    assert (req.subscribed_topic_names, req.topic_partitions, req.rebalance_timeout_ms) == (None, None, -1)
    image = rig.fake.topics
    meta = image.by_name("t")
    assert meta == c.TopicMetadata(rig.topic.topic_id, "t", 2)
    assert image.by_id(rig.topic.topic_id) == meta and image.by_name("absent") is None
    rig.broker.store.create("u", 3)  # created later: seen at once
    assert sorted(image.names()) == ["t", "u"]


@pytest.mark.parametrize("version", [0, 1])
def test_the_answer_is_encoded_for_the_requests_version_with_its_assignment(rig: Rig, version: int) -> None:
    tid = rig.topic.topic_id
    rig.fake.answers.append(
        c.ConsumerGroupHeartbeatResponse(
            ErrorCode.NONE, None, "m-1", 1, 2500, (c.TopicPartitions(tid, (0, 1)),)
        )
    )
    r = rig.call(HB, version, cgh(version, "cg", "m-1", 0, topics=("t",), owned=()))
    assert (r.error_code, r.member_id, r.member_epoch) == (KioError.none, "m-1", 1)
    assert r.heartbeat_interval.total_seconds() == 2.5
    assert [(tp.topic_id, tuple(tp.partitions)) for tp in r.assignment.topic_partitions] == [(tid, (0, 1))]
    [e] = rig.events()
    # by hand: a join (request epoch 0) is a change
    assert {k: e[k] for k in ("api", "impl", "group", "member", "member_epoch", "epoch", "change")} == {
        "api": "ConsumerGroupHeartbeat",
        "impl": "consumer",
        "group": "cg",
        "member": "m-1",
        "member_epoch": 0,
        "epoch": 1,
        "change": True,
    }
    assert "error" not in e


def test_a_steady_heartbeat_is_one_event_without_a_change_and_an_error_is_named(rig: Rig) -> None:
    rig.fake.answers += [
        c.ConsumerGroupHeartbeatResponse(ErrorCode.NONE, None, "m-1", 4, 5000),
        c.ConsumerGroupHeartbeatResponse(ErrorCode.FENCED_MEMBER_EPOCH, "stale"),
    ]
    rig.call(HB, 1, cgh(1, "cg", "m-1", 4))
    r = rig.call(HB, 1, cgh(1, "cg", "m-1", 3))
    assert (r.error_code, r.error_message, r.member_id, r.assignment) == (
        KioError.fenced_member_epoch,
        "stale",
        None,
        None,
    )
    steady, fenced = rig.events()
    assert (steady["change"], "error" in steady) == (False, False)
    assert (fenced["member_epoch"], fenced["epoch"], fenced["error"], fenced["change"]) == (
        3,
        0,
        "FENCED_MEMBER_EPOCH",
        True,
    )
    # the broker's own coordination events leave ConsumerGroupHeartbeat to the consumer type: one event each
    assert len(rig.events()) == 2


def test_a_classic_group_in_use_is_not_a_consumer_group_and_an_empty_one_is_taken_over(rig: Rig) -> None:
    joined = rig.loop.run_until_complete(rig.client.acall(_join("classic", ""), 3))
    assert joined.error_code == 0
    r = rig.call(HB, 1, cgh(1, "classic", "m-9", 0, topics=("t",), owned=()))
    assert (r.error_code, r.error_message) == (
        KioError.group_id_not_found,
        "Cannot upgrade classic group classic to consumer group because online upgrade is disabled.",
    )
    assert rig.fake.requests == []
    assert rig.events()[-1]["error"] == "GROUP_ID_NOT_FOUND"
    # an Empty classic group (a simple consumer's commit made it): Kafka deletes it for the joining member
    rig.broker.machine.offset_commit(
        0, None, g.OffsetCommitRequest("simple", [g.OffsetCommitPartition("t", 0, 1)], -1, "")
    )
    rig.fake.answers.append(c.ConsumerGroupHeartbeatResponse(ErrorCode.NONE, None, "m-9", 1, 5000))
    r = rig.call(HB, 1, cgh(1, "simple", "m-9", 0, topics=("t",), owned=()))
    assert r.error_code == KioError.none and [q.group_id for q in rig.fake.requests] == ["simple"]
    listed = rig.client.call(ListGroupsRequest(states_filter=[], types_filter=[]), 5)
    assert sorted((x.group_id, x.group_type) for x in listed.groups) == [
        ("classic", "classic"),
        ("simple", "consumer"),  # once, by the type holding it now
    ]


def test_classic_requests_for_a_consumer_group_are_refused_as_kafka_4_does(rig: Rig) -> None:
    rig.fake.held.add("cg")
    j = rig.loop.run_until_complete(rig.client.acall(_join("cg", "x"), 5))
    assert (j.error_code, j.member_id) == (int(ErrorCode.INCONSISTENT_GROUP_PROTOCOL), "x")
    sync = SyncGroupRequest(
        group_id="cg",
        generation_id=1,
        member_id="x",
        protocol_type="consumer",
        protocol_name="range",
        assignments=[],
    )
    assert rig.loop.run_until_complete(rig.client.acall(sync, 5)).error_code == int(
        ErrorCode.UNKNOWN_MEMBER_ID
    )
    hb = HeartbeatRequest(group_id="cg", generation_id=1, member_id="x")
    assert rig.client.call(hb, 4).error_code == int(ErrorCode.UNKNOWN_MEMBER_ID)
    leave = LeaveGroupRequest(group_id="cg", members=[LeaveGroupRequest.MemberIdentity(member_id="x")])
    r = rig.client.call(leave, 5)
    assert (r.error_code, [(m.member_id, m.error_code) for m in r.members]) == (
        0,
        [("x", int(ErrorCode.UNKNOWN_MEMBER_ID))],
    )
    assert rig.broker.machine.group("cg") is None  # the classic machine never saw it


def test_offset_fetch_v9_gives_the_member_id_and_epoch_to_the_consumer_group(rig: Rig) -> None:
    rig.fake.held.add("cg")
    cls: Any = load_request_schema(9, 9)
    group_cls = nested(cls, "groups")
    body = cls(
        groups=(group_cls(group_id="cg", member_id="m-1", member_epoch=7, topics=None),), require_stable=False
    )
    r = rig.call(ApiKey.OFFSET_FETCH, 9, body)
    assert r.groups[0].error_code == KioError.stale_member_epoch
    [req] = rig.fake.fetches
    assert (req.group_id, req.member_id, req.member_epoch, req.partitions) == ("cg", "m-1", 7, None)


def test_consumer_group_describe_names_the_topic_ids(rig: Rig) -> None:
    rig.fake.held.add("cg")
    cls: Any = load_request_schema(69, 0)
    r = rig.call(DESCRIBE, 0, cls(group_ids=("cg",), include_authorized_operations=False))
    [d] = r.groups
    assert (d.group_id, d.group_state, d.group_epoch, d.assignment_epoch, d.assignor_name) == (
        "cg",
        "Stable",
        3,
        3,
        "uniform",
    )
    [m] = d.members
    assert [(tp.topic_id, tp.topic_name, tuple(tp.partitions)) for tp in m.assignment.topic_partitions] == [
        (rig.topic.topic_id, "t", (0, 1))
    ]
    assert (m.member_epoch, m.subscribed_topic_names) == (3, ("t",))


def test_a_failing_machine_is_answered_unknown_server_error_loudly_and_recorded(rig: Rig) -> None:
    rig.fake.fail = True
    r = rig.call(HB, 1, cgh(1, "cg", "m-1", 4))
    assert r.error_code == KioError.unknown_server_error
    assert rig.broker.rejected["group_failure"] == 1
    [e] = rig.events()
    assert (e["error"], e["change"]) == ("UNKNOWN_SERVER_ERROR", True)


def test_the_consumer_apis_are_advertised_single_and_replicated() -> None:
    assert set(Broker(BrokerConfig(), consumer_machine=FakeMachine).served) >= {HB, DESCRIBE}
    replicated = Broker(BrokerConfig(zookeeper="127.0.0.1:1", replication=_replication()))
    consumer = replicated.groups.consumer
    assert consumer is not None and getattr(consumer.machine, "replicated", False)
    assert {HB, DESCRIBE} <= set(replicated.served) and HB in replicated.handlers
    # the classic runner (the leadership listener) loads the consumer machine's partitions with its own
    assert [r for r, _ in replicated.groups.classic.runner.co_runners] == [consumer.runner]


def _join(group: str, member: str) -> JoinGroupRequest:
    proto = JoinGroupRequest.JoinGroupRequestProtocol(name="range", metadata=b"")
    return JoinGroupRequest(
        group_id=group,
        session_timeout_ms=10000,
        member_id=member,
        protocol_type="consumer",
        protocols=[proto],
    )


def _replication() -> Any:
    return ReplicationConfig(enabled=True)


@pytest.mark.parametrize("version", [5, 6])
def test_describe_groups_of_a_consumer_group_is_dead_before_v6_and_not_found_from_v6(
    rig: Rig, version: int
) -> None:
    rig.fake.held.add("cg")
    cls: Any = load_request_schema(15, version)
    r = rig.call(ApiKey.DESCRIBE_GROUPS, version, cls(groups=("cg",), include_authorized_operations=False))
    [d] = r.groups
    if version == 5:  # as Apache Kafka 4.1.1 answers DescribeGroups v5 for a consumer group
        assert (d.error_code, d.group_state, d.members) == (KioError.none, "Dead", ())
    else:
        assert (d.error_code, d.error_message, d.group_state) == (
            KioError.group_id_not_found,
            "Group cg is not a classic group.",
            "Dead",
        )


def test_a_classic_groups_v9_commit_carries_its_generation(rig: Rig) -> None:
    joined = rig.loop.run_until_complete(rig.client.acall(_join("classic", ""), 3))
    sync = SyncGroupRequest(
        group_id="classic",
        generation_id=joined.generation_id,
        member_id=joined.member_id,
        protocol_type="consumer",
        protocol_name="range",
        assignments=[],
    )
    assert rig.loop.run_until_complete(rig.client.acall(sync, 5)).error_code == 0

    def commit(generation: int) -> Any:
        cls: Any = load_request_schema(8, 9)
        topic_cls = nested(cls, "topics")
        part_cls = nested(topic_cls, "partitions")
        part = part_cls(
            partition_index=0, committed_offset=9, committed_leader_epoch=-1, committed_metadata=""
        )
        body = cls(
            group_id="classic",
            generation_id_or_member_epoch=generation,
            member_id=joined.member_id,
            group_instance_id=None,
            topics=(topic_cls(name="t", partitions=(part,)),),
        )
        return rig.call(ApiKey.OFFSET_COMMIT, 9, body).topics[0].partitions[0].error_code

    # v9 carries the classic generation where a consumer group's member carries its epoch
    assert commit(joined.generation_id) == KioError.none
    assert commit(joined.generation_id + 1) == KioError.illegal_generation
    assert rig.broker.machine.offsets.group_offsets("classic")[("t", 0)].offset == 9


def test_consumer_group_describe_of_a_classic_group_says_it_is_not_a_consumer_group(rig: Rig) -> None:
    rig.loop.run_until_complete(rig.client.acall(_join("classic", ""), 3))
    cls: Any = load_request_schema(69, 0)
    r = rig.call(DESCRIBE, 0, cls(group_ids=("classic",), include_authorized_operations=False))
    # as Apache Kafka 4.1.1 answers it (asked over the wire)
    assert [(d.group_id, d.error_code, d.error_message) for d in r.groups] == [
        ("classic", KioError.group_id_not_found, "Group classic is not a consumer group.")
    ]
