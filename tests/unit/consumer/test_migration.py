"""Kafka 4's online migration between classic and consumer groups (``group.consumer.migration.policy``) through
the facade holding both machines, against hand-worked sequences: the upgrade when a consumer-protocol member joins
a classic group, classic members inside the consumer group (JoinGroup / SyncGroup / Heartbeat / LeaveGroup), the
downgrade when the last consumer-protocol member leaves, each policy, and replay of the records.

The common start (:meth:`Groups.classic_group_of_three`): topic t with 6 partitions, a Stable classic group at
generation 1 of c1-u1, c2-u2, c3-u3 (session 10 s, rebalance 60 s, protocol ``range``) owning {0, 1}, {2, 3},
{4, 5} (formed by t=1). Then k1 joins with the consumer protocol at t=1000."""

from __future__ import annotations

from coordinator.core.consumer.api import ConsumerGroupHeartbeatRequest
from coordinator.core.consumer.config import ConsumerGroupConfig
from coordinator.core.consumer.machine import (
    TIMER_CLASSIC_JOIN,
    TIMER_CLASSIC_SYNC,
    TIMER_SESSION,
)
from coordinator.core.consumer.member import MemberState
from coordinator.core.consumer.records import (
    ClassicMemberMetadata,
    ConsumerCurrentAssignmentRecord,
    ConsumerGroupEpochRecord,
    ConsumerMemberRecord,
    ConsumerTargetEpochRecord,
    ConsumerTargetMemberRecord,
    ConsumerTombstoneRecord,
)
from coordinator.core.group.api import (
    DeleteGroupsRequest,
    DescribeGroupsRequest,
    GroupState,
    JoinGroupResponse,
    ListGroupsRequest,
    OffsetCommitPartition,
    OffsetCommitRequest,
    OffsetFetchRequest,
    SyncGroupResponse,
)
from coordinator.core.group.errors import ErrorCode
from coordinator.core.group.records import GroupMetadataRecord, decode_record, encode_record
from coordinator.groups.log import live_records
from tests.support.groups_core import Groups, exclusive, parts_of, sub

C1, C2, C3 = "c1-u1", "c2-u2", "c3-u3"


def _upgraded() -> Groups:
    """The common start, then k1 joins: the upgrade (see test_upgrade_...)."""
    g = Groups()
    g.classic_group_of_three()
    g.now = 1000
    r = g.cjoin("k1")
    assert (r.error, r.member_epoch) == (ErrorCode.NONE, 2)
    return g


def _records(g: Groups, start: int = 0) -> list[object]:
    return [decode_record(data) for data in g.log[start:]]


# ================================================================================================ upgrade


def test_upgrade_keeps_classic_members_with_their_partitions() -> None:
    g = Groups()
    g.classic_group_of_three()
    logged = len(g.log)
    g.now = 1000
    r = g.cjoin("k1")
    assert g.facade.holder("g") == "consumer"
    assert g.classic.group("g") is None
    group = g.consumer.group("g")
    assert group is not None
    # The classic members become members at epoch 1 (the generation), Stable, owning their last assignment,
    # with their JoinGroup's session timeout and protocols as classic metadata.
    for member_id in (C1, C2, C3):
        m = group.members[member_id]
        assert (m.member_epoch, m.previous_member_epoch, m.state) == (1, 1, MemberState.STABLE)
        assert m.classic == ClassicMemberMetadata(10_000, (("range", sub()),))
        assert m.subscribed_topic_names == ("t",)
        assert m.rebalance_timeout_ms == 60_000
    # k1's join bumps the group epoch to 2 and the uniform assignor computes the target over c1-u1, c2-u2, c3-u3, k1
    # (member-id order): 6 // 4 = 1 each and 6 % 4 = 2 members may keep a second one; c1-u1 and c2-u2 own two
    # and keep them (using both extras), c3-u3 keeps its lowest (4), 5 goes to k1.
    assert (group.group_epoch, group.assignment_epoch) == (2, 2)
    assert g.targets() == {C1: {0, 1}, C2: {2, 3}, C3: {4}, "k1": {5}}
    # Nobody owns a partition twice: k1 waits for 5, which c3-u3 still owns.
    assert g.owners() == {C1: {0, 1}, C2: {2, 3}, C3: {4, 5}, "k1": set()}
    k1 = group.members["k1"]
    assert (r.member_epoch, r.assignment, k1.state) == (2, (), MemberState.UNRELEASED_PARTITIONS)
    # The classic members' timers now run in the consumer machine, on their own session timeout.
    assert g.timers == {
        (TIMER_SESSION, "g", C1): 11_000,
        (TIMER_SESSION, "g", C2): 11_000,
        (TIMER_SESSION, "g", C3): 11_000,
        (TIMER_SESSION, "g", "k1"): 46_000,
    }
    assert g.emitted("group_converted") == [
        {
            "group": "g",
            "from_type": "classic",
            "to_type": "consumer",
            "epoch": 1,
            "members": 3,
            "reason": "a consumer-protocol member joined (client )",
        }
    ]
    # Records: the classic group as Empty (Kafka's tombstone), the converted group (Kafka's
    # createConsumerGroupRecords order), then k1's heartbeat.
    records = _records(g, logged)
    assert records[0] == GroupMetadataRecord("g", 1, "consumer", None, None, 1000, ())
    assert [type(r).__name__ for r in records[1:12]] == [
        "ConsumerMemberRecord",
        "ConsumerMemberRecord",
        "ConsumerMemberRecord",
        "ConsumerGroupEpochRecord",
        "ConsumerTargetMemberRecord",
        "ConsumerTargetMemberRecord",
        "ConsumerTargetMemberRecord",
        "ConsumerTargetEpochRecord",
        "ConsumerCurrentAssignmentRecord",
        "ConsumerCurrentAssignmentRecord",
        "ConsumerCurrentAssignmentRecord",
    ]
    assert records[4] == ConsumerGroupEpochRecord("g", 1, ())
    assert records[8] == ConsumerTargetEpochRecord("g", 1)
    assert records[11] == ConsumerCurrentAssignmentRecord("g", C3, 1, 1, "stable", ((str(g.t), (4, 5)),), ())
    assert isinstance(records[1], ConsumerMemberRecord)
    assert records[1].classic == ClassicMemberMetadata(10_000, (("range", sub()),))


