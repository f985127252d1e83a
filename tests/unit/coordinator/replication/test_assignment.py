"""0.9 replica assignment with a fixed start (coordinator.core.replication.assignment), worked out by hand."""

from __future__ import annotations

import pytest

from coordinator.core.replication.assignment import assign_replicas
from coordinator.core.replication.errors import InvalidReplicationFactor


def test_three_brokers_factor_three_leaders_round_robin_and_followers_shift_after_each_round() -> None:
    # n = 3, followers at (first + 1 + (shift + j) % 2) % 3; shift 0 for p 0-2, 1 for p 3-5, 2 for p 6.
    # p0: first 0 -> 1; j0 (0+1+0)%3=1 -> 2; j1 (0+1+1)%3=2 -> 3.   p3: shift 1: j0 (0+1+1)=2 -> 3; j1 1 -> 2.
    assert assign_replicas([3, 1, 2], 7, 3) == {
        0: (1, 2, 3),
        1: (2, 3, 1),
        2: (3, 1, 2),
        3: (1, 3, 2),
        4: (2, 1, 3),
        5: (3, 2, 1),
        6: (1, 2, 3),
    }


def test_four_brokers_factor_two() -> None:
    # n = 4, follower at (first + 1 + shift % 3) % 4; shift 1 from p4 on: p4 first 0 -> (0+1+1)=2.
    assert assign_replicas([0, 1, 2, 3], 5, 2) == {0: (0, 1), 1: (1, 2), 2: (2, 3), 3: (3, 0), 4: (0, 2)}


def test_one_broker_is_every_partitions_only_replica() -> None:
    assert assign_replicas([7], 3, 1) == {0: (7,), 1: (7,), 2: (7,)}


def test_the_assignment_is_the_same_whatever_order_the_ids_come_in() -> None:
    assert assign_replicas([5, 9, 2], 4, 2) == assign_replicas([2, 5, 9], 4, 2)
    assert assign_replicas([5, 9, 2], 4, 2)[0] == (2, 5)


def test_start_partition_continues_the_rounds_as_added_partitions_do() -> None:
    # partitions 3.. of [1,2,3] RF 2: the loop starts at p3 with shift 0 and adds 1 at p3 (3 % 3 == 0):
    # p3: first 0 -> 1, follower (0+1+1%2)%3 = 2 -> 3; p4: first 1 -> 2, follower (1+1+1)%3=0 -> 1.
    assert assign_replicas([1, 2, 3], 2, 2, start_partition=3) == {3: (1, 3), 4: (2, 1)}


@pytest.mark.parametrize("factor", [0, 4])
def test_a_factor_outside_one_to_the_live_brokers_is_refused(factor: int) -> None:
    with pytest.raises(InvalidReplicationFactor, match="replication factor"):
        assign_replicas([1, 2, 3], 1, factor)


def test_no_partitions_is_refused() -> None:
    with pytest.raises(ValueError, match="number of partitions"):
        assign_replicas([1], 0, 1)
