# pyright: strict
"""Durable records: what a shell appends to its log for every :class:`~coordinator.core.group.api.Persist` effect.

Three record types, mirroring Kafka's ``__consumer_offsets`` payloads (``GroupMetadataManager``):

* :class:`GroupMetadataRecord` -- the whole group after a completed SyncGroup, a static-member replacement in
  Stable, or a transition to Empty (then ``members`` is empty and ``protocol_name`` is ``None``). As in Kafka, a
  member carries only the subscription metadata of the *selected* protocol.
* :class:`OffsetCommitRecord` -- one committed offset of one partition.
* :class:`GroupTombstoneRecord` -- the group was deleted (DeleteGroups on an Empty group): replay drops the group
  and all its offsets.

The consumer groups' records (:mod:`coordinator.core.group.consumer_records`, ``"type"`` ``consumer_*``) share this
log and this codec: they are part of :data:`Record`; the classic machine's ``load`` refuses them (the shell gives
them to the consumer machine).

Replay (``GroupCoordinator.load``) must see the records in the order they were persisted; the last group record of
a group wins, offsets are last-writer-wins per (group, topic, partition).

Serialisation: ``record.to_dict()`` gives a JSON-compatible ``dict`` with a ``"type"`` discriminator
(``"group"`` / ``"offset"`` / ``"group_tombstone"``) and bytes as base64 text; :func:`record_from_dict` inverts it.
:func:`encode_record` / :func:`decode_record` do the same to and from UTF-8 JSON bytes (one record per call; the
shell frames them, e.g. one per line).
"""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass, field
from typing import Any

from coordinator.core.group.consumer_records import CONSUMER_RECORD_TYPES, ConsumerRecord

__all__ = [
    "GroupMetadataRecord",
    "GroupTombstoneRecord",
    "MemberRecord",
    "OffsetCommitRecord",
    "Record",
    "decode_record",
    "encode_record",
    "record_from_dict",
]


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _unb64(text: str) -> bytes:
    return base64.b64decode(text.encode("ascii"))


@dataclass(slots=True, frozen=True)
class MemberRecord:
    """One member inside a :class:`GroupMetadataRecord` (Kafka ``MemberMetadataValue``)."""

    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    subscription: bytes
    assignment: bytes

    def to_dict(self) -> dict[str, Any]:
        return {
            "member_id": self.member_id,
            "group_instance_id": self.group_instance_id,
            "client_id": self.client_id,
            "client_host": self.client_host,
            "rebalance_timeout_ms": self.rebalance_timeout_ms,
            "session_timeout_ms": self.session_timeout_ms,
            "subscription": _b64(self.subscription),
            "assignment": _b64(self.assignment),
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> MemberRecord:
        return cls(
            member_id=d["member_id"],
            group_instance_id=d.get("group_instance_id"),
            client_id=d.get("client_id", ""),
            client_host=d.get("client_host", ""),
            rebalance_timeout_ms=int(d["rebalance_timeout_ms"]),
            session_timeout_ms=int(d["session_timeout_ms"]),
            subscription=_unb64(d.get("subscription", "")),
            assignment=_unb64(d.get("assignment", "")),
        )


@dataclass(slots=True, frozen=True)
class GroupMetadataRecord:
    """A group's persisted metadata (Kafka ``GroupMetadataValue``).

    ``generation_id`` is the group's generation; ``protocol_type`` stays set after the group empties (as in Kafka);
    ``protocol_name`` and ``leader_id`` are ``None`` for an Empty group. ``timestamp_ms`` is the coordinator time of
    the write.
    """

    group_id: str
    generation_id: int
    protocol_type: str | None
    protocol_name: str | None
    leader_id: str | None
    timestamp_ms: int
    members: tuple[MemberRecord, ...] = field(default_factory=tuple)

    TYPE = "group"

    def to_dict(self) -> dict[str, Any]:
        return {
            "type": self.TYPE,
            "group_id": self.group_id,
            "generation_id": self.generation_id,
            "protocol_type": self.protocol_type,
            "protocol_name": self.protocol_name,
            "leader_id": self.leader_id,
            "timestamp_ms": self.timestamp_ms,
            "members": [m.to_dict() for m in self.members],
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> GroupMetadataRecord:
        return cls(
            group_id=d["group_id"],
            generation_id=int(d["generation_id"]),
            protocol_type=d.get("protocol_type"),
            protocol_name=d.get("protocol_name"),
            leader_id=d.get("leader_id"),
            timestamp_ms=int(d.get("timestamp_ms", 0)),
            members=tuple(MemberRecord.from_dict(m) for m in d.get("members", ())),
        )


@dataclass(slots=True, frozen=True)
class OffsetCommitRecord:
    """One committed offset (Kafka ``OffsetCommitValue``). ``leader_epoch`` is -1 when unknown."""

    group_id: str
    topic: str
    partition: int
    offset: int
    leader_epoch: int
    metadata: str
    commit_timestamp_ms: int

    TYPE = "offset"

    def to_dict(self) -> dict[str, Any]:
        return {
            "type": self.TYPE,
            "group_id": self.group_id,
            "topic": self.topic,
            "partition": self.partition,
            "offset": self.offset,
            "leader_epoch": self.leader_epoch,
            "metadata": self.metadata,
            "commit_timestamp_ms": self.commit_timestamp_ms,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> OffsetCommitRecord:
        return cls(
            group_id=d["group_id"],
            topic=d["topic"],
            partition=int(d["partition"]),
            offset=int(d["offset"]),
            leader_epoch=int(d.get("leader_epoch", -1)),
            metadata=d.get("metadata") or "",
            commit_timestamp_ms=int(d.get("commit_timestamp_ms", 0)),
        )


@dataclass(slots=True, frozen=True)
class GroupTombstoneRecord:
    """The group and its offsets were deleted (Kafka writes tombstones for the group key and every offset key)."""

    group_id: str

    TYPE = "group_tombstone"

    def to_dict(self) -> dict[str, Any]:
        return {"type": self.TYPE, "group_id": self.group_id}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> GroupTombstoneRecord:
        return cls(group_id=d["group_id"])


Record = GroupMetadataRecord | OffsetCommitRecord | GroupTombstoneRecord | ConsumerRecord

_BY_TYPE: dict[str, Any] = {
    GroupMetadataRecord.TYPE: GroupMetadataRecord,
    OffsetCommitRecord.TYPE: OffsetCommitRecord,
    GroupTombstoneRecord.TYPE: GroupTombstoneRecord,
    **CONSUMER_RECORD_TYPES,
}


def record_from_dict(d: dict[str, Any]) -> Record:
    """Inverse of ``record.to_dict()``; raises ``ValueError`` for an unknown ``"type"``."""
    try:
        cls = _BY_TYPE[d["type"]]
    except KeyError:
        raise ValueError(f"unknown record type in {d!r}") from None
    return cls.from_dict(d)


def encode_record(record: Record) -> bytes:
    """The record as compact UTF-8 JSON (no newline)."""
    return json.dumps(record.to_dict(), separators=(",", ":"), sort_keys=True).encode("utf-8")


def decode_record(data: bytes | str) -> Record:
    """Inverse of :func:`encode_record`."""
    return record_from_dict(json.loads(data))