def test_classic_members_rejoin_through_join_and_sync_answered_by_the_consumer_group() -> None:
    g = _upgraded()
    g.now = 2000
    # c1-u1 is at epoch 1, the group at 2: it must rejoin (and has its rebalance timeout to do so).
    assert g.heartbeat(C1, 1).error is ErrorCode.REBALANCE_IN_PROGRESS
    assert g.timers[(TIMER_CLASSIC_JOIN, "g", C1)] == 62_000
    join = g.answer(g.join(C1, owned=[0, 1]))
    assert join == JoinGroupResponse(
        ErrorCode.NONE, member_id=C1, generation_id=2, protocol_type="consumer", protocol_name="range"
    )
    assert (TIMER_CLASSIC_JOIN, "g", C1) not in g.timers
    assert g.timers[(TIMER_CLASSIC_SYNC, "g", C1)] == 62_000
    assert g.timers[(TIMER_SESSION, "g", C1)] == 12_000
    sync = g.answer(g.sync(C1, 2))
    assert isinstance(sync, SyncGroupResponse) and sync.error is ErrorCode.NONE
    assert parts_of(sync.assignment) == {0, 1}
    assert (TIMER_CLASSIC_SYNC, "g", C1) not in g.timers
    assert g.heartbeat(C1, 2).error is ErrorCode.NONE
    # c3-u3 must give up 5 before k1 gets it: its JoinGroup (still owning 4 and 5) leaves it at epoch 1, revoking;
    # SyncGroup gives it {4} (what it keeps), its heartbeat asks it to rejoin, and its rejoin without 5 completes.
    join3 = g.answer(g.join(C3, owned=[4, 5]))
    assert isinstance(join3, JoinGroupResponse) and join3.generation_id == 1
    group = g.consumer.group("g")
    assert group is not None
    assert group.members[C3].state is MemberState.UNREVOKED_PARTITIONS
    sync3 = g.answer(g.sync(C3, 1))
    assert isinstance(sync3, SyncGroupResponse) and parts_of(sync3.assignment) == {4}
    assert g.heartbeat(C3, 1).error is ErrorCode.REBALANCE_IN_PROGRESS
    assert exclusive(g.owners())
    assert g.chb("k1", 2, []).assignment is None  # unchanged: 5 is still c3-u3's
    join3 = g.answer(g.join(C3, owned=[4]))
    assert isinstance(join3, JoinGroupResponse) and join3.generation_id == 2
    assert g.owners() == {C1: {0, 1}, C2: {2, 3}, C3: {4}, "k1": set()}
    r = g.chb("k1", 2, [])
    assert r.assignment is not None and [list(tp.partitions) for tp in r.assignment] == [[5]]
    assert g.owners() == {C1: {0, 1}, C2: {2, 3}, C3: {4}, "k1": {5}}


