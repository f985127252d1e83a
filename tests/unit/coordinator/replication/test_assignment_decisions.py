"""The controller's per-partition decisions (coordinator.core.replication.decisions), worked out by hand."""

from __future__ import annotations

import pytest

from coordinator.core.replication.decisions import Decision, after_broker_change, initial_state
from coordinator.core.replication.election import StateChangeFailed
from coordinator.core.replication.state import PartitionState as S


def test_initial_state_leads_with_the_first_live_assigned_replica_and_the_live_ones_are_the_isr() -> None:
    assert initial_state((2, 3, 1), live={1, 3}, controller_epoch=4) == S(3, 0, (3, 1), 4)


def test_no_live_assigned_replica_means_no_initial_state() -> None:
    assert initial_state((2, 3), live={1}, controller_epoch=1) is None


def test_a_dead_leader_is_replaced_from_the_live_isr_with_the_next_leader_epoch() -> None:
    current = S(1, 5, (1, 2, 3), 2)
    assert after_broker_change((1, 2, 3), current, live={2, 3}, controller_epoch=3) == Decision(
        S(2, 6, (2, 3), 3), "offline"
    )


def test_a_dead_follower_leaves_the_isr_and_the_leader_epoch_still_grows() -> None:
    current = S(1, 5, (1, 2, 3), 2)
    assert after_broker_change((1, 2, 3), current, live={1, 2}, controller_epoch=2) == Decision(
        S(1, 6, (1, 2), 2), "offline"
    )


def test_nothing_to_write_when_every_isr_member_lives() -> None:
    assert after_broker_change((1, 2), S(1, 0, (1, 2), 1), live={1, 2, 9}, controller_epoch=1) is None


def test_no_live_isr_member_and_unclean_off_gives_leader_minus_one_and_keeps_the_last_isr_member() -> None:
    # ISR (2, 1): both dead; broker 3 (assigned, out of sync) lives but may not lead.
    current = S(1, 4, (2, 1), 1)
    assert after_broker_change((1, 2, 3), current, live={3}, controller_epoch=1) == Decision(
        S(-1, 5, (1,), 1), "offline"
    )


def test_an_offline_partition_is_left_alone_until_its_isr_member_returns_then_elected_at_startup() -> None:
    offline = S(-1, 5, (1,), 1)
    assert after_broker_change((1, 2, 3), offline, live={3}, controller_epoch=2) is None
    assert after_broker_change((1, 2, 3), offline, live={1, 3}, controller_epoch=2) == Decision(
        S(1, 6, (1,), 2), "broker_startup"
    )


def test_unclean_election_takes_the_first_live_assigned_replica() -> None:
    current = S(1, 4, (1,), 1)
    assert after_broker_change((1, 2, 3), current, live={3, 2}, controller_epoch=1, unclean=True) == Decision(
        S(2, 5, (2,), 1), "unclean"
    )


def test_a_state_written_by_a_newer_controller_is_not_overwritten() -> None:
    with pytest.raises(StateChangeFailed):
        after_broker_change((1, 2), S(1, 0, (1, 2), 7), live={2}, controller_epoch=6)
