"""Replicated mode of the consumer-group machine: ownership per offsets partition, heartbeats answered once
their records are written, two-phase commits, unloading."""

from __future__ import annotations

from coordinator.core.consumer.api import ConsumerGroupHeartbeatRequest, ConsumerGroupHeartbeatResponse
from coordinator.core.consumer.machine import FIRST_WRITE_ID
from coordinator.core.group.api import (
    OffsetCommitPartition,
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetFetchRequest,
    Persist,
    Respond,
)
from coordinator.core.group.errors import ErrorCode
from tests.support.consumer_core import Driver, as_dict, tid


def _join_request(member: str) -> ConsumerGroupHeartbeatRequest:
    return ConsumerGroupHeartbeatRequest(
        "g", member, 0, rebalance_timeout_ms=1000, subscribed_topic_names=("t",), topic_partitions=()
    )


def _replicated() -> tuple[Driver, int]:
    d = Driver()
    d.topics.add("t", 2)
    d.machine.own_by_partition(4)
    p = d.machine.partition_for("g")
    assert p is not None
    return d, p


def test_groups_of_partitions_not_owned_or_loading_are_refused() -> None:
    d, p = _replicated()
    assert d.send(_join_request("m1")).error is ErrorCode.NOT_COORDINATOR
    d.apply(d.machine.begin_loading(p))
    assert d.send(_join_request("m1")).error is ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
    [described] = d.machine.consumer_group_describe(["g"])
    assert described.error is ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
    d.apply(d.machine.finish_loading(0, p))
    assert d.machine.partition_status(p) == "owned"


def test_a_heartbeat_is_answered_when_its_records_are_written() -> None:
    d, p = _replicated()
    d.machine.begin_loading(p)
    d.machine.finish_loading(0, p)
    effects = d.apply(d.machine.heartbeat(0, "tok", _join_request("m1")))
    writes = {e.write for e in effects if isinstance(e, Persist)}
    assert writes == {FIRST_WRITE_ID}
    assert not any(isinstance(e, Respond) for e in effects)
    assert d.machine.pending_writes == 1
    [answer] = [e for e in d.machine.persisted(FIRST_WRITE_ID, 0, 10) if isinstance(e, Respond)]
    assert isinstance(answer.response, ConsumerGroupHeartbeatResponse)
    assert (answer.token, answer.response.member_epoch, as_dict(answer.response.assignment)) == (
        "tok",
        1,
        {tid(1): [0, 1]},
    )
    # A steady heartbeat writes nothing and is answered at once.
    assert d.hb("m1", 1, {tid(1): [0, 1]}).member_epoch == 1

    # A failed append is answered with Kafka's mapped error.
    effects = d.apply(d.machine.heartbeat(20, "tok2", _join_request("m2")))
    [write] = {e.write for e in effects if isinstance(e, Persist)}
    [answer] = [
        e
        for e in d.machine.persisted(write or 0, ErrorCode.NOT_LEADER_OR_FOLLOWER, 30)
        if isinstance(e, Respond)
    ]
    assert isinstance(answer.response, ConsumerGroupHeartbeatResponse)
    assert answer.response.error is ErrorCode.NOT_COORDINATOR


def test_commits_are_visible_once_written_and_unloading_forgets_the_group() -> None:
    d, p = _replicated()
    d.machine.begin_loading(p)
    d.machine.finish_loading(0, p)
    effects = d.apply(d.machine.heartbeat(0, "tok", _join_request("m1")))
    [write] = {e.write for e in effects if isinstance(e, Persist)}
    d.apply(d.machine.persisted(write or 0, 0, 0))
    req = OffsetCommitRequest("g", [OffsetCommitPartition("t", 0, 7)], generation_id=1, member_id="m1")
    effects = d.apply(d.machine.offset_commit(0, "c", req))
    [commit_write] = {e.write for e in effects if isinstance(e, Persist)}
    assert commit_write == FIRST_WRITE_ID + 1
    assert d.machine.offset_fetch(OffsetFetchRequest("g", [("t", 0)])).partitions[0].offset == -1
    [answer] = [e.response for e in d.machine.persisted(commit_write or 0, 0, 5, 3) if isinstance(e, Respond)]
    assert isinstance(answer, OffsetCommitResponse) and answer.partitions[0].error is ErrorCode.NONE
    assert d.machine.offset_fetch(OffsetFetchRequest("g", [("t", 0)])).partitions[0].offset == 7

    d.apply(d.machine.unload(p, 10))
    assert not d.machine.holds("g")
    assert d.timers == {}
    assert d.hb("m1", 1, {tid(1): [0, 1]}).error is ErrorCode.NOT_COORDINATOR