def test_classic_requests_inside_a_consumer_group_get_kafkas_errors() -> None:
    g = _upgraded()
    assert g.heartbeat(C2, 7).error is ErrorCode.ILLEGAL_GENERATION
    assert g.heartbeat("nobody", 1).error is ErrorCode.UNKNOWN_MEMBER_ID
    # k1 speaks the consumer protocol: the classic APIs do not know it.
    assert g.heartbeat("k1", 2).error is ErrorCode.UNKNOWN_MEMBER_ID
    # c2-u2 at epoch 1 while the group is at 2 and it is not revoking: rejoin first.
    sync = g.answer(g.sync(C2, 1))
    assert isinstance(sync, SyncGroupResponse) and sync.error is ErrorCode.REBALANCE_IN_PROGRESS
    # A protocol no classic member lists.
    bad = g.answer(g.join("", protocols=[("roundrobin", sub())]))
    assert isinstance(bad, JoinGroupResponse) and bad.error is ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    # OffsetCommit: a classic member commits with its member epoch as generation (below v9 too), else
    # ILLEGAL_GENERATION; a consumer-protocol member's stale epoch stays STALE_MEMBER_EPOCH.
    group = g.consumer.group("g")
    assert group is not None
    offsets = [OffsetCommitPartition("t", 2, 10)]
    assert group.validate_offset_commit(OffsetCommitRequest("g", offsets, 1, C2, api_version=8)) is None
    stale = OffsetCommitRequest("g", offsets, 0, C2, api_version=8)
    assert group.validate_offset_commit(stale) is ErrorCode.ILLEGAL_GENERATION
    stale_k1 = OffsetCommitRequest("g", offsets, 1, "k1", api_version=9)
    assert group.validate_offset_commit(stale_k1) is ErrorCode.STALE_MEMBER_EPOCH


def test_a_new_classic_member_joins_a_consumer_group() -> None:
    g = _upgraded()
    token = g.join("", client="c4")
    join = g.answer(token)
    # The consumer machine names it (v1 of its id generator); the group epoch goes to 3 and the target is
    # recomputed over 5 members: 6 // 5 = 1 each and one extra, kept by c1-u1 (the first in id order owning two).
    assert isinstance(join, JoinGroupResponse) and (join.error, join.member_id) == (ErrorCode.NONE, "v1")
    group = g.consumer.group("g")
    assert group is not None and group.group_epoch == 3
    assert g.targets() == {C1: {0, 1}, C2: {2}, C3: {4}, "k1": {5}, "v1": {3}}
    assert (
        join.generation_id == 3
    )  # nothing to wait for: it owns nothing and is given nothing yet (3 is c2-u2's)
    assert exclusive(g.owners())


def test_a_v4_classic_member_without_id_is_given_one_then_joins() -> None:
    g = _upgraded()
    first = g.answer(g.join("", client="c4", api_version=4))
    assert isinstance(first, JoinGroupResponse)
    assert (first.error, first.member_id) == (ErrorCode.MEMBER_ID_REQUIRED, "v1")
    group = g.consumer.group("g")
    assert group is not None and "v1" not in group.members and group.group_epoch == 2
    second = g.answer(g.join("v1", client="c4", api_version=4))
    assert isinstance(second, JoinGroupResponse) and (second.error, second.generation_id) == (
        ErrorCode.NONE,
        3,
    )


def test_a_classic_member_that_does_not_sync_in_time_is_fenced() -> None:
    g = _upgraded()
    g.now = 2000
    join = g.answer(g.join(C1, owned=[0, 1], rebalance_ms=30_000))
    assert isinstance(join, JoinGroupResponse) and join.generation_id == 2
    assert g.timers[(TIMER_CLASSIC_SYNC, "g", C1)] == 32_000
    for t in range(7000, 32_000, 5000):
        g.advance(t - g.now)
        for member_id in (C1, C2, C3):
            g.heartbeat(member_id, 2 if member_id == C1 else 1)
        g.chb("k1", 2, [])
    assert C1 in g.owners()
    g.advance(32_000 - g.now)
    assert C1 not in g.owners()


def test_a_classic_member_that_stops_heartbeating_is_fenced_by_its_session_timeout() -> None:
    g = _upgraded()
    g.advance(5000)
    for member_id in (C1, C3):
        assert g.heartbeat(member_id, 1).error is ErrorCode.REBALANCE_IN_PROGRESS
    g.chb("k1", 2, [])
    g.advance(5000)  # t=11000: c2-u2's session (10 s from the upgrade) ends
    group = g.consumer.group("g")
    assert group is not None
    assert set(group.members) == {C1, C3, "k1"}
    assert group.group_epoch == 3


