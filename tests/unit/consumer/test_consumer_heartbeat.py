"""The consumer-group machine against hand-worked heartbeat sequences (Kafka 4's ``GroupMetadataManager``,
``CurrentAssignmentBuilder``): join, revocation before assignment, fencing, timeouts, static members."""

from __future__ import annotations

from coordinator.core.consumer.api import ConsumerGroupHeartbeatRequest
from coordinator.core.consumer.config import ConsumerGroupConfig
from coordinator.core.consumer.machine import TIMER_REBALANCE, TIMER_SESSION
from coordinator.core.consumer.member import MemberState
from coordinator.core.group.errors import ErrorCode
from tests.support.consumer_core import Driver, as_dict, tid, tps

T = tid(1)  # the first topic FakeTopics.add creates


def _two_members_revoking() -> Driver:
    """m1 owns t's 6 partitions; m2 joins: the target gives m1 0-2 and m2 3-5 (uniform: members m1, m2 in id
    order, 6 // 2 = 3 each, m1 keeps its lowest 3)."""
    d = Driver()
    d.topics.add("t", 6)
    d.join("m1", ["t"])
    d.now = 1000
    d.join("m2", ["t"])
    return d


def test_first_member_gets_epoch_1_and_every_partition() -> None:
    d = Driver()
    d.topics.add("t", 6)
    r = d.join("m1", ["t"])
    assert r.error is ErrorCode.NONE
    assert (r.member_id, r.member_epoch, r.heartbeat_interval_ms) == ("m1", 1, 5000)
    assert as_dict(r.assignment) == {T: [0, 1, 2, 3, 4, 5]}
    group = d.machine.group("g")
    assert group is not None
    assert (group.group_epoch, group.assignment_epoch, group.state.value) == (1, 1, "Stable")
    assert d.timers == {(TIMER_SESSION, "g", "m1"): 45_000}
    assert d.emitted("group_state") == [
        {"group": "g", "from_state": "Empty", "state": "Stable", "epoch": 1, "members": 1}
    ]
    assert d.emitted("target_assignment") == [
        {"group": "g", "epoch": 1, "members": 1, "partitions_moved": 6, "assignor": "uniform"}
    ]
    assert d.emitted("member_epoch") == [
        {"group": "g", "member": "m1", "epoch": 1, "previous_epoch": 0, "state": "stable"}
    ]
    assert [f["member"] for f in d.emitted("member_added")] == ["m1"]


def test_a_v0_join_is_given_a_member_id() -> None:
    d = Driver()
    d.topics.add("t", 1)
    r = d.send(
        ConsumerGroupHeartbeatRequest(
            "g",
            "",
            0,
            rebalance_timeout_ms=1000,
            subscribed_topic_names=("t",),
            topic_partitions=(),
            api_version=0,
        )
    )
    assert (r.error, r.member_id, r.member_epoch) == (ErrorCode.NONE, "uuid-1", 1)


def test_second_member_waits_until_the_first_revokes() -> None:
    d = _two_members_revoking()
    r2 = d.effects
    group = d.machine.group("g")
    assert group is not None
    # m2 is at the new epoch 2 with nothing: its whole target is still held by m1 (epoch 1).
    m2 = group.members["m2"]
    assert (m2.member_epoch, m2.state, dict(m2.assigned)) == (2, MemberState.UNRELEASED_PARTITIONS, {})
    assert dict(group.target["m1"]) == {T: frozenset({0, 1, 2})}
    assert dict(group.target["m2"]) == {T: frozenset({3, 4, 5})}
    assert group.state.value == "Reconciling"
    assert {
        "group": "g",
        "epoch": 2,
        "members": 2,
        "partitions_moved": 3,
        "assignor": "uniform",
    } in d.emitted("target_assignment", r2)

    # m1 is asked to revoke 3-5 first: it stays at epoch 1, its assignment shrinks, nothing is added.
    d.now = 2000
    r = d.hb("m1", 1, {T: range(6)})
    assert (r.error, r.member_epoch, as_dict(r.assignment)) == (ErrorCode.NONE, 1, {T: [0, 1, 2]})
    assert group.members["m1"].state is MemberState.UNREVOKED_PARTITIONS
    assert d.timers[(TIMER_REBALANCE, "g", "m1")] == 2000 + 300_000

    # m2 still gets nothing while m1 holds 3-5; nothing changed, so no assignment in the answer.
    r = d.hb("m2", 2, {})
    assert (r.member_epoch, r.assignment) == (2, None)

    # m1 acknowledges the revocation: epoch 2, stable, same partitions (no assignment sent).
    d.now = 3000
    r = d.hb("m1", 1, {T: [0, 1, 2]})
    assert (r.member_epoch, r.assignment) == (2, None)
    assert group.members["m1"].state is MemberState.STABLE
    assert (TIMER_REBALANCE, "g", "m1") not in d.timers
    assert d.emitted("member_epoch") == [
        {"group": "g", "member": "m1", "epoch": 2, "previous_epoch": 1, "state": "stable"}
    ]

    # Now m2 is given 3-5 and the group is Stable.
    r = d.hb("m2", 2, {})
    assert (r.member_epoch, as_dict(r.assignment)) == (2, {T: [3, 4, 5]})
    assert group.members["m2"].state is MemberState.STABLE
    assert group.state.value == "Stable"
    assert d.emitted("group_state") == [
        {"group": "g", "from_state": "Reconciling", "state": "Stable", "epoch": 2, "members": 2}
    ]


