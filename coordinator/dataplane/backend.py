"""The partition backend: what the data-plane APIs ask of where partitions live, and what it answers.

Each API module (:mod:`~coordinator.dataplane.produce`, :mod:`~coordinator.dataplane.fetch`, ...) parses its
kio request, asks a :class:`PartitionBackend` per topic or partition, and encodes the answers (the plain
values below) into a kio response of the request's version. Two implementations:
:class:`~coordinator.dataplane.local.LocalBackend` (one replica, this broker's topic store; with ZooKeeper,
other brokers' topics listed from their registrations) and
:class:`~coordinator.dataplane.replicated.ReplicatedBackend` (the replica manager and the partition states
the ZooKeeper shell records in the cluster view).

A backend answers either now or with an awaitable of the same answer (a produce waiting for the ISR, a topic
created through ZooKeeper); a backend never raises for a refused request: refusals are error codes.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Awaitable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from kio.schema.errors import ErrorCode

from coordinator.partition_log import PartitionLog
from coordinator.records import BatchInfo, InvalidRecords, validate_produce

__all__ = [
    "ZERO_UUID",
    "CreatedTopic",
    "PartitionBackend",
    "PartitionMeta",
    "Produced",
    "Read",
    "TopicMeta",
    "TopicRef",
    "TopicRegistry",
    "validated_batches",
]

log = logging.getLogger("coordinator")

#: The null topic id (a topic without one, or asked for by name).
ZERO_UUID = uuid.UUID(int=0)


@dataclass(frozen=True, slots=True)
class TopicRef:
    """A topic a Metadata request names: by ``name``, or (v10+, name None) by ``topic_id``."""

    name: str | None
    topic_id: uuid.UUID | None


@dataclass(frozen=True, slots=True)
class PartitionMeta:
    """One partition as Metadata lists it."""

    error: ErrorCode
    index: int
    leader: int
    leader_epoch: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    offline: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class TopicMeta:
    """One topic as Metadata lists it (``name`` None: asked by an id that is not known, or by neither;
    ``topic_id`` None: the zero id)."""

    name: str | None
    topic_id: uuid.UUID | None
    error: ErrorCode
    is_internal: bool
    partitions: tuple[PartitionMeta, ...]


@dataclass(frozen=True, slots=True)
class CreatedTopic:
    """One CreateTopics answer; ``num_partitions`` and ``replication_factor`` are -1 when ``error`` is set."""

    name: str
    error: ErrorCode
    message: str | None
    topic_id: uuid.UUID
    num_partitions: int
    replication_factor: int


@dataclass(frozen=True, slots=True)
class Produced:
    """One partition's Produce answer (-1: no base offset / log start to report)."""

    error: ErrorCode
    base_offset: int
    log_start_offset: int


@dataclass(frozen=True, slots=True)
class Read:
    """One partition's Fetch answer; ``log`` is the log a long-polling fetch waits on (None: nothing to wait
    on, e.g. a partition this broker does not serve)."""

    error: ErrorCode
    high_watermark: int
    log_start_offset: int
    records: bytes
    log: PartitionLog | None


class TopicRegistry(Protocol):
    """The ZooKeeper shell's topic calls (see :mod:`coordinator.zookeeper.registration`); both block, so they run off the loop or
    briefly on it, as each backend says."""

    def claim_topic(self, name: str, partitions: int) -> bool:
        """Register a new unreplicated topic; False if another broker registered it first."""
        ...

    def create_topic(self, name: str, partitions: int, replication_factor: int | None) -> Any:
        """Create a replicated topic (``replication_factor`` None: the default rule)."""
        ...


class PartitionBackend(Protocol):
    """Where the data plane's topics and partitions live (see the module docstring)."""

    def describe_topics(
        self, wanted: Sequence[TopicRef] | None, allow_auto: bool
    ) -> list[TopicMeta] | Awaitable[list[TopicMeta]]:
        """Metadata's topics, in request order (``wanted`` None: every topic). A named topic that does not exist
        is created when ``allow_auto`` (the broker's and the request's auto-creation) says so."""
        ...

    def create_topics(
        self, topics: Sequence[Any], validate_only: bool
    ) -> list[CreatedTopic] | Awaitable[list[CreatedTopic]]:
        """CreateTopics: ``topics`` are the request's kio entries (name, num_partitions, replication_factor,
        assignments); one answer each, in order. ``validate_only`` checks without creating."""
        ...

    def create_partitions(
        self, topics: Sequence[Any], validate_only: bool
    ) -> list[tuple[str, ErrorCode, str | None]]:
        """CreatePartitions: ``topics`` are the request's kio entries (name, count); (name, error, message)
        each, in order."""
        ...

    def produce(
        self, topic: str, partition: int, records: bytes | None, acks: int, timeout_ms: int
    ) -> Produced | Awaitable[Produced]:
        """Append one partition's records (``acks`` is 0, 1 or -1; the caller refuses others); ``timeout_ms``
        bounds a wait for the other replicas."""
        ...

    def read(
        self,
        topic: str,
        partition: int,
        offset: int,
        max_bytes: int | None,
        replica_id: int,
        leader_epoch: int,
    ) -> Read:
        """Fetch one partition from ``offset`` for a consumer (``replica_id`` < 0) or a follower.
        ``max_bytes`` None: the response is full, only the offset is checked; an int is the request's
        partition limit cut to what the response has left (it may be <= 0)."""
        ...

    def offsets_log(
        self, topic: str, partition: int, leader_epoch: int
    ) -> tuple[ErrorCode, PartitionLog | None]:
        """ListOffsets: the log to look offsets up in (its high watermark bounds what a consumer finds), or
        the error that refuses the partition (then None)."""
        ...


def validated_batches(
    topic: str, partition: int, records: bytes | None
) -> list[tuple[BatchInfo, bytes]] | ErrorCode:
    """A Produce partition's batches validated as Kafka's ``LogValidator`` does, or the error that refuses them:
    INVALID_RECORD (no records, or invalid ones), CORRUPT_MESSAGE (framing or CRC damage)."""
    if records is None:
        return ErrorCode.invalid_record
    try:
        return validate_produce(records)
    except InvalidRecords as e:
        log.warning("produce to %s-%d rejected: %s", topic, partition, e)
        return ErrorCode.corrupt_message if e.corrupt else ErrorCode.invalid_record
