# pyright: strict
"""A consumer-group member (Kafka 4's ``ConsumerGroupMember``) and the assignment values it holds.

A member is an immutable value: the machine computes the updated member (``dataclasses.replace``, Kafka's
``ConsumerGroupMember.Builder``), compares it with the old one to decide which records to write, and only then
stores it in the group (Kafka's records-then-replay, without the replay).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum

from coordinator.core.consumer.api import TopicPartitions
from coordinator.core.consumer.records import ClassicMemberMetadata, PartitionsText

__all__ = [
    "EMPTY_ASSIGNMENT",
    "Assignment",
    "ConsumerGroupMember",
    "MemberState",
    "assignment_from_text",
    "assignment_from_wire",
    "assignment_size",
    "assignment_text",
    "assignment_to_wire",
    "topic_order_key",
]

#: Partitions by topic id; a topic is present only with at least one partition. Never mutated once built.
Assignment = Mapping[uuid.UUID, frozenset[int]]

EMPTY_ASSIGNMENT: Assignment = {}


class MemberState(StrEnum):
    """Kafka ``MemberState``: where a member is in its reconciliation towards the target assignment."""

    STABLE = "stable"
    UNREVOKED_PARTITIONS = "unrevoked_partitions"
    UNRELEASED_PARTITIONS = "unreleased_partitions"
    UNKNOWN = "unknown"


@dataclass(slots=True, frozen=True)
class ConsumerGroupMember:
    """One member. ``subscribed_topic_names`` is sorted (Kafka keeps a set); ``assigned`` is what the member owns
    (or is being given) at ``member_epoch``, ``pending_revocation`` what it must still give up. A new member is
    epoch 0, previous epoch -1, STABLE with nothing (Kafka's ``Builder(memberId)``). ``classic`` is set for a member
    that speaks the classic protocol (Kafka ``classicMemberMetadata``): its JoinGroup's session timeout and
    protocols."""

    member_id: str
    instance_id: str | None = None
    rack_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    subscribed_topic_names: tuple[str, ...] = ()
    subscribed_topic_regex: str | None = None
    server_assignor: str | None = None
    rebalance_timeout_ms: int = -1
    member_epoch: int = 0
    previous_member_epoch: int = -1
    state: MemberState = MemberState.STABLE
    assigned: Assignment = field(default_factory=dict[uuid.UUID, frozenset[int]])
    pending_revocation: Assignment = field(default_factory=dict[uuid.UUID, frozenset[int]])
    classic: ClassicMemberMetadata | None = None

    @property
    def uses_classic_protocol(self) -> bool:
        """Kafka ``useClassicProtocol``."""
        return self.classic is not None

    def is_reconciled_to(self, target_epoch: int) -> bool:
        """Kafka ``isReconciledTo``: STABLE at ``target_epoch``."""
        return self.state is MemberState.STABLE and self.member_epoch == target_epoch

    def same_subscription(self, other: ConsumerGroupMember) -> bool:
        return (
            self.subscribed_topic_names == other.subscribed_topic_names
            and self.subscribed_topic_regex == other.subscribed_topic_regex
        )


def assignment_from_wire(partitions: Iterable[TopicPartitions]) -> dict[uuid.UUID, frozenset[int]]:
    """An assignment from the wire's topic-partitions (topics listed twice are merged; empty ones dropped)."""
    out: dict[uuid.UUID, set[int]] = {}
    for tp in partitions:
        if tp.partitions:
            out.setdefault(tp.topic_id, set()).update(tp.partitions)
    return {t: frozenset(p) for t, p in out.items()}


def _topic_key(topic_id: uuid.UUID) -> tuple[int, int]:
    """Kafka ``Uuid.compareTo``: the most, then the least significant 64 bits, each as a signed long."""
    value = topic_id.int
    high, low = value >> 64, value & ((1 << 64) - 1)
    return (high - (1 << 64) if high >= 1 << 63 else high, low - (1 << 64) if low >= 1 << 63 else low)


def assignment_to_wire(assignment: Assignment) -> tuple[TopicPartitions, ...]:
    """The wire form: topics in Kafka ``Uuid`` order, partitions ascending."""
    return tuple(
        TopicPartitions(t, tuple(sorted(assignment[t])))
        for t in sorted(assignment, key=_topic_key)
        if assignment[t]
    )


def assignment_text(assignment: Assignment) -> PartitionsText:
    """The record form (topic ids as text)."""
    return tuple((str(tp.topic_id), tp.partitions) for tp in assignment_to_wire(assignment))


def assignment_from_text(partitions: PartitionsText) -> dict[uuid.UUID, frozenset[int]]:
    return {uuid.UUID(t): frozenset(p) for t, p in partitions if p}


def assignment_size(assignment: Assignment) -> int:
    return sum(len(p) for p in assignment.values())


def topic_order_key(topic_id: uuid.UUID) -> tuple[int, int]:
    """Sort key of topic ids in Kafka's ``Uuid.compareTo`` order."""
    return _topic_key(topic_id)