def test_a_heartbeat_that_omits_owned_partitions_does_not_count_as_a_revocation() -> None:
    d = _two_members_revoking()
    d.hb("m1", 1, {T: range(6)})
    r = d.hb("m1", 1, None)
    group = d.machine.group("g")
    assert group is not None
    assert (r.member_epoch, group.members["m1"].state) == (1, MemberState.UNREVOKED_PARTITIONS)


def test_fenced_member_epochs() -> None:
    d = _two_members_revoking()
    d.hb("m1", 1, {T: range(6)})
    d.hb("m1", 1, {T: [0, 1, 2]})  # m1 at epoch 2, previous epoch 1, owns 0-2
    ahead = d.hb("m1", 3, {T: [0, 1, 2]})
    assert ahead.error is ErrorCode.FENCED_MEMBER_EPOCH
    assert (ahead.member_id, ahead.member_epoch, ahead.assignment) == (None, 0, None)
    # The previous epoch with a subset of the assignment is taken (the answer with epoch 2 may have been lost)...
    lost = d.hb("m1", 1, {T: [0, 1]})
    assert (lost.error, lost.member_epoch) == (ErrorCode.NONE, 2)
    # ... but not with a partition it no longer has, nor without saying what it owns, nor an older epoch.
    assert d.hb("m1", 1, {T: [0, 1, 2, 3]}).error is ErrorCode.FENCED_MEMBER_EPOCH
    assert d.hb("m1", 1, None).error is ErrorCode.FENCED_MEMBER_EPOCH
    # A rejoin with epoch 0 under the same id while the member is still there: 0 is not its previous epoch.
    assert d.join("m1", ["t"]).error is ErrorCode.FENCED_MEMBER_EPOCH
    group = d.machine.group("g")
    assert group is not None and group.members["m1"].member_epoch == 2  # the group kept serving it


def test_session_expiry_removes_the_member_and_the_rest_get_its_partitions() -> None:
    d = _two_members_revoking()
    d.hb("m1", 1, {T: range(6)})
    d.hb("m1", 1, {T: [0, 1, 2]})
    d.hb("m2", 2, {})  # m2 at 1000 + ... its last heartbeat is at now = 1000
    assert d.timers[(TIMER_SESSION, "g", "m2")] == 1000 + 45_000
    d.now = 40_000
    d.hb("m1", 2, {T: [0, 1, 2]})
    fired = d.advance(46_000 - 40_000)
    assert d.emitted("member_removed", fired) == [
        {
            "group": "g",
            "member": "m2",
            "epoch": 3,
            "member_epoch": 2,
            "instance_id": None,
            "reason": "expired",
        }
    ]
    group = d.machine.group("g")
    assert group is not None
    assert (group.group_epoch, group.assignment_epoch, group.state.value) == (3, 2, "Assigning")
    r = d.hb("m1", 2, {T: [0, 1, 2]})
    assert (r.member_epoch, as_dict(r.assignment)) == (3, {T: [0, 1, 2, 3, 4, 5]})
    assert group.state.value == "Stable"


def test_a_member_that_never_revokes_is_fenced_at_its_rebalance_timeout() -> None:
    d = Driver()
    d.topics.add("t", 6)
    d.join("m1", ["t"], rebalance_timeout_ms=10_000)
    d.now = 1000
    d.join("m2", ["t"])
    d.now = 2000
    d.hb("m1", 1, {T: range(6)})  # asked to revoke 3-5: deadline 12_000
    assert d.timers[(TIMER_REBALANCE, "g", "m1")] == 12_000
    for now in (5000, 9000):  # keeps heartbeating, keeps the partitions
        d.now = now
        assert d.hb("m1", 1, {T: [0, 1, 2, 3, 4, 5]}).member_epoch == 1
    fired = d.advance(12_000 - 9000)
    assert [(f["member"], f["reason"]) for f in d.emitted("member_removed", fired)] == [
        ("m1", "rebalance_timeout")
    ]
    assert d.hb("m1", 1, {T: range(6)}).error is ErrorCode.UNKNOWN_MEMBER_ID
    r = d.hb("m2", 2, {})
    assert (r.member_epoch, as_dict(r.assignment)) == (3, {T: [0, 1, 2, 3, 4, 5]})


