"""Subscriptions in the consumer-group machine: a subscription change seen while a member reconciles (Kafka 4.1's
``CurrentAssignmentBuilder`` with ``hasSubscriptionChanged``: ``updateCurrentAssignment``) the full request of a
member subscribing with a regex (Kafka 4's ``consumerGroupHeartbeat``) and the subscription type with regexes
(Kafka 4's ``ConsumerGroup.subscriptionType``)."""

from __future__ import annotations

from coordinator.core.consumer.api import ConsumerGroupHeartbeatRequest, TopicPartitions
from coordinator.core.consumer.group import ConsumerGroup
from coordinator.core.consumer.member import ConsumerGroupMember, MemberState
from coordinator.core.consumer.reconcile import reconcile
from tests.support.consumer_core import Driver, as_dict, tid, tps


def test_dropping_a_topic_while_revoking_moves_its_partitions_to_pending_revocation_at_once() -> None:
    d = Driver()
    t1 = d.topics.add("t1", 2)
    t2 = d.topics.add("t2", 2)
    d.join("m1", ["t1", "t2"])  # epoch 1: t1 0-1, t2 0-1
    d.join("m2", ["t1", "t2"])
    # Epoch 2 (uniform, homogeneous, 4 partitions / 2 members = 2 each; m1 first keeps t1 0-1 and reaches its
    # quota): m1 t1 0-1, m2 t2 0-1. m1 must revoke t2 0-1 first.
    r = d.hb("m1", 1, {t1: [0, 1], t2: [0, 1]})
    assert (r.member_epoch, as_dict(r.assignment)) == (1, {t1: [0, 1]})
    group = d.machine.group("g")
    assert group is not None and group.members["m1"].state is MemberState.UNREVOKED_PARTITIONS

    # Still owning everything, m1 now subscribes to t2 only: t1 0-1 join the pending revocation at once and the
    # smaller (empty) assignment is sent; the member stays at epoch 1, revoking.
    r = d.send(
        ConsumerGroupHeartbeatRequest(
            "g", "m1", 1, subscribed_topic_names=("t2",), topic_partitions=tps({t1: [0, 1], t2: [0, 1]})
        )
    )
    assert (r.member_epoch, as_dict(r.assignment)) == (1, {})
    m1 = group.members["m1"]
    assert (m1.member_epoch, m1.state) == (1, MemberState.UNREVOKED_PARTITIONS)
    assert dict(m1.assigned) == {}
    assert dict(m1.pending_revocation) == {t1: frozenset({0, 1}), t2: frozenset({0, 1})}


def _never_held(_topic: object, _partition: int) -> int:
    return -1


def test_a_stable_member_whose_subscription_changed_revokes_the_unsubscribed_topic() -> None:
    t1, t2 = tid(1), tid(2)
    member = ConsumerGroupMember(
        "m",
        subscribed_topic_names=("t2",),
        member_epoch=5,
        previous_member_epoch=4,
        assigned={t1: frozenset({0, 1}), t2: frozenset({0})},
    )
    target = {t1: frozenset({0, 1}), t2: frozenset({0})}  # the target at epoch 5 predates the change
    owned = (TopicPartitions(t1, (0, 1)), TopicPartitions(t2, (0,)))
    # Unchanged subscription: reconciled already, nothing to do.
    assert reconcile(member, 5, target, _never_held, owned, frozenset({t2})) is member
    # Changed: t1 0-1 become pending revocation, epochs kept (5, previous 4).
    after = reconcile(member, 5, target, _never_held, owned, frozenset({t2}), True)
    assert (after.member_epoch, after.previous_member_epoch, after.state) == (
        5,
        4,
        MemberState.UNREVOKED_PARTITIONS,
    )
    assert dict(after.assigned) == {t2: frozenset({0})}
    assert dict(after.pending_revocation) == {t1: frozenset({0, 1})}
    # Already revoked by the client (it owns only t2-0): the assignment just shrinks, the member stays STABLE.
    after = reconcile(member, 5, target, _never_held, (TopicPartitions(t2, (0,)),), frozenset({t2}), True)
    assert (after.member_epoch, after.state, dict(after.assigned)) == (
        5,
        MemberState.STABLE,
        {t2: frozenset({0})},
    )
    assert dict(after.pending_revocation) == {}