def test_a_classic_member_that_does_not_rejoin_in_time_is_fenced() -> None:
    g = _upgraded()
    g.now = 2000
    assert g.heartbeat(C2, 1).error is ErrorCode.REBALANCE_IN_PROGRESS  # join timeout at 62 000
    for t in range(7000, 62_000, 5000):
        g.advance(t - g.now)
        for member_id in (C1, C2, C3):
            g.heartbeat(member_id, 1)
        g.chb("k1", 2, [])
    assert C2 in g.owners()
    g.advance(62_000 - g.now)
    group = g.consumer.group("g")
    assert group is not None and C2 not in group.members


def test_a_classic_leave_removes_the_member_and_bumps_the_group_epoch() -> None:
    g = _upgraded()
    r = g.leave(C2)
    assert [(m.member_id, m.error) for m in r.members] == [(C2, ErrorCode.NONE)]
    group = g.consumer.group("g")
    assert group is not None and C2 not in group.members and group.group_epoch == 3
    assert (TIMER_SESSION, "g", C2) not in g.timers
    # A consumer-protocol member cannot leave through LeaveGroup.
    assert [m.error for m in g.leave("k1").members] == [ErrorCode.UNKNOWN_MEMBER_ID]


# ================================================================================================ downgrade


def test_downgrade_when_the_last_consumer_member_leaves() -> None:
    g = _upgraded()
    g.now = 2000
    logged = len(g.log)
    r = g.cleave("k1")
    assert (r.error, r.member_epoch) == (ErrorCode.NONE, -1)
    assert g.facade.holder("g") == "classic"
    assert g.consumer.group("g") is None
    classic = g.classic.group("g")
    assert classic is not None
    # Stable at the group epoch (2), then a rebalance at once; each member's assignment is its target.
    assert classic.generation_id == 2
    assert classic.state is GroupState.PREPARING_REBALANCE
    assert (classic.protocol_type, classic.protocol_name, classic.leader_id) == ("consumer", "range", C1)
    assert g.classic_owners() == {C1: {0, 1}, C2: {2, 3}, C3: {4}}
    assert {k: v for k, v in g.timers.items() if k[0] == "heartbeat"} == {
        ("heartbeat", "g", C1): 12_000,
        ("heartbeat", "g", C2): 12_000,
        ("heartbeat", "g", C3): 12_000,
    }
    assert g.timers[("join", "g")] == 62_000  # the rebalance timeout (60 s)
    assert not [k for k in g.timers if str(k[0]).startswith("consumer-")]
    # Records: the consumer group's tombstones (Kafka's order), then the classic group (Stable, with assignments).
    records = _records(g, logged)
    assert [(r.kind, r.member_id) for r in records[:-1] if isinstance(r, ConsumerTombstoneRecord)] == [
        ("current", C1),
        ("current", C2),
        ("current", C3),
        ("current", "k1"),
        ("target", C1),
        ("target", C2),
        ("target", C3),
        ("target", "k1"),
        ("target_epoch", None),
        ("member", C1),
        ("member", C2),
        ("member", C3),
        ("member", "k1"),
        ("group", None),
    ]
    last = records[-1]
    assert isinstance(last, GroupMetadataRecord)
    assert (last.generation_id, last.protocol_name, last.leader_id) == (2, "range", C1)
    assert [(m.member_id, parts_of(m.assignment)) for m in last.members] == [
        (C1, {0, 1}),
        (C2, {2, 3}),
        (C3, {4}),
    ]
    # The classic members rejoin the classic group: generation 3, c1-u1 leads.
    tokens = [g.join(m, owned=sorted(g.classic_owners()[m])) for m in (C1, C2, C3)]
    answers = [g.answer(t) for t in tokens]
    assert [(a.generation_id, a.leader) for a in answers] == [(3, C1), (3, C1), (3, C1)]


def test_a_consumer_member_whose_session_ends_downgrades_the_group_too() -> None:
    g = _upgraded()
    for t in range(5000, 50_000, 5000):
        g.advance(t - g.now)
        if g.facade.holder("g") == "consumer":
            for member_id in (C1, C2, C3):
                g.heartbeat(member_id, 1)
    g.advance(50_000 - g.now)
    assert g.facade.holder("g") == "classic"  # k1's session ended at 46 000


