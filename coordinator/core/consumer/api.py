# pyright: strict
"""Version-neutral requests and responses of KIP-848's consumer group protocol (Kafka 4's ``GroupMetadataManager``
for groups of type ``consumer``), for the pure :mod:`coordinator.core.consumer` machine.

The shell decodes ``ConsumerGroupHeartbeat`` (API key 68, v0 and v1) and ``ConsumerGroupDescribe`` (69, v0) into
these dataclasses and encodes the answers for the request's version. Topics are named by id on the wire (owned
partitions and assignments); the machine resolves ids and names through a :class:`TopicsImage` the shell gives it.

Effects are those of the classic machine (:mod:`coordinator.core.group.api`: ``Respond``, ``SetTimer``,
``CancelTimer``, ``Persist``, ``Emit``), applied by the same runner in list order. A heartbeat is never parked:
its ``Respond`` is in the effect list of the call that received it.

Member epochs (Kafka ``ConsumerGroupHeartbeatRequest.json``): ``0`` joins, ``-1`` leaves, ``-2`` is a static member
leaving for a while (its instance id is kept for the session timeout); any positive value is the epoch the member
is at. Offsets commits of this group type carry the member epoch where the classic protocol carries the
generation (``OffsetCommitRequest.generation_id``, v9+).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Protocol

from coordinator.core.group.errors import ErrorCode

__all__ = [
    "JOIN_EPOCH",
    "LEAVE_EPOCH",
    "STATIC_LEAVE_EPOCH",
    "ConsumerGroupDescribeRequest",
    "ConsumerGroupDescribeResponse",
    "ConsumerGroupHeartbeatRequest",
    "ConsumerGroupHeartbeatResponse",
    "DescribedConsumerGroup",
    "DescribedConsumerMember",
    "TopicMetadata",
    "TopicPartitions",
    "TopicsImage",
]

#: ``MemberEpoch`` of a member joining (Kafka ``ConsumerGroupHeartbeatRequest.JOIN_GROUP_MEMBER_EPOCH``).
JOIN_EPOCH = 0
#: ``MemberEpoch`` of a member leaving the group (``LEAVE_GROUP_MEMBER_EPOCH``).
LEAVE_EPOCH = -1
#: ``MemberEpoch`` of a static member leaving temporarily (``LEAVE_GROUP_STATIC_MEMBER_EPOCH``).
STATIC_LEAVE_EPOCH = -2


@dataclass(frozen=True, slots=True)
class TopicPartitions:
    """Partitions of one topic, named by topic id, in ascending order."""

    topic_id: uuid.UUID
    partitions: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class TopicMetadata:
    """What the machine knows of a topic: its id, name and partition count."""

    topic_id: uuid.UUID
    name: str
    partitions: int


class TopicsImage(Protocol):
    """The broker's view of its topics (Kafka's ``MetadataImage``), read by the machine when it computes a target
    assignment, resolves the ids of owned partitions or matches a subscription regex. The shell keeps it current;
    the machine never changes it."""

    def by_name(self, name: str) -> TopicMetadata | None: ...

    def by_id(self, topic_id: uuid.UUID) -> TopicMetadata | None: ...

    def names(self) -> Iterable[str]: ...


@dataclass(slots=True)
class ConsumerGroupHeartbeatRequest:
    """A ``ConsumerGroupHeartbeat`` of v0 or v1. ``None`` in an optional field means "unchanged since the last
    heartbeat" (the wire's null); ``topic_partitions`` are the partitions the member owns now (sent when they
    changed, and on join as an empty list). ``subscribed_topic_regex`` exists from v1; v1 members choose their own
    ``member_id`` (a v0 member joins with ``""`` and is given one). ``client_id`` / ``client_host`` come from the
    request header and the connection."""

    group_id: str
    member_id: str
    member_epoch: int
    instance_id: str | None = None
    rack_id: str | None = None
    rebalance_timeout_ms: int = -1
    subscribed_topic_names: tuple[str, ...] | None = None
    subscribed_topic_regex: str | None = None
    server_assignor: str | None = None
    topic_partitions: tuple[TopicPartitions, ...] | None = None
    api_version: int = 1
    client_id: str = ""
    client_host: str = ""


@dataclass(slots=True)
class ConsumerGroupHeartbeatResponse:
    """The answer to one heartbeat. ``assignment`` is the member's whole current assignment, sent only when it
    changed since the member last received one (``None``: unchanged); on error only ``error`` and
    ``error_message`` are meaningful (``member_epoch`` 0, ``member_id`` None)."""

    error: ErrorCode
    error_message: str | None = None
    member_id: str | None = None
    member_epoch: int = 0
    heartbeat_interval_ms: int = 0
    assignment: tuple[TopicPartitions, ...] | None = None


@dataclass(slots=True)
class ConsumerGroupDescribeRequest:
    group_ids: list[str]


@dataclass(slots=True)
class DescribedConsumerMember:
    """One member as ``ConsumerGroupDescribe`` v0 reports it: its current ``assignment`` and the
    ``target_assignment`` the group's assignor gave it."""

    member_id: str
    instance_id: str | None
    rack_id: str | None
    member_epoch: int
    client_id: str
    client_host: str
    subscribed_topic_names: tuple[str, ...]
    subscribed_topic_regex: str | None
    assignment: tuple[TopicPartitions, ...]
    target_assignment: tuple[TopicPartitions, ...]


@dataclass(slots=True)
class DescribedConsumerGroup:
    """One group; an unknown group or one of another type is ``GROUP_ID_NOT_FOUND`` with ``error_message``
    saying which (Kafka 4 ``consumerGroupDescribe``). ``state`` is Kafka's name (``Empty``, ``Assigning``,
    ``Reconciling``, ``Stable``, ``Dead``)."""

    group_id: str
    error: ErrorCode
    error_message: str | None = None
    state: str = ""
    group_epoch: int = 0
    assignment_epoch: int = 0
    assignor_name: str = ""
    members: list[DescribedConsumerMember] = field(default_factory=list[DescribedConsumerMember])


@dataclass(slots=True)
class ConsumerGroupDescribeResponse:
    groups: list[DescribedConsumerGroup]
