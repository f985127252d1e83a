# pyright: strict
"""Durable records of consumer groups: defined in :mod:`coordinator.core.group.consumer_records` beside the group
log's codec (which must not import this package); re-exported here for the consumer machine's readers."""

from coordinator.core.group.consumer_records import (
    CONSUMER_RECORD_TYPES,
    TOMBSTONE_CURRENT,
    TOMBSTONE_GROUP,
    TOMBSTONE_MEMBER,
    TOMBSTONE_TARGET,
    TOMBSTONE_TARGET_EPOCH,
    ClassicMemberMetadata,
    ConsumerCurrentAssignmentRecord,
    ConsumerGroupEpochRecord,
    ConsumerMemberRecord,
    ConsumerRecord,
    ConsumerTargetEpochRecord,
    ConsumerTargetMemberRecord,
    ConsumerTombstoneRecord,
    PartitionsText,
    SubscribedTopic,
)

__all__ = [
    "CONSUMER_RECORD_TYPES",
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
]
