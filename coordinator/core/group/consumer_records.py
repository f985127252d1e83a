# pyright: strict
"""Durable records of consumer groups, as Kafka 4 writes them to ``__consumer_offsets``
(``GroupCoordinatorRecordHelpers``): the group epoch, each member's subscription, the target assignment (its
epoch and each member's part) and each member's current assignment. A Kafka tombstone (a key with a null value) is
a :class:`ConsumerTombstoneRecord` naming which record it deletes.

They travel in the classic machine's :class:`~coordinator.core.group.api.Persist` effects and share its codec:
:mod:`coordinator.core.group.records` lists them in its ``Record`` union, and ``encode_record`` /
``decode_record`` read and write them (``"type"`` ``consumer_*``). They live in this package, beside the codec
(one log, Kafka's ``__consumer_offsets``, holds both group types' records), so that the classic package imports
nothing of the consumer one; :mod:`coordinator.core.consumer.records` re-exports them.

Partitions are held as ``((topic id text, (partition, ...)), ...)``, topics and partitions in ascending order, so
that equal assignments are equal records.

Replay order (``ConsumerGroupCoordinator.load``) is log order; removing a member writes the current-assignment,
target and member tombstones in that order, deleting a group also the target-epoch and group tombstones (Kafka's
``removeMember`` / ``createGroupTombstoneRecords``).
"""

from __future__ import annotations

import base64
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "TOMBSTONE_CURRENT",
    "TOMBSTONE_GROUP",
    "TOMBSTONE_MEMBER",
    "TOMBSTONE_TARGET",
    "TOMBSTONE_TARGET_EPOCH",
    "ClassicMemberMetadata",
    "ConsumerCurrentAssignmentRecord",
    "ConsumerGroupEpochRecord",
    "ConsumerMemberRecord",
    "ConsumerRecord",
    "ConsumerTargetEpochRecord",
    "ConsumerTargetMemberRecord",
    "ConsumerTombstoneRecord",
    "PartitionsText",
    "SubscribedTopic",
    "CONSUMER_RECORD_TYPES",
]

#: An assignment as records hold it: ``((topic id as text, (partition, ...)), ...)``, sorted.
PartitionsText = tuple[tuple[str, tuple[int, ...]], ...]


def _partitions_to_json(partitions: PartitionsText) -> list[list[Any]]:
    return [[topic, list(parts)] for topic, parts in partitions]


def _partitions_from_json(data: Any) -> PartitionsText:
    return tuple((str(topic), tuple(int(p) for p in parts)) for topic, parts in data or ())


@dataclass(slots=True, frozen=True)
class SubscribedTopic:
    """One subscribed topic that exists, as the group last resolved it (Kafka's subscription metadata, in 4.1 folded
    into the group record's metadata hash): a change of it bumps the group epoch."""

    name: str
    topic_id: str
    partitions: int


