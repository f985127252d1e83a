"""Offsets with member epochs, the admin answers, and replay of the group log (a restarted broker keeps its consumer
groups, epochs and assignments)."""

from __future__ import annotations

from coordinator.core.consumer.machine import TIMER_REBALANCE, TIMER_SESSION, ConsumerGroupCoordinator
from coordinator.core.consumer.member import MemberState
from coordinator.core.group.api import (
    DeleteGroupsResponse,
    OffsetCommitPartition,
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetFetchRequest,
    Respond,
    SetTimer,
)
from coordinator.core.group.errors import ErrorCode
from coordinator.core.group.offsets import OffsetManager
from coordinator.core.group.records import decode_record, encode_record
from coordinator.groups.log import live_records
from tests.support.consumer_core import Driver, tid

T = tid(1)


def _commit(d: Driver, member: str, epoch: int, offset: int = 10) -> ErrorCode:
    req = OffsetCommitRequest(
        "g", [OffsetCommitPartition("t", 0, offset)], generation_id=epoch, member_id=member
    )
    effects = d.apply(d.machine.offset_commit(d.now, "c", req))
    [answer] = [e.response for e in effects if isinstance(e, Respond)]
    assert isinstance(answer, OffsetCommitResponse)
    return answer.partitions[0].error


def test_commits_need_the_members_current_epoch() -> None:
    d = Driver()
    d.topics.add("t", 2)
    d.join("m1", ["t"])  # epoch 1
    assert _commit(d, "m1", 1) is ErrorCode.NONE
    assert _commit(d, "m1", 0, offset=11) is ErrorCode.STALE_MEMBER_EPOCH
    assert _commit(d, "m1", 2, offset=12) is ErrorCode.STALE_MEMBER_EPOCH
    assert _commit(d, "zz", 1, offset=13) is ErrorCode.UNKNOWN_MEMBER_ID
    assert _commit(d, "", -1, offset=14) is ErrorCode.UNKNOWN_MEMBER_ID  # an admin commit into a live group
    fetched = d.machine.offset_fetch(OffsetFetchRequest("g", [("t", 0)]))
    assert [(p.partition, p.offset) for p in fetched.partitions] == [(0, 10)]
    assert d.emitted("commit_rejected")[-1]["error"] == "UNKNOWN_MEMBER_ID"
    v8 = OffsetCommitRequest("g", [OffsetCommitPartition("t", 0, 16)], 1, "m1", api_version=8)
    [answer] = [e.response for e in d.machine.offset_commit(d.now, "c", v8) if isinstance(e, Respond)]
    assert isinstance(answer, OffsetCommitResponse)
    assert answer.partitions[0].error is ErrorCode.UNSUPPORTED_VERSION
    fetch = d.machine.offset_fetch(OffsetFetchRequest("g", [("t", 0)], member_id="m1", member_epoch=1))
    assert (fetch.error, fetch.partitions[0].offset) == (ErrorCode.NONE, 10)
    stale = d.machine.offset_fetch(OffsetFetchRequest("g", [("t", 0)], member_id="m1", member_epoch=0))
    assert stale.error is ErrorCode.STALE_MEMBER_EPOCH
    unknown = d.machine.offset_fetch(OffsetFetchRequest("g", [("t", 0)], member_id="zz", member_epoch=1))
    assert unknown.error is ErrorCode.UNKNOWN_MEMBER_ID
    d.hb("m1", -1)
    assert _commit(d, "", -1, offset=15) is ErrorCode.NONE  # the group is Empty now
    fetched = d.machine.offset_fetch(OffsetFetchRequest("g", None))
    assert [(p.topic, p.partition, p.offset) for p in fetched.partitions] == [("t", 0, 15)]


