"""One partition's replication rules (coordinator.core.replication.partition), on a fake clock (``now_ms`` passed in).

Broker 1 is local; the partition is assigned to brokers 1, 2, 3. Every expected value is worked out in the
test's comments from the 0.9 rules: HW = min LEO over the ISR, never backwards; a follower is caught up when
its fetch offset reaches the leader's LEO; it leaves the ISR when not caught up for more than the lag time.
"""

from __future__ import annotations

import pytest

from coordinator.core.replication.errors import (
    NONE,
    NOT_ENOUGH_REPLICAS,
    NOT_ENOUGH_REPLICAS_AFTER_APPEND,
    NOT_LEADER_FOR_PARTITION,
    OFFSET_OUT_OF_RANGE,
    STALE_CONTROLLER_EPOCH,
    STALE_LEADER_EPOCH,
    UNKNOWN_TOPIC_OR_PARTITION,
    NotAssignedReplica,
    ReplicationError,
)
from coordinator.core.replication.partition import AcksCheck, Append, IsrChange, Partition, Transition
from coordinator.core.replication.state import (
    ConditionalResult,
    PartitionState,
    conditional_update,
    update_leader_and_isr,
)

ASSIGNED = (1, 2, 3)
LAG_MS = 10_000


def leader(isr: tuple[int, ...] = (1, 2, 3), now_ms: int = 1_000, zk_version: int = 5) -> Partition:
    """Broker 1 made leader at ``now_ms`` with leader epoch 1 by controller epoch 1, state znode at ``zk_version``."""
    p = Partition("t", 0, local_id=1, now_ms=0)
    t = p.become_leader(PartitionState(1, 1, isr, 1), zk_version, ASSIGNED, now_ms)
    assert t == Transition(NONE, changed=True)
    return p


def write(p: Partition, change: IsrChange | None) -> None:
    """Make the ISR write against a znode still at the version the partition cached, and report it."""
    assert change is not None
    p.isr_written(change, conditional_update(p.zk_version, change.expected_zk_version))


def test_a_follower_leaves_the_isr_exactly_after_the_lag_time_and_not_before() -> None:
    p = leader(now_ms=1_000)  # in-sync followers count as caught up at the election, 1000
    assert p.follower_fetch(2, 0, now_ms=4_000) is None  # offset 0 >= leader LEO 0: caught up at 4000
    assert p.shrink(now_ms=11_000, lag_time_ms=LAG_MS) is None  # 3: 11000 - 1000 = 10000, not > 10000
    change = p.shrink(now_ms=11_001, lag_time_ms=LAG_MS)  # 3: 10001 > 10000; 2: 7001
    assert change == IsrChange(PartitionState(1, 1, (1, 2), 1), expected_zk_version=5, added=(), removed=(3,))
    assert p.isr == (1, 2, 3)  # nothing changes before the write is made
    write(p, change)
    assert (p.isr, p.zk_version) == ((1, 2), 6)
    assert p.shrink(now_ms=14_000, lag_time_ms=LAG_MS) is None  # 2: 14000 - 4000 = 10000
    write(p, p.shrink(now_ms=14_001, lag_time_ms=LAG_MS))
    assert (p.isr, p.zk_version) == ((1,), 7)


def test_a_follower_that_fetches_but_never_reaches_the_leaders_end_is_out_of_sync_too() -> None:
    p = leader(now_ms=1_000)
    p.append(5, required_acks=1, min_isr=1)  # leader LEO 5
    for now in (2_000, 6_000, 10_000):
        p.follower_fetch(2, 3, now_ms=now)  # 3 < 5: not caught up; last caught up stays 1000
        p.follower_fetch(3, 5, now_ms=now)  # caught up at each fetch
    assert p.last_caught_up_ms(2) == 1_000
    assert p.last_caught_up_ms(3) == 10_000
    change = p.shrink(now_ms=11_001, lag_time_ms=LAG_MS)
    assert change is not None and change.removed == (2,)