def test_leave_answers_epoch_minus_one_and_bumps_the_group_epoch() -> None:
    d = Driver()
    d.topics.add("t", 2)
    d.join("m1", ["t"])
    r = d.hb("m1", -1)
    assert (r.error, r.member_id, r.member_epoch) == (ErrorCode.NONE, "m1", -1)
    group = d.machine.group("g")
    assert group is not None
    assert (group.group_epoch, group.state.value, dict(group.members)) == (2, "Empty", {})
    assert (TIMER_SESSION, "g", "m1") not in d.timers
    assert d.hb("m1", -1).error is ErrorCode.UNKNOWN_MEMBER_ID
    assert d.hb("zz", 1).error is ErrorCode.UNKNOWN_MEMBER_ID
    d.group = "nope"
    assert d.hb("m1", 1).error is ErrorCode.GROUP_ID_NOT_FOUND
    assert d.hb("m1", -1).error is ErrorCode.GROUP_ID_NOT_FOUND


def test_static_member_leaves_for_a_while_and_rejoins_with_its_assignment() -> None:
    d = Driver()
    d.topics.add("t", 4)
    d.join("a", ["t"], instance_id="i1")
    d.now = 1000
    r = d.hb("a", -2, instance_id="i1")
    assert (r.error, r.member_id, r.member_epoch, r.heartbeat_interval_ms) == (ErrorCode.NONE, "a", -2, 0)
    group = d.machine.group("g")
    assert group is not None
    assert group.group_epoch == 1 and group.members["a"].member_epoch == -2
    assert d.timers[(TIMER_SESSION, "g", "a")] == 45_000  # not re-armed by the leave

    d.now = 2000
    r = d.join("b", ["t"], instance_id="i1")
    assert (r.error, r.member_id, r.member_epoch, as_dict(r.assignment)) == (
        ErrorCode.NONE,
        "b",
        1,
        {T: [0, 1, 2, 3]},
    )
    assert group.group_epoch == 1  # no bump: the same subscription under the same instance id
    assert list(group.members) == ["b"] and group.static_members == {"i1": "b"}
    assert d.emitted("member_removed") == [
        {
            "group": "g",
            "member": "a",
            "epoch": 1,
            "member_epoch": -2,
            "instance_id": "i1",
            "reason": "static_replaced",
        }
    ]
    assert [f.get("replaces") for f in d.emitted("member_added")] == ["a"]
    assert (TIMER_SESSION, "g", "a") not in d.timers


def test_static_member_left_with_minus_two_expires_at_its_session_timeout() -> None:
    d = Driver()
    d.topics.add("t", 4)
    d.join("a", ["t"], instance_id="i1")
    d.hb("a", -2, instance_id="i1")
    fired = d.advance(45_000)
    assert [(f["member"], f["reason"]) for f in d.emitted("member_removed", fired)] == [("a", "expired")]


def test_an_instance_id_still_in_use_is_unreleased() -> None:
    d = Driver()
    d.topics.add("t", 4)
    d.join("a", ["t"], instance_id="i1")
    r = d.join("c", ["t"], instance_id="i1")
    assert r.error is ErrorCode.UNRELEASED_INSTANCE_ID
    assert d.hb("c", 1, instance_id="i1").error is ErrorCode.FENCED_INSTANCE_ID
    assert d.hb("c", -2, instance_id="i9").error is ErrorCode.UNKNOWN_MEMBER_ID
    group = d.machine.group("g")
    assert group is not None and list(group.members) == ["a"]


def test_subscriptions_to_topics_that_do_not_exist_are_accepted_and_assign_nothing() -> None:
    d = Driver()
    d.topics.add("t", 2)
    r = d.join("m1", ["nope"])
    assert (r.error, r.member_epoch, as_dict(r.assignment)) == (ErrorCode.NONE, 1, {})
    r = d.join("m2", ["t", "nope"])
    assert (r.error, r.member_epoch, as_dict(r.assignment)) == (ErrorCode.NONE, 2, {T: [0, 1]})


