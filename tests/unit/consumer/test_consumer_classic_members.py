"""Classic-protocol members inside a consumer group (Kafka 4's ``classicGroup*ToConsumerGroup``): their timers and
their subscription (no regex), through the facade holding both machines.

The start: topic t with 6 partitions, a Stable classic group at generation 1 of c1-u1, c2-u2, c3-u3 (session 10 s,
rebalance 60 s) owning {0, 1}, {2, 3}, {4, 5}; k1 joins with the consumer protocol at t=1000 (the upgrade: group
epoch 2, target c1-u1 {0, 1}, c2-u2 {2, 3}, c3-u3 {4}, k1 {5})."""

from __future__ import annotations

from coordinator.core.consumer.api import ConsumerGroupHeartbeatRequest
from coordinator.core.consumer.machine import TIMER_CLASSIC_SYNC, TIMER_REBALANCE, TIMER_SESSION
from coordinator.core.consumer.member import MemberState
from coordinator.core.group.api import GroupState, JoinGroupResponse
from coordinator.core.group.errors import ErrorCode
from tests.support.groups_core import Groups

C3 = "c3-u3"


def _upgraded() -> Groups:
    g = Groups()
    g.classic_group_of_three()
    g.now = 1000
    assert g.cjoin("k1").member_epoch == 2
    return g


def test_a_revoking_classic_member_gets_no_rebalance_timer() -> None:
    g = _upgraded()
    g.now = 2000
    # c3-u3 rejoins still owning 4 and 5: it must revoke 5 and stays at epoch 1, UNREVOKED_PARTITIONS.
    join = g.answer(g.join(C3, owned=[4, 5]))
    assert isinstance(join, JoinGroupResponse) and (join.error, join.generation_id) == (ErrorCode.NONE, 1)
    group = g.consumer.group("g")
    assert group is not None and group.members[C3].state is MemberState.UNREVOKED_PARTITIONS
    # Kafka arms the consumer protocol's rebalance timeout only for consumer-protocol members; c3-u3 has its
    # session timeout (its own 10 s) and its sync timeout (its rebalance timeout, 60 s) from this JoinGroup.
    assert (TIMER_REBALANCE, "g", C3) not in g.timers
    assert g.timers[(TIMER_SESSION, "g", C3)] == 2000 + 10_000
    assert g.timers[(TIMER_CLASSIC_SYNC, "g", C3)] == 2000 + 60_000


def test_a_classic_static_member_replacing_a_regex_member_has_no_regex() -> None:
    g = _upgraded()
    # k2 joins with the consumer protocol, static (instance i2), subscribing through the regex "t".
    k2 = g.send(
        ConsumerGroupHeartbeatRequest(
            "g",
            "k2",
            0,
            instance_id="i2",
            rebalance_timeout_ms=60_000,
            subscribed_topic_regex="t",
            topic_partitions=(),
        )
    )
    assert k2.error is ErrorCode.NONE
    group = g.consumer.group("g")
    assert group is not None and group.regex_counts == {"t": 1}
    # A classic member with instance i2 joins without member id: it replaces k2 (k1 still speaks the consumer
    # protocol, so the group stays a consumer group). Kafka sets its regex to "": its subscription is the topic
    # names of its JoinGroup only.
    join = g.answer(g.join("", instance_id="i2", client="c5"))
    assert isinstance(join, JoinGroupResponse) and join.error is ErrorCode.NONE
    member = group.members[join.member_id]
    assert (member.subscribed_topic_names, member.subscribed_topic_regex) == (("t",), None)
    assert member.classic is not None
    assert group.regex_counts == {}


def test_a_downgrade_replacing_a_regex_member_counts_as_a_subscription_change() -> None:
    g = Groups()
    g.classic_group_of_three()
    g.now = 1000
    # k1, the only consumer-protocol member, is static (instance i1) and subscribes to t by name and by regex.
    k1 = g.send(
        ConsumerGroupHeartbeatRequest(
            "g",
            "k1",
            0,
            instance_id="i1",
            rebalance_timeout_ms=60_000,
            subscribed_topic_names=("t",),
            subscribed_topic_regex="t",
            topic_partitions=(),
        )
    )
    assert k1.error is ErrorCode.NONE
    # A classic member with instance i1 replaces it: the group becomes classic again. Its topics are k1's, but the
    # regex goes (Kafka: regexUpdated), so the classic group rebalances.
    join = g.answer(g.join("", instance_id="i1", client="c5"))
    assert isinstance(join, JoinGroupResponse) and join.error is ErrorCode.NONE
    assert g.consumer.group("g") is None
    classic = g.classic.group("g")
    assert classic is not None and classic.state is GroupState.PREPARING_REBALANCE