def test_a_follower_rejoins_the_isr_when_its_leo_reaches_the_high_watermark() -> None:
    p = leader(isr=(1, 2))
    p.append(10, required_acks=1, min_isr=1)  # LEO 10
    p.follower_fetch(2, 6, now_ms=1_100)  # HW = min(10, 6) = 6
    assert p.hw == 6
    assert p.follower_fetch(3, 5, now_ms=1_200) is None  # 5 < HW 6: stays out
    change = p.follower_fetch(
        3, 6, now_ms=1_300
    )  # 6 >= HW 6: back in (0.9 compares with the HW, not the LEO)
    assert change == IsrChange(
        PartitionState(1, 1, (1, 2, 3), 1), expected_zk_version=5, added=(3,), removed=()
    )
    assert p.isr == (1, 2)
    write(p, change)
    assert (p.isr, p.zk_version, p.hw) == ((1, 2, 3), 6, 6)  # HW = min(10, 6, 6)
    assert p.follower_fetch(3, 10, now_ms=1_400) is None  # already in the ISR: no write


def test_the_high_watermark_is_the_min_leo_of_the_isr_and_never_moves_back() -> None:
    p = leader()
    p.append(10, required_acks=-1, min_isr=2)
    assert p.hw == 0  # followers' LEOs unknown (-1) since the election: min is -1, HW stays 0
    p.follower_fetch(2, 7, now_ms=1_100)
    assert p.hw == 0  # 3 still unknown
    p.follower_fetch(3, 4, now_ms=1_100)
    assert p.hw == 4  # min(10, 7, 4)
    p.follower_fetch(3, 9, now_ms=1_200)
    assert p.hw == 7  # min(10, 7, 9)
    p.follower_fetch(3, 2, now_ms=1_300)  # follower 3 truncated its log: its LEO goes back to 2
    assert (p.replica_leo(3), p.hw) == (2, 7)  # min would be 2: the HW does not move back
    p.follower_fetch(2, 10, now_ms=1_400)  # 10 >= leader LEO 10: 2 caught up at 1400
    assert p.hw == 7  # min(10, 10, 2) = 2 < 7
    # At 11001: 3 last caught up at 1000 (the election): 10001 > 10000, out; 2: 9601, stays.
    write(p, p.shrink(now_ms=11_001, lag_time_ms=LAG_MS))
    assert (p.isr, p.hw) == ((1, 2), 10)  # min(10, 10): the shrink lets the HW advance


def test_acks_all_is_satisfied_only_when_every_isr_member_reached_the_offset() -> None:
    p = leader()
    a = p.append(5, required_acks=-1, min_isr=2)
    assert a == Append(first_offset=0, required_offset=5)
    assert p.acks_all_satisfied(a.required_offset, min_isr=2) == AcksCheck(False, NONE)
    p.follower_fetch(2, 5, now_ms=1_100)  # 3 has not fetched: HW 0
    assert p.acks_all_satisfied(5, min_isr=2) == AcksCheck(False, NONE)
    p.follower_fetch(3, 4, now_ms=1_100)  # HW 4 < 5
    assert p.acks_all_satisfied(5, min_isr=2) == AcksCheck(False, NONE)
    p.follower_fetch(3, 5, now_ms=1_200)  # HW 5
    assert p.acks_all_satisfied(5, min_isr=2) == AcksCheck(True, NONE)


def test_acks_all_is_refused_below_min_insync_replicas_before_and_after_the_append() -> None:
    p = leader()
    b = p.append(3, required_acks=-1, min_isr=2)  # offsets 0..2, needs 3
    # Neither follower fetches; both leave the ISR after the lag time: HW = leader LEO 3.
    write(p, p.shrink(now_ms=11_001, lag_time_ms=LAG_MS))
    assert (p.isr, p.hw) == ((1,), 3)
    assert p.acks_all_satisfied(b.required_offset, min_isr=2) == AcksCheck(
        True, NOT_ENOUGH_REPLICAS_AFTER_APPEND
    )
    with pytest.raises(ReplicationError, match="below min.insync.replicas 2") as err:
        p.append(1, required_acks=-1, min_isr=2)
    assert err.value.code == NOT_ENOUGH_REPLICAS
    assert p.leo == 3  # nothing was written
    assert p.append(1, required_acks=1, min_isr=2) == Append(3, 4)  # acks=1 does not look at the ISR
    assert p.acks_all_satisfied(4, min_isr=1) == AcksCheck(True, NONE)