def test_a_full_request_of_a_regex_member_is_answered_with_its_assignment() -> None:
    d = Driver()
    t = d.topics.add("orders", 2)
    r = d.join("m1", [], regex="ord.*")
    assert (r.member_epoch, as_dict(r.assignment)) == (1, {t: [0, 1]})
    # A full request (what a client sends after an error): rebalance timeout, the regex, the owned partitions.
    # Nothing changed, yet Kafka answers it with the whole assignment.
    full = ConsumerGroupHeartbeatRequest(
        "g",
        "m1",
        1,
        rebalance_timeout_ms=300_000,
        subscribed_topic_regex="ord.*",
        topic_partitions=tps({t: [0, 1]}),
    )
    r = d.send(full)
    assert (r.member_epoch, as_dict(r.assignment)) == (1, {t: [0, 1]})
    # Without the owned partitions it is not a full request: no assignment.
    partial = ConsumerGroupHeartbeatRequest(
        "g", "m1", 1, rebalance_timeout_ms=300_000, subscribed_topic_regex="ord.*"
    )
    assert d.send(partial).assignment is None


def _with(*members: ConsumerGroupMember) -> ConsumerGroup:
    group = ConsumerGroup("g")
    for m in members:
        group.update_member(m)
    return group


def test_subscription_type_with_regexes_is_kafkas() -> None:
    by_names = ConsumerGroupMember("a", subscribed_topic_names=("t1", "t2"))
    by_regex = ConsumerGroupMember("b", subscribed_topic_regex="t.*")
    other_regex = ConsumerGroupMember("c", subscribed_topic_regex="t[12]")
    # Names only: homogeneous when every name is subscribed by every member.
    assert _with(by_names).is_homogeneous(
        None, ConsumerGroupMember("x", subscribed_topic_names=("t1", "t2")), 2
    )
    assert not _with(by_names).is_homogeneous(
        None, ConsumerGroupMember("x", subscribed_topic_names=("t1",)), 2
    )
    # One regex used by every member, no names: homogeneous.
    assert _with(by_regex).is_homogeneous(None, ConsumerGroupMember("x", subscribed_topic_regex="t.*"), 2)
    # A regex beside names (even the same topics), or two regexes: heterogeneous.
    assert not _with(by_names).is_homogeneous(None, by_regex, 2)
    assert not _with(by_regex).is_homogeneous(None, other_regex, 2)
    # The regex member replaced by a names member: names only again.
    assert _with(by_names, by_regex).is_homogeneous(
        by_regex, ConsumerGroupMember("b", subscribed_topic_names=("t1", "t2")), 2
    )


def test_a_member_counted_twice_does_not_make_the_group_homogeneous() -> None:
    # x subscribes to t1 by name and to t1 and t2 through its regex; a (sorting first) to t2 by name. Per topic,
    # 2 subscriptions for 2 members, but the subscriptions differ: Kafka's type is heterogeneous (a regex beside
    # names), so t1 stays x's (its only subscriber) and t2 goes to a, 2 partitions each (uniform). A homogeneous
    # assignment would give every member a's topics (t2 only) and leave t1 unassigned.
    d = Driver()
    t1 = d.topics.add("t1", 2)
    t2 = d.topics.add("t2", 2)
    d.send(
        ConsumerGroupHeartbeatRequest(
            "g",
            "x",
            0,
            rebalance_timeout_ms=300_000,
            subscribed_topic_names=("t1",),
            subscribed_topic_regex="t1|t2",
            topic_partitions=(),
        )
    )
    d.join("a", ["t2"])
    group = d.machine.group("g")
    assert group is not None and group.group_epoch == 2
    assert {m: dict(a) for m, a in group.target.items()} == {
        "x": {t1: frozenset({0, 1})},
        "a": {t2: frozenset({0, 1})},
    }