@dataclass(slots=True, frozen=True)
class ConsumerGroupEpochRecord:
    """Kafka ``ConsumerGroupMetadataValue``: the group epoch, and the subscribed topics it was computed from."""

    group_id: str
    epoch: int
    subscribed: tuple[SubscribedTopic, ...] = ()

    TYPE = "consumer_group"

    def to_dict(self) -> dict[str, Any]:
        return {
            "type": self.TYPE,
            "group_id": self.group_id,
            "epoch": self.epoch,
            "subscribed": [[t.name, t.topic_id, t.partitions] for t in self.subscribed],
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> ConsumerGroupEpochRecord:
        subscribed = tuple(SubscribedTopic(str(n), str(i), int(p)) for n, i, p in d.get("subscribed", ()))
        return cls(d["group_id"], int(d["epoch"]), subscribed)


@dataclass(slots=True, frozen=True)
class ClassicMemberMetadata:
    """Kafka ``ConsumerGroupMemberMetadataValue.ClassicMemberMetadata``: a member of a consumer group that speaks
    the classic protocol (JoinGroup / SyncGroup / Heartbeat / LeaveGroup): its session timeout and its JoinGroup
    protocols ``(name, metadata)`` in preference order (the metadata is the embedded consumer protocol's
    subscription)."""

    session_timeout_ms: int
    protocols: tuple[tuple[str, bytes], ...]

    def to_dict(self) -> dict[str, Any]:
        return {
            "session_timeout_ms": self.session_timeout_ms,
            "protocols": [[name, base64.b64encode(meta).decode("ascii")] for name, meta in self.protocols],
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> ClassicMemberMetadata:
        return cls(
            int(d["session_timeout_ms"]),
            tuple((str(name), base64.b64decode(str(meta))) for name, meta in d.get("protocols", ())),
        )


@dataclass(slots=True, frozen=True)
class ConsumerMemberRecord:
    """Kafka ``ConsumerGroupMemberMetadataValue``: a member's subscription and identity; ``classic`` is set for a
    member that uses the classic protocol (absent in the JSON otherwise, so older logs read unchanged)."""

    group_id: str
    member_id: str
    instance_id: str | None
    rack_id: str | None
    client_id: str
    client_host: str
    subscribed_topic_names: tuple[str, ...]
    subscribed_topic_regex: str | None
    server_assignor: str | None
    rebalance_timeout_ms: int
    classic: ClassicMemberMetadata | None = None

    TYPE = "consumer_member"

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "type": self.TYPE,
            "group_id": self.group_id,
            "member_id": self.member_id,
            "instance_id": self.instance_id,
            "rack_id": self.rack_id,
            "client_id": self.client_id,
            "client_host": self.client_host,
            "subscribed_topic_names": list(self.subscribed_topic_names),
            "subscribed_topic_regex": self.subscribed_topic_regex,
            "server_assignor": self.server_assignor,
            "rebalance_timeout_ms": self.rebalance_timeout_ms,
        }
        if self.classic is not None:
            d["classic"] = self.classic.to_dict()
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> ConsumerMemberRecord:
        classic = d.get("classic")
        return cls(
            d["group_id"],
            d["member_id"],
            d.get("instance_id"),
            d.get("rack_id"),
            d.get("client_id", ""),
            d.get("client_host", ""),
            tuple(d.get("subscribed_topic_names", ())),
            d.get("subscribed_topic_regex"),
            d.get("server_assignor"),
            int(d.get("rebalance_timeout_ms", -1)),
            None if classic is None else ClassicMemberMetadata.from_dict(classic),
        )


@dataclass(slots=True, frozen=True)
class ConsumerTargetEpochRecord:
    """Kafka ``ConsumerGroupTargetAssignmentMetadataValue``: the epoch of the group's target assignment."""

    group_id: str
    assignment_epoch: int

    TYPE = "consumer_target_epoch"

    def to_dict(self) -> dict[str, Any]:
        return {"type": self.TYPE, "group_id": self.group_id, "assignment_epoch": self.assignment_epoch}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> ConsumerTargetEpochRecord:
        return cls(d["group_id"], int(d["assignment_epoch"]))


@dataclass(slots=True, frozen=True)
class ConsumerTargetMemberRecord:
    """Kafka ``ConsumerGroupTargetAssignmentMemberValue``: one member's part of the target assignment."""

    group_id: str
    member_id: str
    partitions: PartitionsText = field(default_factory=tuple)

    TYPE = "consumer_target"

    def to_dict(self) -> dict[str, Any]:
        return {
            "type": self.TYPE,
            "group_id": self.group_id,
            "member_id": self.member_id,
            "partitions": _partitions_to_json(self.partitions),
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> ConsumerTargetMemberRecord:
        return cls(d["group_id"], d["member_id"], _partitions_from_json(d.get("partitions")))


@dataclass(slots=True, frozen=True)
class ConsumerCurrentAssignmentRecord:
    """Kafka ``ConsumerGroupCurrentMemberAssignmentValue``: a member's epochs, reconciliation state (Kafka's
    ``MemberState`` value: ``stable``, ``unrevoked_partitions``, ``unreleased_partitions``, ``unknown``), the
    partitions it is assigned and those it must still revoke."""

    group_id: str
    member_id: str
    member_epoch: int
    previous_member_epoch: int
    state: str
    assigned: PartitionsText = field(default_factory=tuple)
    pending_revocation: PartitionsText = field(default_factory=tuple)

    TYPE = "consumer_current"

    def to_dict(self) -> dict[str, Any]:
        return {
            "type": self.TYPE,
            "group_id": self.group_id,
            "member_id": self.member_id,
            "member_epoch": self.member_epoch,
            "previous_member_epoch": self.previous_member_epoch,
            "state": self.state,
            "assigned": _partitions_to_json(self.assigned),
            "pending_revocation": _partitions_to_json(self.pending_revocation),
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> ConsumerCurrentAssignmentRecord:
        return cls(
            d["group_id"],
            d["member_id"],
            int(d["member_epoch"]),
            int(d["previous_member_epoch"]),
            d["state"],
            _partitions_from_json(d.get("assigned")),
            _partitions_from_json(d.get("pending_revocation")),
        )


TOMBSTONE_GROUP = "group"  #: deletes the ConsumerGroupEpochRecord (and with it the group)
TOMBSTONE_MEMBER = "member"  #: deletes a ConsumerMemberRecord
TOMBSTONE_TARGET = "target"  #: deletes a ConsumerTargetMemberRecord
TOMBSTONE_TARGET_EPOCH = "target_epoch"  #: deletes the ConsumerTargetEpochRecord
TOMBSTONE_CURRENT = "current"  #: deletes a ConsumerCurrentAssignmentRecord


@dataclass(slots=True, frozen=True)
class ConsumerTombstoneRecord:
    """A Kafka tombstone of a consumer-group key: ``kind`` is one of the ``TOMBSTONE_*`` values, ``member_id`` is
    set for the member-level kinds."""

    group_id: str
    kind: str
    member_id: str | None = None

    TYPE = "consumer_tombstone"

    def to_dict(self) -> dict[str, Any]:
        return {"type": self.TYPE, "group_id": self.group_id, "kind": self.kind, "member_id": self.member_id}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> ConsumerTombstoneRecord:
        return cls(d["group_id"], d["kind"], d.get("member_id"))


ConsumerRecord = (
    ConsumerGroupEpochRecord
    | ConsumerMemberRecord
    | ConsumerTargetEpochRecord
    | ConsumerTargetMemberRecord
    | ConsumerCurrentAssignmentRecord
    | ConsumerTombstoneRecord
)

#: Record classes by their ``"type"`` discriminator, for the group log's codec.
CONSUMER_RECORD_TYPES: dict[str, Any] = {
    cls.TYPE: cls
    for cls in (
        ConsumerGroupEpochRecord,
        ConsumerMemberRecord,
        ConsumerTargetEpochRecord,
        ConsumerTargetMemberRecord,
        ConsumerCurrentAssignmentRecord,
        ConsumerTombstoneRecord,
    )
}