def test_a_topic_created_later_bumps_the_epoch_at_the_next_heartbeat() -> None:
    d = Driver()
    r = d.join("m1", ["later"])
    assert (r.member_epoch, as_dict(r.assignment)) == (1, {})
    d.topics.add("later", 2)
    r = d.hb("m1", 1, {})
    assert (r.member_epoch, as_dict(r.assignment)) == (2, {T: [0, 1]})


def test_regex_subscription_is_resolved_against_the_topics() -> None:
    d = Driver()
    d.topics.add("orders", 1)
    d.topics.add("orders-eu", 1)
    d.topics.add("other", 1)
    r = d.join("m1", [], regex="orders.*")
    assert as_dict(r.assignment) == {tid(1): [0], tid(2): [0]}
    assert d.join("m2", [], regex="(").error is ErrorCode.INVALID_REGULAR_EXPRESSION


def test_revocation_comes_before_assignment() -> None:
    # Range (not sticky): a, b hold 0-2 and 3-5; member "0" (sorting first) joins and the target becomes
    # "0" 0-1, a 2-3, b 4-5: a must give up 0-1 and take 3, which b still holds.
    d = Driver(config=ConsumerGroupConfig(assignors=("range",)))
    d.topics.add("t", 6)
    d.join("a", ["t"])
    d.join("b", ["t"])
    d.hb("a", 1, {T: range(6)})
    d.hb("a", 1, {T: [0, 1, 2]})
    d.hb("b", 2, {})
    r0 = d.join("0", ["t"])
    assert (r0.member_epoch, as_dict(r0.assignment)) == (3, {})  # 0 and 1 are a's still

    # a is first asked only to revoke 0-1: it stays at epoch 2 and is not given 3 yet.
    r = d.hb("a", 2, {T: [0, 1, 2]})
    assert (r.member_epoch, as_dict(r.assignment)) == (2, {T: [2]})
    # Once it has revoked, it moves to epoch 3 but 3 is still b's: nothing new to send.
    r = d.hb("a", 2, {T: [2]})
    assert (r.member_epoch, r.assignment) == (3, None)
    group = d.machine.group("g")
    assert group is not None and group.members["a"].state is MemberState.UNRELEASED_PARTITIONS
    # b revokes 3, then a gets it, and "0" gets 0-1.
    r = d.hb("b", 2, {T: [3, 4, 5]})
    assert (r.member_epoch, as_dict(r.assignment)) == (2, {T: [4, 5]})
    assert d.hb("b", 2, {T: [4, 5]}).member_epoch == 3
    r = d.hb("a", 3, {T: [2]})
    assert (r.member_epoch, as_dict(r.assignment)) == (3, {T: [2, 3]})
    r = d.hb("0", 3, {})
    assert (r.member_epoch, as_dict(r.assignment)) == (3, {T: [0, 1]})
    assert group.state.value == "Stable"


def test_a_subscription_change_revokes_the_old_topic_before_giving_the_new_one() -> None:
    d = Driver()
    t1 = d.topics.add("t1", 2)
    t2 = d.topics.add("t2", 1)
    d.join("m1", ["t1"])  # epoch 1: t1 0-1
    r = d.send(
        ConsumerGroupHeartbeatRequest(
            "g", "m1", 1, subscribed_topic_names=("t2",), topic_partitions=tps({t1: [0, 1]})
        )
    )
    # Epoch 2's target is t2-0, but t1 0-1 must be revoked first: still epoch 1, nothing assigned.
    assert (r.member_epoch, as_dict(r.assignment)) == (1, {})
    group = d.machine.group("g")
    assert group is not None and group.group_epoch == 2
    r = d.hb("m1", 1, {})
    assert (r.member_epoch, as_dict(r.assignment)) == (2, {t2: [0]})


def test_a_group_of_another_type_is_not_found() -> None:
    r = Driver().machine.not_a_consumer_group("classic-g")
    assert (r.error, r.error_message) == (
        ErrorCode.GROUP_ID_NOT_FOUND,
        "Group classic-g is not a consumer group",
    )


def test_a_static_member_rejoining_under_the_same_member_id_keeps_its_target() -> None:
    d = Driver()
    d.topics.add("t", 2)
    d.join("a", ["t"], instance_id="i1")
    d.hb("a", -2, instance_id="i1")
    r = d.join("a", ["t"], instance_id="i1")
    assert (r.error, r.member_epoch, as_dict(r.assignment)) == (ErrorCode.NONE, 1, {T: [0, 1]})
    group = d.machine.group("g")
    assert group is not None and dict(group.target["a"]) == {T: frozenset({0, 1})}
    assert group.state.value == "Stable"
