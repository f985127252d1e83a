"""Classic-protocol members inside a consumer group (Kafka 4's ``classicGroup*ToConsumerGroup``): their timers and
their subscription, through the facade holding both machines.

The start: topic t with 6 partitions, a Stable classic group at generation 1 of c1-u1, c2-u2, c3-u3 (session 10 s,
rebalance 60 s) owning {0, 1}, {2, 3}, {4, 5}; k1 joins with the consumer protocol at t=1000 (the upgrade: group
epoch 2, target c1-u1 {0, 1}, c2-u2 {2, 3}, c3-u3 {4}, k1 {5})."""

from __future__ import annotations

from coordinator.core.consumer.machine import TIMER_CLASSIC_SYNC, TIMER_REBALANCE, TIMER_SESSION
from coordinator.core.consumer.member import MemberState
from coordinator.core.group.api import JoinGroupResponse
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
