# pyright: strict
"""Error codes and exceptions of the replication core, with the Kafka 0.9.0.1 codes they stand for.

Codes are ``kafka.common.ErrorMapping`` of 0.9.0.1 (the same numbers the Java client's ``Errors`` uses):

* ``NOT_LEADER_FOR_PARTITION`` (6): a produce/fetch/ISR operation reached a broker that does not lead the
  partition (``Partition.appendMessagesToLeader``, ``checkEnoughReplicasReachOffset``);
* ``STALE_CONTROLLER_EPOCH`` (11): a controller request (LeaderAndIsr, StopReplica, UpdateMetadata) carries an
  epoch older than the newest the broker has seen (``ReplicaManager.becomeLeaderOrFollower``,
  ``stopReplicas``);
* ``STALE_LEADER_EPOCH`` (13): a LeaderAndIsr partition state whose leader epoch is not newer than the one the
  broker holds (``becomeLeaderOrFollower``). Later Kafka (KIP-320, 2.1) adds ``FENCED_LEADER_EPOCH`` (74) for
  fetches carrying an old epoch; 0.9 requests other than LeaderAndIsr carry no leader epoch, so 0.9 has no
  such check and neither has this core;
* ``NOT_ENOUGH_REPLICAS`` (19): an ``acks=-1`` append refused before writing because the ISR is smaller than
  ``min.insync.replicas``; ``NOT_ENOUGH_REPLICAS_AFTER_APPEND`` (20): written, replicated to the whole ISR,
  but the ISR shrank below ``min.insync.replicas`` meanwhile (``checkEnoughReplicasReachOffset``);
* ``OFFSET_OUT_OF_RANGE`` (1): a follower fetch beyond the leader's log end (``Log.read``);
* ``UNKNOWN_TOPIC_OR_PARTITION`` (3): a LeaderAndIsr for a partition whose assigned replicas do not include
  this broker.
"""

from __future__ import annotations

__all__ = [
    "NONE",
    "NOT_ENOUGH_REPLICAS",
    "NOT_ENOUGH_REPLICAS_AFTER_APPEND",
    "NOT_LEADER_FOR_PARTITION",
    "OFFSET_OUT_OF_RANGE",
    "STALE_CONTROLLER_EPOCH",
    "STALE_LEADER_EPOCH",
    "UNKNOWN_TOPIC_OR_PARTITION",
    "InvalidReplicationFactor",
    "MalformedState",
    "NoReplicaOnline",
    "NotAssignedReplica",
    "ReplicationError",
]

NONE = 0
OFFSET_OUT_OF_RANGE = 1
UNKNOWN_TOPIC_OR_PARTITION = 3
NOT_LEADER_FOR_PARTITION = 6
STALE_CONTROLLER_EPOCH = 11
STALE_LEADER_EPOCH = 13
NOT_ENOUGH_REPLICAS = 19
NOT_ENOUGH_REPLICAS_AFTER_APPEND = 20


class ReplicationError(Exception):
    """A replication rule refused an operation; ``code`` is the Kafka error code a response would carry."""

    code: int = -1

    def __init__(self, message: str, code: int | None = None) -> None:
        super().__init__(message)
        if code is not None:
            self.code = code


class NoReplicaOnline(ReplicationError):
    """No replica can lead the partition (0.9 ``NoReplicaOnlineException``; the partition goes offline)."""

    code = 5  # a controller-internal exception; clients see LEADER_NOT_AVAILABLE (leader -1) in Metadata


class InvalidReplicationFactor(ReplicationError):
    """A replication factor below 1 or above the live brokers (0.9 ``AdminUtils.assignReplicasToBrokers``'s
    ``AdminOperationException``; CreateTopics answers ``INVALID_REPLICATION_FACTOR``, 38)."""

    code = 38


class NotAssignedReplica(ReplicationError):
    """A fetch from a broker that is not an assigned replica (0.9 ``NotAssignedReplicaException``)."""

    code = -1  # UNKNOWN: 0.9's ErrorMapping has no entry for NotAssignedReplicaException


class MalformedState(ValueError):
    """A znode payload does not parse as Kafka 0.9 writes it; the message names the path and the cause."""

    def __init__(self, path: str, problem: str, data: bytes | None = None) -> None:
        shown = "" if data is None else f" (payload {data[:120]!r})"
        super().__init__(f"malformed znode {path}: {problem}{shown}")
        self.path = path
        self.problem = problem
