# pyright: strict
"""Replica assignment of a new topic's partitions over the live brokers (0.9 ``AdminUtils``).

Source: apache/kafka 0.9.0.1 ``core/src/main/scala/kafka/admin/AdminUtils.scala``
``assignReplicasToBrokers(brokerList, nPartitions, replicationFactor, fixedStartIndex, startPartitionId)``, fed
by ``ZkUtils.getSortedBrokerList`` (the live ids, ascending):

* partition ``p``'s first replica (its preferred leader) is ``brokers[(p + startIndex) % n]``: leaders go round
  robin over the brokers;
* its other replicas follow with a shift: replica ``j`` (0-based among the followers) is
  ``brokers[(first + 1 + (shift + j) % (n - 1)) % n]``, where ``shift`` starts at ``nextReplicaShift`` and grows
  by one each time the partition id passes a multiple of ``n`` (so followers do not always pile onto the
  leader's neighbour);
* a factor below 1, or above the number of brokers, is refused (``AdminOperationException``).

DECIDED deviation: 0.9 draws ``startIndex`` and ``nextReplicaShift`` at random (``rand.nextInt(n)``) unless
``fixedStartIndex`` is given. herdlab fixes both at 0 (``fixedStartIndex = 0``, which 0.9's own tests use), so
that a run replays: the same brokers and topic always give the same assignment, hence the same leaders, the
same coordinator of a group and the same failover.
"""

from __future__ import annotations

from collections.abc import Collection

from coordinator.core.replication.errors import InvalidReplicationFactor

__all__ = ["assign_replicas"]


def _follower_index(first: int, shift: int, j: int, n: int) -> int:
    """0.9 ``replicaIndex``: the broker index of follower ``j`` of a partition whose leader is at ``first``."""
    return (first + 1 + (shift + j) % (n - 1)) % n


def assign_replicas(
    brokers: Collection[int], partitions: int, replication_factor: int, start_partition: int = 0
) -> dict[int, tuple[int, ...]]:
    """Partition id -> replica ids (preferred leader first) for partitions ``start_partition`` ..
    ``start_partition + partitions - 1`` over ``brokers`` (sorted here, as ``getSortedBrokerList``).

    Raises :class:`InvalidReplicationFactor` when ``replication_factor`` is below 1 or above ``len(brokers)``
    and :class:`ValueError` when ``partitions`` is below 1.
    """
    ids = sorted(set(brokers))
    n = len(ids)
    if partitions < 1:
        raise ValueError(f"number of partitions must be larger than 0, got {partitions}")
    if replication_factor < 1:
        raise InvalidReplicationFactor(f"replication factor must be larger than 0, got {replication_factor}")
    if replication_factor > n:
        raise InvalidReplicationFactor(
            f"replication factor: {replication_factor} larger than available brokers: {n}"
        )
    start_index = 0
    shift = 0
    out: dict[int, tuple[int, ...]] = {}
    for p in range(start_partition, start_partition + partitions):
        if p > 0 and p % n == 0:
            shift += 1
        first = (p + start_index) % n
        replicas = [ids[first]]
        replicas.extend(ids[_follower_index(first, shift, j, n)] for j in range(replication_factor - 1))
        out[p] = tuple(replicas)
    return out