def test_a_classic_static_member_replacing_the_last_consumer_member_downgrades_the_group() -> None:
    g = Groups()
    g.classic_group_of_three()
    g.now = 1000
    static_join = ConsumerGroupHeartbeatRequest(
        "g",
        "k1",
        0,
        instance_id="i1",
        rebalance_timeout_ms=60_000,
        subscribed_topic_names=("t",),
        topic_partitions=(),
    )
    assert g.send(static_join).member_epoch == 2  # as in the upgrade test: k1's target is {5}, still c3-u3's
    # k1 shuts down as a static member (-2: it stays until its session ends) and restarts as a classic member with
    # the same instance id.
    assert g.send(ConsumerGroupHeartbeatRequest("g", "k1", -2, instance_id="i1")).member_epoch == -2
    g.now = 2000
    join = g.answer(g.join("", client="c4", instance_id="i1"))
    # The replacing member (named v1 by the consumer machine) takes k1's place and target; its subscription is k1's,
    # so it is reconciled (epoch 2, waiting for 5) and the classic group, Stable at generation 2, does not rebalance.
    assert join == JoinGroupResponse(
        ErrorCode.NONE, member_id="v1", generation_id=2, protocol_type="consumer", protocol_name="range"
    )
    assert g.facade.holder("g") == "classic"
    classic = g.classic.group("g")
    assert classic is not None
    assert (classic.generation_id, classic.state, classic.leader_id) == (2, GroupState.STABLE, C1)
    assert classic.static_members == {"i1": "v1"}
    assert g.classic_owners() == {C1: {0, 1}, C2: {2, 3}, C3: {4}, "v1": {5}}
    assert ("join", "g") not in g.timers
    sync = g.answer(g.sync("v1", 2))
    assert isinstance(sync, SyncGroupResponse) and parts_of(sync.assignment) == {5}
    # c3-u3, still at generation 1, must rejoin the classic group.
    assert g.heartbeat(C3, 1).error is ErrorCode.ILLEGAL_GENERATION


# ================================================================================================ policies


def test_kafka_4s_default_policy_is_bidirectional() -> None:
    assert ConsumerGroupConfig().migration_policy == "bidirectional"
    cfg = ConsumerGroupConfig.from_properties({"group.consumer.migration.policy": "UPGRADE"})
    assert (cfg.migration_policy, cfg.upgrade_enabled, cfg.downgrade_enabled) == ("upgrade", True, False)


def test_disabled_refuses_the_upgrade_with_group_id_not_found() -> None:
    for policy in ("disabled", "downgrade"):
        g = Groups(consumer_config=ConsumerGroupConfig(migration_policy=policy))
        g.classic_group_of_three()
        logged = len(g.log)
        r = g.cjoin("k1")
        assert (r.error, r.error_message) == (
            ErrorCode.GROUP_ID_NOT_FOUND,
            "Cannot upgrade classic group g to consumer group because online upgrade is disabled.",
        )
        assert g.facade.holder("g") == "classic" and len(g.log) == logged
        classic = g.classic.group("g")
        assert classic is not None and classic.state is GroupState.STABLE and len(classic.members) == 3


def test_upgrade_only_keeps_the_consumer_group_when_the_last_consumer_member_leaves() -> None:
    g = Groups(consumer_config=ConsumerGroupConfig(migration_policy="upgrade"))
    g.classic_group_of_three()
    assert g.cjoin("k1").error is ErrorCode.NONE
    g.cleave("k1")
    assert g.facade.holder("g") == "consumer"
    group = g.consumer.group("g")
    assert group is not None and set(group.members) == {C1, C2, C3} and group.group_epoch == 3


def test_an_empty_classic_group_is_taken_over_whatever_the_policy() -> None:
    g = Groups(consumer_config=ConsumerGroupConfig(migration_policy="disabled"))
    token = g.join("", client="c1")
    g.advance(1)
    join = g.answer(token)
    assert isinstance(join, JoinGroupResponse) and join.member_id == "c1-u1"
    g.answer(g.sync("c1-u1", 1, {"c1-u1": range(6)}))
    g.leave("c1-u1")
    classic = g.classic.group("g")
    assert classic is not None and classic.state is GroupState.EMPTY
    assert g.cjoin("k1").error is ErrorCode.NONE
    assert g.facade.holder("g") == "consumer" and g.classic.group("g") is None


def test_other_refusals_of_the_upgrade() -> None:
    g = Groups()
    g.classic_group_of_three()
    # Not a join: the group is not a consumer group.
    assert g.chb("k1", 3).error_message == "Group g is not a consumer group."
    # Over group.consumer.max.size.
    small = Groups(consumer_config=ConsumerGroupConfig(max_size=2))
    small.classic_group_of_three()
    assert small.cjoin("k1").error_message == (
        "Cannot upgrade classic group g to consumer group because the group size exceeds the consumer group "
        "maximum size."
    )
    # A protocol type other than "consumer" (Kafka Connect's, say).
    other = Groups()
    tokens = [other.join("", client=f"w{i}", protocol_type="connect") for i in (1, 2)]
    other.advance(1)
    assert all(isinstance(other.answer(t), JoinGroupResponse) for t in tokens)
    assert other.cjoin("k1").error_message == (
        "Cannot upgrade classic group g to consumer group because the group does not use the consumer embedded "
        "protocol."
    )
    # A subscription that does not decode.
    bad = Groups()
    tokens = [bad.join("", client=f"b{i}", protocols=[("range", b"\x00")]) for i in (1, 2)]
    bad.advance(1)
    assert bad.cjoin("k1").error_message == (
        "Cannot upgrade classic group g to consumer group because the embedded consumer protocol is malformed."
    )
    assert bad.facade.holder("g") == "classic"


