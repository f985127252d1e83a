"""The coordinator shell in replicated mode over a fake ReplicatedLog, on a real asyncio loop.

The broker here is an in-process :class:`~coordinator.server.Broker` whose group APIs are replaced by
``GroupApis(..., replicated=fake)`` (what ``server.py`` does when replication is enabled; wired by the replica
manager). Clients send kafka-python request objects through :class:`~coordinator.inprocess.InProcessClient`.

Groups and their offsets partitions (50 partitions, Java ``String.hashCode`` by hand): ``"g1"`` = 103 * 31 + 49 =
3242 -> 42; ``"h1"`` = 104 * 31 + 49 = 3273 -> 23.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest
from kafka.protocol.consumer import (
    HeartbeatRequest,
    JoinGroupRequest,
    OffsetCommitRequest,
    OffsetFetchRequest,
    SyncGroupRequest,
)

from coordinator.config import BrokerConfig, ReplicationConfig
from coordinator.core.group import (
    GroupMetadataRecord,
    OffsetCommitRecord,
    decode_record,
)
from coordinator.core.group.machine import GroupCoordinator
from coordinator.groups.runner import GroupRunner
from coordinator.groups.store import TopicGroupStore
from coordinator.inprocess import InProcessClient
from coordinator.ports import OFFSETS_TOPIC
from coordinator.server import Broker
from tests.support.replicated import FakeReplicatedLog, RecordingHistory, replicated_broker, seed

NONE, LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR = 0, 14, 15, 16
G1, H1, P_G1, P_H1 = "g1", "h1", 42, 23
TIMEOUT_S = 10.0


async def _until(what: Callable[[], bool], timeout_s: float = TIMEOUT_S) -> None:
    """Wait (yielding to the loop) until ``what()`` holds; fail after ``timeout_s``."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    while not what():
        assert loop.time() < deadline, "condition not reached in time"
        await asyncio.sleep(0.001)


def _commit(group: str, offsets: list[tuple[int, int]], generation: int = -1, member: str = "") -> Any:
    part = OffsetCommitRequest.OffsetCommitRequestTopic.OffsetCommitRequestPartition
    topic = OffsetCommitRequest.OffsetCommitRequestTopic(
        name="t", partitions=[part(partition_index=p, committed_offset=o) for p, o in offsets]
    )
    return OffsetCommitRequest(
        group_id=group, generation_id_or_member_epoch=generation, member_id=member, topics=[topic]
    )


def _fetch(group: str) -> Any:
    return OffsetFetchRequest(
        group_id=group,
        topics=[OffsetFetchRequest.OffsetFetchRequestTopic(name="t", partition_indexes=[0, 1])],
    )


def _fetched(client: InProcessClient, group: str) -> tuple[int, list[int]]:
    r = client.call(_fetch(group), 5)
    return r.error_code, [p.committed_offset for t in r.topics for p in t.partitions]


def _commit_errors(r: Any) -> list[int]:
    return [p.error_code for t in r.topics for p in t.partitions]


def test_leadership_callbacks_load_and_unload_with_the_contract_events() -> None:
    async def scenario() -> None:
        fake, history = FakeReplicatedLog(), RecordingHistory()
        seed(
            fake,
            P_G1,
            [OffsetCommitRecord(G1, "t", 0, 10, -1, "", 1), OffsetCommitRecord(G1, "t", 1, 20, -1, "", 1)],
        )
        fake.committed[P_G1].append((b"g1", b"not a record"))  # skipped, as a damaged group-log line is
        seed(fake, P_G1, [OffsetCommitRecord(G1, "t", 1, 21, -1, "", 2)])
        fake.epochs[P_G1] = 3
        broker, apis = replicated_broker(fake, history)
        client = InProcessClient(broker)
        assert await apis.load() == (0, 0)  # registers; the partition already led starts loading
        assert _fetched(client, G1)[0] == LOAD_IN_PROGRESS
        assert _fetched(client, H1)[0] == NOT_COORDINATOR  # a partition this broker does not lead
        await _until(lambda: apis.machine.partition_status(P_G1) == "owned")
        assert _fetched(client, G1) == (NONE, [10, 21])
        begin, end = history.of("coordinator_load")
        assert begin == {
            "kind": "coordinator_load",
            "impl": "coordinator",
            "broker_id": 1,
            "phase": "begin",
            "offsets_partition": P_G1,
            "leader_epoch": 3,
        }
        assert {k: end[k] for k in ("phase", "offsets_partition", "leader_epoch", "groups", "offsets")} == {
            "phase": "end",
            "offsets_partition": P_G1,
            "leader_epoch": 3,
            "groups": 1,
            "offsets": 2,
        }
        assert isinstance(end["duration_ms"], int) and end["duration_ms"] >= 0
        fake.resign(P_G1, 4)
        assert _fetched(client, G1)[0] == NOT_COORDINATOR
        unload = history.of("coordinator_load")[-1]
        assert (unload["phase"], unload["offsets_partition"], unload["leader_epoch"]) == ("unload", P_G1, 4)
        fake.resign(P_G1, 4)  # resigning what it does not lead: nothing more
        assert len(history.of("coordinator_load")) == 3

    asyncio.run(scenario())