def test_describe_list_and_delete() -> None:
    d = Driver()
    d.topics.add("t", 2)
    d.join("m1", ["t"], instance_id="i1")
    [described] = d.machine.consumer_group_describe(["g"])
    assert (described.error, described.state, described.group_epoch, described.assignment_epoch) == (
        ErrorCode.NONE,
        "Stable",
        1,
        1,
    )
    assert described.assignor_name == "uniform"
    [member] = described.members
    assert (member.member_id, member.instance_id, member.member_epoch) == ("m1", "i1", 1)
    assert [(tp.topic_id, tp.partitions) for tp in member.assignment] == [(T, (0, 1))]
    assert member.target_assignment == member.assignment
    [missing] = d.machine.consumer_group_describe(["nope"])
    assert (missing.error, missing.error_message) == (ErrorCode.GROUP_ID_NOT_FOUND, "Group nope not found.")

    [classic_view] = d.machine.describe_groups(["g"])
    assert (classic_view.error, classic_view.state, classic_view.error_message, classic_view.members) == (
        ErrorCode.GROUP_ID_NOT_FOUND,
        "Dead",
        "Group g is not a classic group.",
        [],
    )
    listed = d.machine.list_groups(None)
    assert [(g.group_id, g.protocol_type, g.state, g.group_type) for g in listed.groups] == [
        ("g", "consumer", "Stable", "consumer")
    ]
    assert d.machine.list_groups(["stable"]).groups != []
    assert d.machine.list_groups(["Empty"]).groups == []

    effects = d.apply(d.machine.delete_groups(d.now, "del", ["g", "nope"]))
    [answer] = [e.response for e in effects if isinstance(e, Respond)]
    assert isinstance(answer, DeleteGroupsResponse)
    assert [(r.group_id, r.error) for r in answer.results] == [
        ("g", ErrorCode.NON_EMPTY_GROUP),
        ("nope", ErrorCode.GROUP_ID_NOT_FOUND),
    ]
    d.hb("m1", -1, instance_id="i1")
    effects = d.apply(d.machine.delete_groups(d.now, "del", ["g"]))
    [answer] = [e.response for e in effects if isinstance(e, Respond)]
    assert isinstance(answer, DeleteGroupsResponse)
    assert [(r.group_id, r.error) for r in answer.results] == [("g", ErrorCode.NONE)]
    assert not d.machine.holds("g")


def test_replaying_the_log_reproduces_the_groups() -> None:
    d = Driver()
    d.topics.add("t", 6)
    d.join("m1", ["t"])  # epoch 1: m1 0-5
    d.join("m2", ["t"])  # epoch 2: target m1 0-2, m2 3-5; m2 waits
    d.hb("m1", 1, {T: range(6)})  # m1 revokes 3-5 at epoch 1
    d.join(
        "m3", ["t"], instance_id="i3"
    )  # epoch 3: quota 2 each: m1 0-1, m2 3-4, m3 2 and 5 (both held by m1)
    d.hb("m3", -2, instance_id="i3")
    assert _commit(d, "m1", 1, offset=42) is ErrorCode.NONE
    log = [encode_record(r) for r in d.persisted]

    offsets = OffsetManager(max_metadata_bytes=4096)
    restarted = ConsumerGroupCoordinator(d.config, d.topics, offsets=offsets)
    assert restarted.begin_loading() == []
    for data in log:
        record = decode_record(data)
        assert restarted.takes_record(record)
        restarted.load(record)
    effects = restarted.finish_loading(100_000)

    group = restarted.group("g")
    original = d.machine.group("g")
    assert group is not None and original is not None
    assert (group.group_epoch, group.assignment_epoch, group.state.value) == (3, 3, "Reconciling")
    assert {m: (x.member_epoch, x.state) for m, x in group.members.items()} == {
        "m1": (1, MemberState.UNREVOKED_PARTITIONS),
        "m2": (2, MemberState.UNRELEASED_PARTITIONS),
        "m3": (-2, MemberState.UNRELEASED_PARTITIONS),
    }
    assert {m: dict(a) for m, a in group.target.items()} == {
        "m1": {T: frozenset({0, 1})},
        "m2": {T: frozenset({3, 4})},
        "m3": {T: frozenset({2, 5})},
    }
    assert dict(group.members["m1"].pending_revocation) == {T: frozenset({3, 4, 5})}
    assert group.partition_epochs == {T: dict.fromkeys(range(6), 1)}
    assert group.members == original.members
    assert group.static_members == {"i3": "m3"} == original.static_members
    assert group.subscribed == original.subscribed
    assert [(p.offset) for p in restarted.offset_fetch(OffsetFetchRequest("g", [("t", 0)])).partitions] == [
        42
    ]
    timers = {e.key: e.deadline_ms for e in effects if isinstance(e, SetTimer)}
    assert timers == {
        (TIMER_SESSION, "g", "m1"): 145_000,
        (TIMER_SESSION, "g", "m2"): 145_000,
        (TIMER_SESSION, "g", "m3"): 145_000,
        (TIMER_REBALANCE, "g", "m1"): 400_000,
    }

    # The restarted broker goes on where the old one was. m1 gave up 3-5, which moves it to epoch 2
    # (min(1 + 1, 3)); its target is now 0-1, so it must also revoke 2 (assignment 0-1); once it has, it moves
    # to epoch 3.
    d2 = Driver(topics=d.topics)
    d2.machine = restarted
    d2.now = 100_000
    r = d2.hb("m1", 1, {T: [0, 1, 2]})
    assert (r.error, r.member_epoch) == (ErrorCode.NONE, 2)
    assert [(tp.topic_id, tp.partitions) for tp in r.assignment or ()] == [(T, (0, 1))]
    r = d2.hb("m1", 2, {T: [0, 1]})
    assert (r.error, r.member_epoch, r.assignment) == (ErrorCode.NONE, 3, None)