def test_a_failed_joining_heartbeat_converts_nothing() -> None:
    g = Groups()
    g.classic_group_of_three()
    logged = len(g.log)
    r = g.send(
        ConsumerGroupHeartbeatRequest(
            "g",
            "k1",
            0,
            rebalance_timeout_ms=1000,
            subscribed_topic_names=("t",),
            topic_partitions=(),
            server_assignor="nope",
        )
    )
    assert r.error is ErrorCode.UNSUPPORTED_ASSIGNOR
    assert g.facade.holder("g") == "classic" and len(g.log) == logged


# ================================================================================================ replay


def test_a_restart_after_the_upgrade_keeps_the_consumer_group_and_its_classic_members() -> None:
    g = Groups()
    g.classic_group_of_three()
    commit = OffsetCommitRequest("g", [OffsetCommitPartition("t", 0, 42)], 1, C1)
    g.apply(g.facade.offset_commit(0, "c", commit))
    g.now = 1000
    g.cjoin("k1")
    g.now = 3000
    g.answer(g.join(C1, owned=[0, 1]))
    upgraded = g.consumer.group("g")
    assert upgraded is not None
    before = dict(upgraded.members)
    g.restart()
    assert g.facade.holder("g") == "consumer" and g.classic.group("g") is None
    group = g.consumer.group("g")
    assert group is not None
    assert dict(group.members) == before
    assert (group.group_epoch, group.assignment_epoch) == (2, 2)
    assert g.targets() == {C1: {0, 1}, C2: {2, 3}, C3: {4}, "k1": {5}}
    assert g.timers == {
        (TIMER_SESSION, "g", C1): 13_000,
        (TIMER_SESSION, "g", C2): 13_000,
        (TIMER_SESSION, "g", C3): 13_000,
        (TIMER_SESSION, "g", "k1"): 48_000,
    }
    fetched = g.facade.offset_fetch(g.now, OffsetFetchRequest("g", [("t", 0)]))
    assert [(p.partition, p.offset) for p in fetched.partitions] == [(0, 42)]


def test_a_restart_after_the_downgrade_keeps_the_classic_group() -> None:
    g = _upgraded()
    g.cleave("k1")
    g.restart()
    assert g.facade.holder("g") == "classic" and g.consumer.group("g") is None
    classic = g.classic.group("g")
    assert classic is not None
    assert (classic.generation_id, classic.state) == (2, GroupState.STABLE)
    assert g.classic_owners() == {C1: {0, 1}, C2: {2, 3}, C3: {4}}


def _compact(g: Groups) -> None:
    """The group log's compaction (what a restart of a long-lived broker replays)."""
    g.log = [encode_record(r) for r in live_records([decode_record(d) for d in g.log])]


def test_replay_of_a_compacted_log_gives_the_same_groups() -> None:
    """Compaction (the group log's) keeps the last record per key and puts consumer records first: the classic
    group's last record (Empty, the upgrade's) then follows the consumer group's, which still wins."""
    g = _upgraded()
    g.answer(g.join(C1, owned=[0, 1]))
    before = g.owners()
    _compact(g)
    g.restart()
    assert g.facade.holder("g") == "consumer" and g.owners() == before
    g.cleave("k1")
    _compact(g)
    g.restart()
    assert g.facade.holder("g") == "classic" and g.classic_owners() == {C1: {0, 1}, C2: {2, 3}, C3: {4}}


def test_the_member_record_of_a_classic_member_round_trips() -> None:
    record = ConsumerMemberRecord(
        "g",
        "m",
        None,
        None,
        "c",
        "h",
        ("t",),
        None,
        None,
        5,
        ClassicMemberMetadata(6000, (("range", b"\x00\x01"),)),
    )
    assert decode_record(encode_record(record)) == record
    plain = ConsumerMemberRecord("g", "m", None, None, "c", "h", ("t",), None, None, 5)
    assert "classic" not in plain.to_dict() and decode_record(encode_record(plain)) == plain
    assert ConsumerTargetMemberRecord("g", "m").partitions == ()


# ================================================================================================ rolling restarts