def test_a_resignation_mid_load_cancels_it_and_a_stale_election_is_ignored() -> None:
    async def scenario() -> None:
        fake, history = FakeReplicatedLog(), RecordingHistory()
        seed(fake, P_G1, [OffsetCommitRecord(G1, "t", 0, i, -1, "", 1) for i in range(20_000)])
        # past the first chunk of 2000 records: the load yields to the loop every chunk, 10 times in all
        fake.reading_mark = 2100
        broker, apis = replicated_broker(fake, history)
        client = InProcessClient(broker)
        await apis.load()
        fake.elect(P_G1, 5)
        async with asyncio.timeout(TIMEOUT_S):
            await fake.reading.wait()
        assert apis.machine.partition_status(P_G1) == "loading"
        assert _fetched(client, G1)[0] == LOAD_IN_PROGRESS
        fake.resign(P_G1, 6)
        await _until(lambda: not apis.runner._loads)
        assert [e["phase"] for e in history.of("coordinator_load")] == ["begin", "unload"]
        assert apis.machine.partition_status(P_G1) == "not_owned" and apis.machine.group(G1) is None
        fake.elect(P_G1, 5)  # older than the resignation's epoch 6: refused
        assert apis.machine.partition_status(P_G1) == "not_owned"
        fake.reading = asyncio.Event()
        fake.elect(P_G1, 7)
        await _until(lambda: apis.machine.partition_status(P_G1) == "owned")
        assert _fetched(client, G1) == (NONE, [19_999, -1])
        assert [e["phase"] for e in history.of("coordinator_load")] == ["begin", "unload", "begin", "end"]

    asyncio.run(scenario())


def test_a_commit_is_answered_and_recorded_only_once_acknowledged() -> None:
    async def scenario() -> None:
        fake, history = FakeReplicatedLog(), RecordingHistory()
        fake.epochs[P_G1] = 3
        broker, apis = replicated_broker(fake, history)
        client = InProcessClient(broker)
        await apis.load()
        await _until(lambda: apis.machine.partition_status(P_G1) == "owned")
        fake.mode = "hold"
        answer = asyncio.ensure_future(client.acall(_commit(G1, [(0, 5), (1, 6)]), 8))
        await _until(lambda: len(fake.held) == 1)
        (partition, entries, acks, timeout_ms) = fake.appends[-1]
        assert (partition, acks, timeout_ms) == (P_G1, -1, 1234)
        assert [k for k, _ in entries] == [b"g1", b"g1"]
        assert [decode_record(v) for _, v in entries if v is not None] == [
            OffsetCommitRecord(
                G1, "t", 0, 5, -1, "", decode_record(entries[0][1] or b"").commit_timestamp_ms
            ),
            OffsetCommitRecord(
                G1, "t", 1, 6, -1, "", decode_record(entries[1][1] or b"").commit_timestamp_ms
            ),
        ]
        assert not answer.done() and history.of("commit") == []
        assert _fetched(client, G1) == (NONE, [-1, -1])
        fake.release()
        r = await asyncio.wait_for(answer, TIMEOUT_S)
        assert _commit_errors(r) == [NONE, NONE]
        assert _fetched(client, G1) == (NONE, [5, 6])
        commits = history.of("commit")
        assert [
            (c["partition"], c["offset"], c["offsets_partition"], c["leader_epoch"]) for c in commits
        ] == [
            (0, 5, P_G1, 3),
            (1, 6, P_G1, 3),
        ]
        assert history.of("fenced") == []

    asyncio.run(scenario())