def test_a_deleted_group_stays_deleted_after_replay() -> None:
    d = Driver()
    d.topics.add("t", 1)
    d.join("m1", ["t"])
    _commit(d, "m1", 1)
    d.hb("m1", -1)
    d.apply(d.machine.delete_groups(d.now, "del", ["g"]))
    restarted = ConsumerGroupCoordinator(d.config, d.topics, offsets=OffsetManager(max_metadata_bytes=4096))
    restarted.begin_loading()
    for data in [encode_record(r) for r in d.persisted]:
        record = decode_record(data)
        if restarted.takes_record(record):
            restarted.load(record)
    restarted.finish_loading(0)
    assert not restarted.holds("g")
    assert d.offsets.count("g") == 0 and restarted.offsets.count("g") == 0


def test_the_group_logs_compaction_keeps_what_replay_needs() -> None:
    d = Driver()
    d.topics.add("t", 4)
    d.join("m1", ["t"])
    d.join("m2", ["t"])
    d.hb("m1", 1, {T: range(4)})
    d.hb("m1", 1, {T: [0, 1]})
    d.hb("m2", 2, {})
    d.join("m3", ["t"])
    d.hb("m3", -1)  # m3's member, target and current records are deleted by its tombstones
    kept = live_records(list(d.persisted))
    assert not any(getattr(r, "member_id", None) == "m3" for r in kept)
    assert len(kept) < len(d.persisted)

    restarted = ConsumerGroupCoordinator(d.config, d.topics, offsets=OffsetManager(max_metadata_bytes=4096))
    restarted.begin_loading()
    for record in kept:
        restarted.load(record)
    restarted.finish_loading(0)
    group, original = restarted.group("g"), d.machine.group("g")
    assert group is not None and original is not None
    assert (
        (group.group_epoch, group.assignment_epoch)
        == (original.group_epoch, original.assignment_epoch)
        == (4, 3)
    )
    assert group.members == original.members and list(group.members) == ["m1", "m2"]
    assert group.target == original.target
    assert group.partition_epochs == original.partition_epochs


def test_after_compaction_a_consumer_group_still_precedes_its_offsets() -> None:
    d = Driver()
    d.topics.add("t", 2)
    d.join("m1", ["t"])
    assert _commit(d, "m1", 1, offset=5) is ErrorCode.NONE
    d.join("m2", ["t"])  # rewrites the group epoch, the target epoch and m1's target after the commit
    d.hb("m1", -1)  # deletes m1's member, target and current records
    kept = live_records(list(d.persisted))
    restarted = ConsumerGroupCoordinator(d.config, d.topics, offsets=OffsetManager(max_metadata_bytes=4096))
    restarted.begin_loading()
    for record in kept:
        assert restarted.takes_record(record), record
        restarted.load(record)
    restarted.finish_loading(0)
    group = restarted.group("g")
    assert group is not None and list(group.members) == ["m2"] and group.group_epoch == 3
    assert restarted.offset_fetch(OffsetFetchRequest("g", [("t", 0)])).partitions[0].offset == 5