def test_a_follower_refuses_produce_and_fetch_as_not_leader() -> None:
    p = Partition("t", 0, local_id=1, now_ms=0)
    assert p.become_follower(PartitionState(2, 1, (2, 1), 1), 3, ASSIGNED, now_ms=0).error == NONE
    with pytest.raises(ReplicationError) as err:
        p.append(1, required_acks=1, min_isr=1)
    assert err.value.code == NOT_LEADER_FOR_PARTITION
    with pytest.raises(ReplicationError):
        p.follower_fetch(3, 0, now_ms=0)
    assert p.acks_all_satisfied(1, min_isr=1) == AcksCheck(False, NOT_LEADER_FOR_PARTITION)


def test_a_fetch_from_an_unassigned_broker_is_refused() -> None:
    p = leader()
    with pytest.raises(NotAssignedReplica, match="broker 9 is not a follower"):
        p.follower_fetch(9, 0, now_ms=1_000)


def test_a_fetch_beyond_the_leaders_log_end_is_out_of_range_and_records_nothing() -> None:
    p = leader()
    p.append(3, required_acks=1, min_isr=1)  # LEO 3
    with pytest.raises(ReplicationError, match="fetch offset 4") as err:
        p.follower_fetch(2, 4, now_ms=5_000)
    assert err.value.code == OFFSET_OUT_OF_RANGE
    assert (p.replica_leo(2), p.last_caught_up_ms(2)) == (-1, 1_000)  # unknown since the election at 1000


def test_a_leader_and_isr_with_a_stale_leader_epoch_is_refused_and_changes_nothing() -> None:
    p = Partition("t", 0, local_id=1, now_ms=0)
    assert p.become_follower(PartitionState(2, 3, (2, 1), 4), 7, ASSIGNED, now_ms=0) == Transition(
        NONE, changed=True, truncate_to=0
    )
    for epoch in (3, 2):  # the same epoch and an older one (a deposed controller's view)
        t = p.become_leader(PartitionState(1, epoch, (1, 2), 4), 8, ASSIGNED, now_ms=0)
        assert t == Transition(STALE_LEADER_EPOCH)
        assert (p.leader, p.leader_epoch, p.zk_version, p.isr) == (2, 3, 7, ())
    assert p.become_leader(PartitionState(1, 4, (1, 2), 5), 8, ASSIGNED, now_ms=0) == Transition(NONE, True)
    assert (p.leader, p.leader_epoch, p.zk_version, p.controller_epoch, p.isr) == (1, 4, 8, 5, (1, 2))


def test_a_leader_and_isr_for_a_partition_not_assigned_here_is_refused() -> None:
    p = Partition("t", 0, local_id=1, now_ms=0)
    t = p.become_follower(PartitionState(2, 0, (2, 3), 1), 1, (2, 3), now_ms=0)
    assert t == Transition(UNKNOWN_TOPIC_OR_PARTITION)
    assert p.leader is None


def test_a_follower_high_watermark_is_the_leaders_capped_at_its_own_leo() -> None:
    p = Partition("t", 0, local_id=1, now_ms=0)
    p.become_follower(PartitionState(2, 1, (2, 1), 1), 1, ASSIGNED, now_ms=0)
    p.follower_append(new_leo=5, leader_hw=8)
    assert (p.leo, p.hw) == (5, 5)  # min(5, 8)
    p.follower_append(new_leo=9, leader_hw=8)
    assert (p.leo, p.hw) == (9, 8)