def _check(g: Groups) -> None:
    """No partition assigned to two members at once, in the current and in the target assignment."""
    if g.facade.holder("g") == "consumer":
        assert exclusive(g.owners()), g.owners()
        assert exclusive(g.targets()), g.targets()
    else:
        assert exclusive(g.classic_owners()), g.classic_owners()


def _settle(g: Groups) -> None:
    """Every member of the consumer group heartbeats until nobody has anything left to do: a classic member told
    to rejoin rejoins owning what it was assigned (it revoked the rest) and syncs; a consumer-protocol member
    reports what it owns. The invariant is checked after every request."""
    for _ in range(5):
        group = g.consumer.group("g")
        assert group is not None
        for m in list(group.members.values()):
            if m.classic is not None:
                if g.heartbeat(m.member_id, m.member_epoch).error is ErrorCode.REBALANCE_IN_PROGRESS:
                    join = g.answer(g.join(m.member_id, owned=sorted(m.assigned.get(g.t, frozenset()))))
                    assert isinstance(join, JoinGroupResponse) and join.error is ErrorCode.NONE
                    _check(g)
                    sync = g.answer(g.sync(m.member_id, join.generation_id))
                    assert isinstance(sync, SyncGroupResponse) and sync.error is ErrorCode.NONE
            else:
                g.chb(m.member_id, m.member_epoch, sorted(m.assigned.get(g.t, frozenset())))
            _check(g)
        if group.state.value == "Stable" and all(
            m.member_epoch == group.group_epoch for m in group.members.values()
        ):
            return
    raise AssertionError(f"not settled: {g.owners()}")


def test_rolling_restart_from_classic_to_consumer_members() -> None:
    g = Groups()
    g.classic_group_of_three()
    g.now = 1000
    # c1 restarts: it leaves the classic group, which rebalances; c2 rejoins (parked) before c1 comes back as k1.
    assert [m.error for m in g.leave(C1).members] == [ErrorCode.NONE]
    parked = g.join(C2, owned=[2, 3])
    assert g.answer(parked) is None
    r = g.cjoin("k1")
    # The upgrade answers the parked JoinGroup REBALANCE_IN_PROGRESS; the converted group (generation 1) has c2-u2
    # {2, 3} and c3-u3 {4, 5}; k1's join bumps it to 2 and the uniform target gives 6 // 3 = 2 each: c2-u2 and
    # c3-u3 keep theirs, k1 gets c1's free {0, 1} at once.
    parked_answer = g.answer(parked)
    assert isinstance(parked_answer, JoinGroupResponse)
    assert parked_answer.error is ErrorCode.REBALANCE_IN_PROGRESS
    assert (r.member_epoch, [list(tp.partitions) for tp in r.assignment or ()]) == (2, [[0, 1]])
    assert g.owners() == {C2: {2, 3}, C3: {4, 5}, "k1": {0, 1}}
    _check(g)
    _settle(g)
    # c2 restarts as k2: its leave frees {2, 3} (epoch 3), k2's join (epoch 4) takes them.
    g.now = 2000
    assert [m.error for m in g.leave(C2).members] == [ErrorCode.NONE]
    _check(g)
    r = g.cjoin("k2")
    assert (r.member_epoch, [list(tp.partitions) for tp in r.assignment or ()]) == (4, [[2, 3]])
    _settle(g)
    # c3 restarts as k3 (epochs 5 and 6).
    g.now = 3000
    g.leave(C3)
    r = g.cjoin("k3")
    assert (r.member_epoch, [list(tp.partitions) for tp in r.assignment or ()]) == (6, [[4, 5]])
    _settle(g)
    group = g.consumer.group("g")
    assert group is not None
    assert g.owners() == {"k1": {0, 1}, "k2": {2, 3}, "k3": {4, 5}}
    assert all(m.classic is None for m in group.members.values())
    assert group.classic_members == 0


