"""Offline partition leader election, the controller election and epoch refusal (coordinator.core.replication.election)."""

from __future__ import annotations

import pytest

from coordinator.core.replication.election import (
    ControllerElection,
    ControllerEpochGate,
    ControllerMoved,
    LeaderChoice,
    StateChangeFailed,
    elect_leader,
    next_partition_state,
    stale_controller_epoch,
    stale_leader_epoch,
)
from coordinator.core.replication.errors import NoReplicaOnline
from coordinator.core.replication.state import PartitionState


def test_the_leader_is_the_first_assigned_replica_in_the_live_isr_and_the_isr_is_the_live_isr() -> None:
    # Assigned 3,1,2; ISR 2,1,3; broker 3 is dead. Live ISR in ISR order: 2,1. First assigned in it: 3 is
    # dead, so 1 (assignment order, not ISR order).
    choice = elect_leader(assigned=(3, 1, 2), isr=(2, 1, 3), live={1, 2})
    assert choice == LeaderChoice(leader=1, isr=(2, 1), unclean=False)


def test_an_out_of_isr_live_replica_is_not_elected_while_an_isr_member_lives() -> None:
    # Broker 1 is alive and first in the assignment but not in sync: broker 2 (in the ISR) leads.
    assert elect_leader(assigned=(1, 2, 3), isr=(2,), live={1, 2}, unclean=True) == LeaderChoice(
        2, (2,), False
    )


def test_no_leader_when_every_isr_member_is_dead_and_unclean_election_is_off() -> None:
    with pytest.raises(NoReplicaOnline, match="no broker in ISR \\[1\\] is alive"):
        elect_leader(assigned=(1, 2, 3), isr=(1,), live={2, 3})


def test_unclean_election_takes_the_first_live_assigned_replica_as_leader_and_sole_isr() -> None:
    choice = elect_leader(assigned=(1, 3, 2), isr=(1,), live={2, 3}, unclean=True)
    assert choice == LeaderChoice(leader=3, isr=(3,), unclean=True)


def test_no_leader_when_no_assigned_replica_lives_even_unclean() -> None:
    with pytest.raises(NoReplicaOnline, match="no assigned replica"):
        elect_leader(assigned=(1, 2), isr=(1,), live={5}, unclean=True)


def test_the_elected_state_bumps_the_leader_epoch_and_carries_the_controller_epoch() -> None:
    current = PartitionState(leader=1, leader_epoch=4, isr=(1, 2), controller_epoch=2)
    new = next_partition_state(current, LeaderChoice(2, (2,), False), controller_epoch=3)
    assert new == PartitionState(leader=2, leader_epoch=5, isr=(2,), controller_epoch=3)


def test_a_controller_whose_epoch_is_older_than_the_states_writer_aborts_the_election() -> None:
    current = PartitionState(leader=1, leader_epoch=4, isr=(1, 2), controller_epoch=4)
    with pytest.raises(StateChangeFailed, match="controller epoch 4, newer than this controller's 3"):
        next_partition_state(current, LeaderChoice(2, (2,), False), controller_epoch=3)


def test_the_first_controller_creates_epoch_1_and_each_successor_increments_it() -> None:
    zk = ControllerElection()
    assert zk.elect(1) == 1
    assert (zk.holder, zk.read_epoch()) == (1, (1, 0))
    assert zk.elect(2) is None  # /controller exists: broker 2 reads the holder
    assert zk.holder == 1
    zk.session_lost(2)  # not the holder: nothing happens
    assert zk.holder == 1
    zk.session_lost(1)  # the ephemeral znode goes with the session
    assert zk.holder is None
    assert zk.elect(2) == 2
    assert (zk.holder, zk.read_epoch()) == (2, (2, 1))


def test_an_epoch_increment_from_a_stale_read_loses_as_controller_moved() -> None:
    zk = ControllerElection()
    zk.elect(1)
    zk.session_lost(1)
    assert zk.try_create(2)
    seen = zk.read_epoch()  # (1, 0)
    # Broker 2 stalls; its session ends, broker 3 becomes controller with epoch 2 (version 1).
    zk.session_lost(2)
    assert zk.elect(3) == 2
    with pytest.raises(ControllerMoved, match="does not hold /controller"):
        zk.increment_epoch(2, *seen)
    # Even while holding /controller, an increment from an old read of /controller_epoch loses.
    zk.session_lost(3)
    assert zk.try_create(2)
    with pytest.raises(ControllerMoved, match="moved past version 0"):
        zk.increment_epoch(2, *seen)
    assert zk.read_epoch() == (2, 1)


@pytest.mark.parametrize(("request_epoch", "current", "stale"), [(1, 2, True), (2, 2, False), (3, 2, False)])
def test_a_controller_request_is_stale_only_when_its_epoch_is_older(
    request_epoch: int, current: int, stale: bool
) -> None:
    assert stale_controller_epoch(request_epoch, current) is stale


def test_a_broker_remembers_the_newest_controller_epoch_and_refuses_older_ones() -> None:
    gate = ControllerEpochGate()
    assert gate.epoch == 0
    assert gate.admit(2)
    assert not gate.admit(1)  # a deposed controller's request
    assert gate.epoch == 2
    assert gate.admit(2)
    assert gate.admit(3)
    assert not gate.admit(2)
    assert gate.epoch == 3


@pytest.mark.parametrize(("request_epoch", "current", "stale"), [(2, 3, True), (3, 3, True), (4, 3, False)])
def test_a_leader_and_isr_state_is_stale_unless_its_leader_epoch_is_strictly_newer(
    request_epoch: int, current: int, stale: bool
) -> None:
    assert stale_leader_epoch(request_epoch, current) is stale