def test_a_deposed_leader_cannot_expose_what_it_accepts_and_truncates_it_on_becoming_follower() -> None:
    p = leader(zk_version=5)  # leader epoch 1, ISR 1,2,3
    p.append(10, required_acks=-1, min_isr=2)
    p.follower_fetch(2, 10, now_ms=1_100)
    p.follower_fetch(3, 10, now_ms=1_100)
    assert p.hw == 10
    # Broker 1 is paused past its session; the controller (epoch 2) elects 2 from the live ISR 2,3 and
    # writes the state znode: version 5 -> 6.
    elected = PartitionState(leader=2, leader_epoch=2, isr=(2, 3), controller_epoch=2)
    # Broker 1 resumes without the LeaderAndIsr yet: it still takes an acks=-1 produce (0.9 has no epoch on it)...
    late = p.append(3, required_acks=-1, min_isr=2)  # offsets 10..12, needs 13
    assert p.acks_all_satisfied(late.required_offset, min_isr=2) == AcksCheck(False, NONE)
    # ...its followers fetch from broker 2 now, so it tries to shrink its ISR: the write expects version 5 and loses.
    change = p.shrink(now_ms=11_101, lag_time_ms=LAG_MS)
    assert change is not None and change.state.isr == (1,)
    lost = update_leader_and_isr(elected, 6, change.state, change.expected_zk_version)
    assert lost == ConditionalResult(False, -1)
    p.isr_written(change, lost)
    assert (p.isr, p.zk_version, p.hw) == ((1, 2, 3), 5, 10)  # HW still 10: offsets 10..12 never visible
    assert p.acks_all_satisfied(late.required_offset, min_isr=2) == AcksCheck(False, NONE)
    # The LeaderAndIsr arrives: broker 1 follows 2 and truncates to its HW, dropping offsets 10..12.
    t = p.become_follower(elected, 6, ASSIGNED, now_ms=11_200)
    assert t == Transition(NONE, changed=True, truncate_to=10)
    assert (p.leo, p.hw, p.leader, p.isr) == (10, 10, 2, ())


def test_a_reported_isr_write_must_be_the_one_proposed() -> None:
    p = leader(isr=(1, 2))
    p.append(1, required_acks=1, min_isr=1)
    change = p.follower_fetch(3, 1, now_ms=1_100)
    assert change is not None
    write(p, change)
    with pytest.raises(ValueError, match="not the one last proposed"):
        p.isr_written(change, ConditionalResult(True, 7))


def test_a_state_with_no_leader_steps_down_without_truncating() -> None:
    # A restarted broker recovered LEO 5 with a (stale) checkpointed HW 2. The first state it reads has no leader
    # (-1: the controller found no live ISR member). 0.9 makeFollowers makes no follower of an unavailable
    # leader, so nothing is truncated: the log keeps offsets 2..4 (maybe acknowledged by this broker as leader).
    p = Partition("t", 0, local_id=1, now_ms=0, leo=5, hw=2)
    t = p.become_follower(PartitionState(-1, 4, (1,), 2), 3, ASSIGNED, now_ms=0)
    assert t == Transition(NONE, changed=True, truncate_to=None)
    assert (p.leader, p.leo, p.hw, p.leader_epoch, p.is_leader) == (-1, 5, 2, 4, False)
    # elected from that ISR next: leader with the whole log
    assert p.become_leader(PartitionState(1, 5, (1,), 2), 4, ASSIGNED, now_ms=0).error == NONE
    assert p.leo == 5
    # a leader told "no leader" steps down (changed) and keeps its log too
    t = p.become_follower(PartitionState(-1, 6, (1,), 2), 5, ASSIGNED, now_ms=0)
    assert t == Transition(NONE, changed=True, truncate_to=None) and not p.is_leader and p.leo == 5
    # following a real leader afterwards truncates to the HW, as 0.9 does on a leader change (HW 5 now: the
    # single-member ISR's leader made every appended offset committed when it led)
    t = p.become_follower(PartitionState(2, 7, (2,), 2), 6, ASSIGNED, now_ms=0)
    assert t == Transition(NONE, changed=True, truncate_to=p.hw) and p.leader == 2


def test_a_state_of_an_older_controller_epoch_than_the_partitions_is_refused_and_changes_nothing() -> None:
    p = leader()  # controller epoch 1, leader epoch 1
    assert p.become_follower(PartitionState(2, 2, (2, 1), 2), 6, ASSIGNED, now_ms=0).error == NONE
    # controller epoch 1 < 2 applied here: refused even with a newer leader epoch
    t = p.become_leader(PartitionState(1, 3, (1,), 1), 7, ASSIGNED, now_ms=0)
    assert t == Transition(STALE_CONTROLLER_EPOCH)
    assert (p.leader, p.leader_epoch, p.controller_epoch, p.zk_version) == (2, 2, 2, 6)
    # the same controller epoch is accepted (one controller writes many states)
    assert p.become_leader(PartitionState(1, 3, (1,), 2), 7, ASSIGNED, now_ms=0).error == NONE