@pytest.mark.parametrize(
    ("append_error", "name", "answer"),
    [
        (6, "NOT_LEADER_OR_FOLLOWER", NOT_COORDINATOR),
        (19, "NOT_ENOUGH_REPLICAS", COORDINATOR_NOT_AVAILABLE),
        (7, "REQUEST_TIMED_OUT", COORDINATOR_NOT_AVAILABLE),
    ],
)
def test_a_commit_refused_by_its_append_is_fenced_and_never_visible(
    append_error: int, name: str, answer: int
) -> None:
    async def scenario() -> None:
        fake, history = FakeReplicatedLog(), RecordingHistory()
        fake.epochs[P_G1] = 3
        broker, apis = replicated_broker(fake, history)
        client = InProcessClient(broker)
        await apis.load()
        await _until(lambda: apis.machine.partition_status(P_G1) == "owned")
        assert _commit_errors(await client.acall(_commit(G1, [(0, 1)]), 8)) == [NONE]
        fake.mode = append_error
        r = await asyncio.wait_for(client.acall(_commit(G1, [(0, 5)]), 8), TIMEOUT_S)
        assert _commit_errors(r) == [answer]
        assert _fetched(client, G1) == (NONE, [1, -1])
        (fenced,) = history.of("fenced")
        assert {k: fenced[k] for k in ("what", "error", "group", "topic", "partition", "broker_id")} == {
            "what": "commit",
            "error": name,
            "group": G1,
            "topic": OFFSETS_TOPIC,
            "partition": P_G1,
            "broker_id": 1,
        }
        assert len(history.of("commit")) == 1

    asyncio.run(scenario())


def test_group_served_once_per_load() -> None:
    async def scenario() -> None:
        fake, history = FakeReplicatedLog(), RecordingHistory()
        fake.epochs[P_G1] = 3
        broker, apis = replicated_broker(fake, history)
        client = InProcessClient(broker)
        await apis.load()
        assert _fetched(client, G1)[0] == LOAD_IN_PROGRESS  # not served: an error
        await _until(lambda: apis.machine.partition_status(P_G1) == "owned")
        assert _commit_errors(await client.acall(_commit(G1, [(0, 5)]), 8)) == [NONE]
        assert _fetched(client, G1) == (NONE, [5, -1])
        served = history.of("group_served")
        assert [(s["group"], s["offsets_partition"], s["api"], s["generation"]) for s in served] == [
            (G1, P_G1, "OffsetCommit", 0)
        ]
        fake.resign(P_G1, 4)
        fake.elect(P_G1, 5)
        await _until(lambda: apis.machine.partition_status(P_G1) == "owned")
        assert _fetched(client, G1) == (NONE, [5, -1])
        assert _fetched(client, G1) == (NONE, [5, -1])
        served = history.of("group_served")
        assert [(s["api"], s["offsets_partition"]) for s in served] == [
            ("OffsetCommit", P_G1),
            ("OffsetFetch", P_G1),
        ]

    asyncio.run(scenario())


def _join(member: str = "") -> Any:
    proto = JoinGroupRequest.JoinGroupRequestProtocol(name="range", metadata=b"M")
    return JoinGroupRequest(
        group_id=G1,
        session_timeout_ms=10000,
        rebalance_timeout_ms=10000,
        member_id=member,
        protocol_type="consumer",
        protocols=[proto],
    )


def test_a_group_formed_on_one_leader_is_served_after_a_reload() -> None:
    async def scenario() -> None:
        fake, history = FakeReplicatedLog(), RecordingHistory()
        fake.epochs[P_G1] = 3
        broker, apis = replicated_broker(fake, history)
        client = InProcessClient(broker)
        await apis.load()
        await _until(lambda: apis.machine.partition_status(P_G1) == "owned")
        first = await client.acall(_join(), 5)
        assert first.error_code == 79  # MEMBER_ID_REQUIRED
        member = first.member_id
        joined = await asyncio.wait_for(client.acall(_join(member), 5), TIMEOUT_S)
        assert (joined.error_code, joined.generation_id, joined.leader) == (NONE, 1, member)
        fake.mode = "hold"
        assignment = SyncGroupRequest.SyncGroupRequestAssignment(member_id=member, assignment=b"A")
        sync = SyncGroupRequest(group_id=G1, generation_id=1, member_id=member, assignments=[assignment])
        answer = asyncio.ensure_future(client.acall(sync, 3))
        await _until(lambda: len(fake.held) == 1)
        assert not answer.done()
        (_, entries, _, _) = fake.appends[-1]
        (record,) = [decode_record(v) for _, v in entries if v is not None]
        assert isinstance(record, GroupMetadataRecord) and record.generation_id == 1
        fake.release()
        r = await asyncio.wait_for(answer, TIMEOUT_S)
        assert (r.error_code, r.assignment) == (NONE, b"A")
        fake.mode = "ack"
        hb = HeartbeatRequest(group_id=G1, generation_id=1, member_id=member)
        assert client.call(hb, 3).error_code == NONE
        fake.resign(P_G1, 4)
        assert client.call(hb, 3).error_code == NOT_COORDINATOR
        fake.elect(P_G1, 5)
        await _until(lambda: apis.machine.partition_status(P_G1) == "owned")
        assert client.call(hb, 3).error_code == NONE  # the member carries on with the reloaded group
        group = apis.machine.group(G1)
        assert group is not None and group.generation_id == 1 and list(group.members) == [member]
        apis.cancel_timers()

    asyncio.run(scenario())


