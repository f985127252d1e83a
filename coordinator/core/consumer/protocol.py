# pyright: strict
"""The classic protocol's embedded consumer protocol (Kafka ``ConsumerProtocol``): the subscription a member sends
in JoinGroup's protocol metadata and the assignment it gets in SyncGroup, as bytes.

Both are a big-endian int16 version followed by the body of that version's schema (``ConsumerProtocolSubscription``
/ ``ConsumerProtocolAssignment`` v0-v3, read and written with kio's generated schemas). As Kafka's
``ConsumerProtocol``: a version above the highest known (3) is read with the highest schema (newer versions only
add fields at the end), a negative version or a body that does not parse is :class:`ConsumerProtocolError`
(Kafka's ``SchemaException``), and an assignment is written in the version the member's subscription used
(``serializeAssignment(assignment, version)``), capped at the highest.

Used by the classic members of consumer groups (:mod:`coordinator.core.consumer.classic_members`): their
subscriptions are decoded into the consumer group's terms and their assignments encoded from them.
"""

from __future__ import annotations

import io
import struct
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kio.schema.consumer_protocol_assignment.v0 import data as a0
from kio.schema.consumer_protocol_assignment.v1 import data as a1
from kio.schema.consumer_protocol_assignment.v2 import data as a2
from kio.schema.consumer_protocol_assignment.v3 import data as a3
from kio.schema.consumer_protocol_subscription.v0 import data as s0
from kio.schema.consumer_protocol_subscription.v1 import data as s1
from kio.schema.consumer_protocol_subscription.v2 import data as s2
from kio.schema.consumer_protocol_subscription.v3 import data as s3
from kio.serial import entity_reader, entity_writer

__all__ = [
    "HIGHEST_VERSION",
    "PROTOCOL_TYPE",
    "ConsumerProtocolError",
    "Subscription",
    "decode_assignment",
    "decode_subscription",
    "decode_version",
    "encode_assignment",
    "encode_subscription",
]

#: JoinGroup's protocol type of members speaking the embedded consumer protocol (``ConsumerProtocol.PROTOCOL_TYPE``).
PROTOCOL_TYPE = "consumer"
#: The highest ``ConsumerProtocolSubscription`` / ``ConsumerProtocolAssignment`` version.
HIGHEST_VERSION = 3

_VERSION = struct.Struct(">h")

_SUBSCRIPTIONS: tuple[Any, ...] = (
    s0.ConsumerProtocolSubscription,
    s1.ConsumerProtocolSubscription,
    s2.ConsumerProtocolSubscription,
    s3.ConsumerProtocolSubscription,
)
_SUBSCRIPTION_PARTITIONS: tuple[Any, ...] = (None, s1.TopicPartition, s2.TopicPartition, s3.TopicPartition)
_ASSIGNMENTS: tuple[Any, ...] = (
    a0.ConsumerProtocolAssignment,
    a1.ConsumerProtocolAssignment,
    a2.ConsumerProtocolAssignment,
    a3.ConsumerProtocolAssignment,
)
_ASSIGNMENT_PARTITIONS: tuple[Any, ...] = (
    a0.TopicPartition,
    a1.TopicPartition,
    a2.TopicPartition,
    a3.TopicPartition,
)

#: Partitions by topic name.
TopicNamePartitions = Mapping[str, frozenset[int]]


class ConsumerProtocolError(ValueError):
    """Bytes that are not a consumer-protocol subscription or assignment (Kafka ``SchemaException``)."""


@dataclass(frozen=True, slots=True)
class Subscription:
    """A decoded ``ConsumerProtocolSubscription``: ``owned`` (v1+) are the partitions the member says it owns,
    ``generation_id`` (v2+) its last generation (-1: none), ``rack_id`` (v3+)."""

    version: int
    topics: tuple[str, ...]
    user_data: bytes | None = None
    owned: TopicNamePartitions | None = None
    generation_id: int = -1
    rack_id: str | None = None


def decode_version(data: bytes) -> int:
    """The version header (Kafka ``ConsumerProtocol.deserializeVersion``)."""
    if len(data) < _VERSION.size:
        raise ConsumerProtocolError("Buffer underflow while parsing consumer protocol's header")
    return _VERSION.unpack_from(data, 0)[0]