def test_rolling_restart_from_consumer_to_classic_members() -> None:
    g = Groups()
    g.topics.add("t", 6)
    for k in ("k1", "k2", "k3"):
        g.cjoin(k)
    _settle(g)
    # k1 alone takes all 6 (epoch 1); with k2 (epoch 2) 3 each: k1 keeps its lowest {0, 1, 2}, k2 gets {3, 4, 5};
    # with k3 (epoch 3) 2 each: k1 keeps {0, 1}, k2 keeps {3, 4}, k3 gets the freed {2, 5}.
    assert g.owners() == {"k1": {0, 1}, "k2": {3, 4}, "k3": {2, 5}}
    # k1 restarts as a classic member: its leave (epoch 4; k2, k3 still speak the consumer protocol: no downgrade)
    # frees {0, 1}; the classic member joins (named v1 by the consumer machine, epoch 5) and gets them at once.
    g.now = 1000
    g.cleave("k1")
    assert g.facade.holder("g") == "consumer"
    join = g.answer(g.join("", client="c1"))
    assert isinstance(join, JoinGroupResponse)
    assert (join.error, join.member_id, join.generation_id) == (ErrorCode.NONE, "v1", 5)
    sync = g.answer(g.sync("v1", 5))
    assert isinstance(sync, SyncGroupResponse) and parts_of(sync.assignment) == {0, 1}
    _check(g)
    _settle(g)
    # k2 restarts as classic member v2 (epochs 6 and 7) and gets k2's {3, 4}.
    g.now = 2000
    g.cleave("k2")
    join = g.answer(g.join("", client="c2"))
    assert isinstance(join, JoinGroupResponse) and (join.member_id, join.generation_id) == ("v2", 7)
    assert parts_of(g.answer(g.sync("v2", 7)).assignment) == {3, 4}
    _settle(g)
    # k3, the last consumer-protocol member, leaves: the group becomes a classic group at generation 7 with v1
    # {0, 1} and v2 {3, 4}, rebalancing; the restarted c3 joins it (classic id c3-u1) with v1 and v2, and the
    # leader v1 gives c3-u1 the free {2, 5} at generation 8.
    g.now = 3000
    g.cleave("k3")
    assert g.facade.holder("g") == "classic"
    classic = g.classic.group("g")
    assert classic is not None and (classic.generation_id, classic.state) == (
        7,
        GroupState.PREPARING_REBALANCE,
    )
    assert g.classic_owners() == {"v1": {0, 1}, "v2": {3, 4}}
    _check(g)
    # (c3 first: the join completes as soon as every member has joined.)
    tokens = [g.join("", client="c3"), g.join("v1", owned=[0, 1]), g.join("v2", owned=[3, 4])]
    answers = [g.answer(t) for t in tokens]
    assert [(a.member_id, a.generation_id, a.leader) for a in answers] == [
        ("c3-u1", 8, "v1"),
        ("v1", 8, "v1"),
        ("v2", 8, "v1"),
    ]
    plan = {"v1": [0, 1], "v2": [3, 4], "c3-u1": [2, 5]}
    syncs = [g.sync("v1", 8, plan), g.sync("v2", 8), g.sync("c3-u1", 8)]
    assert [parts_of(g.answer(t).assignment) for t in syncs] == [{0, 1}, {3, 4}, {2, 5}]
    classic = g.classic.group("g")
    assert classic is not None and classic.state is GroupState.STABLE
    assert g.classic_owners() == {"v1": {0, 1}, "v2": {3, 4}, "c3-u1": {2, 5}}


# ================================================================================================ routing


def test_a_classic_join_to_an_empty_consumer_group_replaces_it_by_a_classic_group() -> None:
    g = Groups()
    g.cjoin("k1")
    g.cleave("k1")
    group = g.consumer.group("g")
    assert group is not None and not group.members
    token = g.join("", client="c1")
    assert g.consumer.group("g") is None
    # Its tombstones (Kafka ``createGroupTombstoneRecords``, no offsets' tombstone) come before the classic join.
    assert [type(r).__name__ for r in _records(g)[-2:]] == [
        "ConsumerTombstoneRecord",
        "ConsumerTombstoneRecord",
    ]
    g.advance(1)
    join = g.answer(token)
    assert isinstance(join, JoinGroupResponse) and (join.error, join.generation_id) == (ErrorCode.NONE, 1)
    assert g.facade.holder("g") == "classic"


def test_list_describe_and_delete_go_to_the_machine_holding_each_group() -> None:
    g = _upgraded()
    # A second id: an Empty classic group "h" made by a simple commit.
    g.apply(g.facade.offset_commit(g.now, "c", OffsetCommitRequest("h", [OffsetCommitPartition("t", 0, 1)])))
    listed = g.facade.list_groups(g.now, ListGroupsRequest())
    assert sorted((x.group_id, x.group_type, x.state) for x in listed.groups) == [
        ("g", "consumer", "Reconciling"),
        ("h", "classic", "Empty"),
    ]
    described = g.facade.describe_groups(g.now, DescribeGroupsRequest(["h", "g"])).groups
    assert [(d.group_id, d.error) for d in described] == [
        ("h", ErrorCode.NONE),
        ("g", ErrorCode.GROUP_ID_NOT_FOUND),
    ]
    g.apply(g.facade.delete_groups(g.now, "del", DeleteGroupsRequest(["g", "h"])))
    response = g.answer("del")
    assert [(r.group_id, r.error) for r in response.results] == [
        ("g", ErrorCode.NON_EMPTY_GROUP),
        ("h", ErrorCode.NONE),
    ]