def test_single_broker_commit_events_carry_the_offsets_partition_and_no_epoch() -> None:
    async def scenario() -> None:
        history = RecordingHistory()
        broker = Broker(BrokerConfig(broker_id=0), history=history)
        broker.store.create("t", 2)
        client = InProcessClient(broker)
        assert _commit_errors(await client.acall(_commit(G1, [(0, 5)]), 8)) == [NONE]
        (commit,) = history.of("commit")
        assert (commit["offsets_partition"], commit["leader_epoch"]) == (P_G1, -1)
        assert history.of("group_served") == [] and history.of("coordinator_load") == []

    asyncio.run(scenario())


def test_a_topic_store_needs_a_replicated_machine() -> None:
    store = TopicGroupStore(FakeReplicatedLog(), 50, ReplicationConfig())
    with pytest.raises(ValueError):
        GroupRunner(GroupCoordinator(), RecordingHistory(), store=store)


def test_the_load_waits_for_its_barrier_so_commits_the_old_leader_acknowledged_are_loaded() -> None:
    async def scenario() -> None:
        fake, history = FakeReplicatedLog(), RecordingHistory()
        seed(fake, P_G1, [OffsetCommitRecord(G1, "t", 0, 10, -1, "", 1)])
        broker, apis = replicated_broker(fake, history)
        client = InProcessClient(broker)
        await apis.load()
        fake.mode = "hold"
        fake.elect(P_G1, 3)
        await _until(lambda: len(fake.held) == 1)
        (partition, entries, acks, _) = fake.appends[-1]
        assert (partition, entries, acks) == (P_G1, [(None, None)], -1)  # the empty barrier entry, all ISR
        assert _fetched(client, G1)[0] == LOAD_IN_PROGRESS
        # the high watermark reaches the previous leader's last acknowledged commit only now
        seed(fake, P_G1, [OffsetCommitRecord(G1, "t", 0, 11, -1, "", 2)])
        fake.release()
        await _until(lambda: apis.machine.partition_status(P_G1) == "owned")
        assert _fetched(client, G1) == (NONE, [11, -1])
        end = history.of("coordinator_load")[-1]
        assert (end["phase"], end["groups"], end["offsets"]) == ("end", 1, 1)

    asyncio.run(scenario())


def test_a_failed_barrier_keeps_the_partition_loading_and_is_retried_until_acknowledged() -> None:
    """Loading below a high watermark the barrier did not move can miss a commit the old
    leader acknowledged; so the partition stays in CatchUp (COORDINATOR_LOAD_IN_PROGRESS) and the barrier is
    appended again until it is acknowledged."""

    async def scenario() -> None:
        fake, history = FakeReplicatedLog(), RecordingHistory()
        seed(fake, P_G1, [OffsetCommitRecord(G1, "t", 0, 10, -1, "", 1)])
        broker, apis = replicated_broker(fake, history)
        client = InProcessClient(broker)
        await apis.load()
        fake.mode = 19  # NOT_ENOUGH_REPLICAS
        fake.elect(P_G1, 3)
        await _until(lambda: len(fake.appends) >= 3)  # the first barrier and two retries, all refused
        assert {(a[0], tuple(a[1]), a[2]) for a in fake.appends} == {(P_G1, ((None, None),), -1)}
        assert apis.machine.partition_status(P_G1) == "loading"
        assert _fetched(client, G1)[0] == LOAD_IN_PROGRESS
        # the old leader's last acknowledged commit becomes committed here; then a barrier is acknowledged
        seed(fake, P_G1, [OffsetCommitRecord(G1, "t", 0, 11, -1, "", 2)])
        fake.mode = "ack"
        await _until(lambda: apis.machine.partition_status(P_G1) == "owned")
        assert _fetched(client, G1) == (NONE, [11, -1])
        assert [e["phase"] for e in history.of("coordinator_load")] == ["begin", "end"]

    asyncio.run(scenario())


def test_a_resignation_stops_the_barrier_retries() -> None:
    async def scenario() -> None:
        fake, history = FakeReplicatedLog(), RecordingHistory()
        broker, apis = replicated_broker(fake, history)
        await apis.load()
        fake.mode = 19
        fake.elect(P_G1, 3)
        await _until(lambda: len(fake.appends) >= 2)
        fake.resign(P_G1, 4)
        await _until(lambda: not apis.runner._loads)
        tried = len(fake.appends)
        fake.mode = "ack"
        assert apis.machine.partition_status(P_G1) == "not_owned"
        assert [e["phase"] for e in history.of("coordinator_load")] == ["begin", "unload"]
        fake.elect(P_G1, 5)
        await _until(lambda: apis.machine.partition_status(P_G1) == "owned")
        assert len(fake.appends) == tried + 1  # only the new load's barrier

    asyncio.run(scenario())