def _schema_version(version: int, what: str) -> int:
    if version < 0:
        raise ConsumerProtocolError(f"Unsupported {what} version: {version}")
    return min(version, HIGHEST_VERSION)


def _read(cls: Any, data: bytes) -> Any:
    try:
        entity, _size = entity_reader(cls)(data, _VERSION.size)
    except Exception as e:  # kio raises several types for bytes that do not parse
        raise ConsumerProtocolError(f"malformed {cls.__name__}: {type(e).__name__}: {e}") from None
    return entity


def _write(cls: Any, version: int, entity: Any) -> bytes:
    buffer = io.BytesIO()
    buffer.write(_VERSION.pack(version))
    entity_writer(cls)(buffer, entity)
    return buffer.getvalue()


def decode_subscription(data: bytes) -> Subscription:
    """Kafka ``deserializeConsumerProtocolSubscription``."""
    version = decode_version(data)
    schema = _schema_version(version, "subscription")
    entity = _read(_SUBSCRIPTIONS[schema], data)
    owned: dict[str, frozenset[int]] | None = None
    if schema >= 1:
        owned = {}
        for tp in entity.owned_partitions:
            owned[str(tp.topic)] = owned.get(str(tp.topic), frozenset()) | frozenset(
                int(p) for p in tp.partitions
            )
    return Subscription(
        version=version,
        topics=tuple(str(t) for t in entity.topics),
        user_data=None if entity.user_data is None else bytes(entity.user_data),
        owned=owned,
        generation_id=int(entity.generation_id) if schema >= 2 else -1,
        rack_id=entity.rack_id if schema >= 3 else None,
    )


def encode_subscription(
    topics: tuple[str, ...] | list[str],
    *,
    version: int = HIGHEST_VERSION,
    owned: TopicNamePartitions | None = None,
    generation_id: int = -1,
    rack_id: str | None = None,
    user_data: bytes | None = None,
) -> bytes:
    """Kafka ``serializeSubscription`` (for tests and simulated members): fields the version lacks are left out."""
    schema = _schema_version(version, "subscription")
    kwargs: dict[str, Any] = {"topics": tuple(topics), "user_data": user_data}
    if schema >= 1:
        tp_cls = _SUBSCRIPTION_PARTITIONS[schema]
        kwargs["owned_partitions"] = tuple(
            tp_cls(topic=t, partitions=tuple(sorted(ps))) for t, ps in sorted((owned or {}).items())
        )
    if schema >= 2:
        kwargs["generation_id"] = generation_id
    if schema >= 3:
        kwargs["rack_id"] = rack_id
    return _write(_SUBSCRIPTIONS[schema], schema, _SUBSCRIPTIONS[schema](**kwargs))


def decode_assignment(data: bytes) -> tuple[dict[str, frozenset[int]], bytes | None]:
    """Kafka ``deserializeConsumerProtocolAssignment``: the partitions by topic name and the user data."""
    version = decode_version(data)
    schema = _schema_version(version, "assignment")
    entity = _read(_ASSIGNMENTS[schema], data)
    out: dict[str, frozenset[int]] = {}
    for tp in entity.assigned_partitions:
        out[str(tp.topic)] = out.get(str(tp.topic), frozenset()) | frozenset(int(p) for p in tp.partitions)
    return out, None if entity.user_data is None else bytes(entity.user_data)


def encode_assignment(partitions: TopicNamePartitions, version: int) -> bytes:
    """Kafka ``serializeAssignment(assignment, version)``: topics by name in ascending order (Kafka: the map's
    order), partitions ascending, no user data; ``version`` capped at :data:`HIGHEST_VERSION`."""
    schema = _schema_version(version, "assignment")
    tp_cls = _ASSIGNMENT_PARTITIONS[schema]
    entity = _ASSIGNMENTS[schema](
        assigned_partitions=tuple(
            tp_cls(topic=t, partitions=tuple(sorted(ps))) for t, ps in sorted(partitions.items()) if ps
        ),
        user_data=None,
    )
    return _write(_ASSIGNMENTS[schema], schema, entity)
