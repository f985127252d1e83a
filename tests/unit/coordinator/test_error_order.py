"""Which error a group request gets when several apply, in Kafka 3.7's order (in-process broker, both codecs).

``GroupCoordinator.validateGroupStatus``: INVALID_GROUP_ID (an empty id for JoinGroup, SyncGroup, Heartbeat,
LeaveGroup), then COORDINATOR_LOAD_IN_PROGRESS (a group whose offsets partition this broker is loading), then
NOT_COORDINATOR. ``KafkaApis`` answers a SyncGroup v5 without protocol type or name INCONSISTENT_GROUP_PROTOCOL
before all of them, and OffsetCommit partitions of unknown topics UNKNOWN_TOPIC_OR_PARTITION.

The cluster: this broker is id 1, a peer is id 0; group ``g`` is coordinated by broker
``ids[partitionFor(g) % 2]`` (spec 2.2 vectors): ``"my-group"`` -> partition 12 -> broker 0 (the peer),
``"Java Exercises."`` -> 43 -> broker 1 (this one), ``""`` -> 0 -> the peer.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from kafka.protocol.consumer import (
    HeartbeatRequest,
    JoinGroupRequest,
    LeaveGroupRequest,
    OffsetCommitRequest,
    SyncGroupRequest,
)

from coordinator.cluster import Node
from coordinator.config import BrokerConfig
from coordinator.core.group.records import OffsetCommitRecord
from coordinator.groups.log import GroupLog
from coordinator.inprocess import InProcessClient
from coordinator.server import Broker

NONE, UNKNOWN_TOPIC, LOAD_IN_PROGRESS, NOT_COORDINATOR = 0, 3, 14, 16
INCONSISTENT, INVALID_GROUP_ID, REBALANCE_IN_PROGRESS = 23, 24, 27
PEERS, OURS = "my-group", "Java Exercises."


def _broker(data_dir: Path | None = None) -> Broker:
    broker = Broker(BrokerConfig(broker_id=1, data_dir=data_dir))
    broker.cluster.set_peers({0: Node(0, "127.0.0.1", 9)})
    broker.store.create("t", 1)
    return broker


def _join(group: str) -> JoinGroupRequest:
    proto = JoinGroupRequest.JoinGroupRequestProtocol(name="range", metadata=b"")
    return JoinGroupRequest(
        group_id=group, session_timeout_ms=10000, member_id="", protocol_type="consumer", protocols=[proto]
    )


def _sync(group: str, protocol_type: str | None = "consumer", protocol_name: str | None = "range") -> Any:
    return SyncGroupRequest(
        group_id=group,
        generation_id=1,
        member_id="m",
        protocol_type=protocol_type,
        protocol_name=protocol_name,
        assignments=[],
    )


def _leave(group: str) -> LeaveGroupRequest:
    return LeaveGroupRequest(group_id=group, members=[LeaveGroupRequest.MemberIdentity(member_id="m")])


async def _errors(client: InProcessClient, group: str) -> dict[str, int]:
    return {
        "join": (await client.acall(_join(group), 5)).error_code,
        "sync": (await client.acall(_sync(group), 5)).error_code,
        "heartbeat": client.call(
            HeartbeatRequest(group_id=group, generation_id=1, member_id="m"), 4
        ).error_code,
        "leave": client.call(_leave(group), 5).error_code,
    }


def test_an_empty_group_id_is_invalid_even_where_another_broker_would_coordinate_it() -> None:
    async def scenario() -> None:
        client = InProcessClient(_broker())
        everywhere = {"join": INVALID_GROUP_ID, "sync": INVALID_GROUP_ID, "heartbeat": INVALID_GROUP_ID}
        assert await _errors(client, "") == {**everywhere, "leave": INVALID_GROUP_ID}
        assert await _errors(client, PEERS) == dict.fromkeys(
            ("join", "sync", "heartbeat", "leave"), NOT_COORDINATOR
        )

    asyncio.run(scenario())


def test_while_loading_only_this_brokers_groups_are_in_progress(tmp_path: Path) -> None:
    log = GroupLog(tmp_path / "groups")
    log.append([OffsetCommitRecord(OURS, "t", 0, i, -1, "", 1000) for i in range(6000)])
    log.close()

    async def scenario() -> None:
        broker = _broker(tmp_path)
        client = InProcessClient(broker)
        loading = asyncio.ensure_future(broker.groups.load())
        await asyncio.sleep(0)  # the load yields to the loop between chunks of records
        assert broker.groups.loading
        assert await _errors(client, "") == dict.fromkeys(
            ("join", "sync", "heartbeat", "leave"), INVALID_GROUP_ID
        )
        assert await _errors(client, PEERS) == dict.fromkeys(
            ("join", "sync", "heartbeat", "leave"), NOT_COORDINATOR
        )
        # Ours: loading. Heartbeats are answered blindly, SyncGroup makes the member rejoin (Kafka's choices).
        assert await _errors(client, OURS) == {
            "join": LOAD_IN_PROGRESS,
            "sync": REBALANCE_IN_PROGRESS,
            "heartbeat": NONE,
            "leave": LOAD_IN_PROGRESS,
        }
        assert broker.groups.loading
        await loading

    asyncio.run(scenario())


def test_sync_group_v5_without_protocol_type_or_name_is_inconsistent_before_anything_else() -> None:
    async def scenario() -> None:
        client = InProcessClient(_broker())
        for group in ("", PEERS, OURS):
            for kind, name in ((None, "range"), ("consumer", None), (None, None)):
                r = await client.acall(_sync(group, kind, name), 5)
                assert (r.error_code, r.protocol_type, r.protocol_name) == (INCONSISTENT, None, None), (
                    group,
                    kind,
                )
        # v4 has no such fields: the ordinary checks apply.
        assert (await client.acall(_sync(""), 4)).error_code == INVALID_GROUP_ID

    asyncio.run(scenario())


def test_a_commit_to_another_brokers_group_keeps_unknown_topic_errors() -> None:
    part = OffsetCommitRequest.OffsetCommitRequestTopic.OffsetCommitRequestPartition
    topics = [
        OffsetCommitRequest.OffsetCommitRequestTopic(name="nope", partitions=[part(partition_index=0)]),
        OffsetCommitRequest.OffsetCommitRequestTopic(name="t", partitions=[part(partition_index=0)]),
    ]

    async def scenario() -> None:
        client = InProcessClient(_broker())
        for group in ("", PEERS):  # "" is a valid group id for commits: its coordinator is the peer
            req = OffsetCommitRequest(
                group_id=group, generation_id_or_member_epoch=-1, member_id="", topics=topics
            )
            r = client.call(req, 8)
            assert [(t.name, [p.error_code for p in t.partitions]) for t in r.topics] == [
                ("nope", [UNKNOWN_TOPIC]),
                ("t", [NOT_COORDINATOR]),
            ]

    asyncio.run(scenario())
