# pyright: strict
"""Classic-protocol members in consumer groups, and the conversions between the two group types: the pure parts of
Kafka 4's online migration (``group.consumer.migration.policy``, ``GroupMetadataManager``).

* :func:`consumer_group_from_classic` -- Kafka ``ConsumerGroup.fromClassicGroup`` with
  ``createConsumerGroupRecords``: the consumer group a non-empty classic group becomes when the first
  consumer-protocol member joins (the upgrade). Every classic member is kept as a member with ``classic`` metadata
  (its session timeout and JoinGroup protocols), at the classic generation as its member epoch, STABLE, owning the
  partitions of its last SyncGroup assignment, which is also its target; the group epoch and target epoch are the
  generation.
* :func:`classic_group_from_consumer` -- Kafka ``ClassicGroup.fromConsumerGroup`` with
  ``ConsumerGroup.createGroupTombstoneRecords``: the classic group a consumer group becomes when its last
  consumer-protocol member leaves and classic members remain (the downgrade): Stable at the group epoch as its
  generation, each member's assignment its target assignment encoded in the version of its subscription.
* the byte side of classic members: the subscription of a JoinGroup decoded (:mod:`.protocol`), owned partitions
  and assignments translated between topic names and ids.

What uses them: the classic-member paths of :class:`~coordinator.core.consumer.machine.ConsumerGroupCoordinator`
(``classic_join_group`` / ``classic_sync_group`` / ``classic_heartbeat`` / ``classic_leave_group``, Kafka's
``classicGroup*ToConsumerGroup``) and the facade holding both machines, :mod:`coordinator.core.groups`, which
decides and applies the conversions.

Deviations from Kafka (the conversions):

* A partition in two classic members' assignments (which herdlab's classic machine never produces) is kept by the
  member that joined first: the consumer group's partition epochs cannot express a partition owned twice (Kafka
  takes both assignments as they are).
* Partitions of topics that no longer exist are dropped from the converted assignments, as Kafka's
  ``toTopicPartitionMap`` does; topics are written in name order in assignments (Kafka: its map's order).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping

from coordinator.core.consumer.api import TopicPartitions, TopicsImage
from coordinator.core.consumer.group import ConsumerGroup
from coordinator.core.consumer.member import Assignment, ConsumerGroupMember, MemberState, assignment_text
from coordinator.core.consumer.protocol import (
    PROTOCOL_TYPE,
    ConsumerProtocolError,
    Subscription,
    decode_assignment,
    decode_subscription,
    decode_version,
    encode_assignment,
)
from coordinator.core.consumer.records import (
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
)
from coordinator.core.group.api import GroupState
from coordinator.core.group.group import Group
from coordinator.core.group.member import Member

__all__ = [
    "ConversionRefused",
    "assignment_bytes",
    "by_ids",
    "by_names",
    "classic_group_from_consumer",
    "consumer_group_from_classic",
    "group_tombstone_records",
    "owned_partitions",
]


class ConversionRefused(Exception):
    """A group that cannot be converted; ``str(e)`` is Kafka's message (answered GROUP_ID_NOT_FOUND)."""


def by_ids(partitions: Mapping[str, frozenset[int]], topics: TopicsImage) -> dict[uuid.UUID, frozenset[int]]:
    """Partitions by topic name -> by topic id; unknown topics are dropped (Kafka ``toTopicPartitionMap``)."""
    out: dict[uuid.UUID, frozenset[int]] = {}
    for name, parts in partitions.items():
        topic = topics.by_name(name)
        if topic is not None and parts:
            out[topic.topic_id] = out.get(topic.topic_id, frozenset()) | parts
    return out


def by_names(assignment: Assignment, topics: TopicsImage) -> dict[str, frozenset[int]]:
    """Partitions by topic id -> by topic name; topics no longer known are dropped (Kafka
    ``toConsumerProtocolAssignment``)."""
    out: dict[str, frozenset[int]] = {}
    for topic_id, parts in assignment.items():
        topic = topics.by_id(topic_id)
        if topic is not None and parts:
            out[topic.name] = parts
    return out


def owned_partitions(subscription: Subscription, topics: TopicsImage) -> tuple[TopicPartitions, ...]:
    """A classic member's owned partitions (its subscription's, v1+; none before) as the reconciliation takes them
    (Kafka ``toTopicPartitions(subscription.ownedPartitions())``)."""
    owned = by_ids(subscription.owned or {}, topics)
    return tuple(TopicPartitions(t, tuple(sorted(p))) for t, p in owned.items())


def assignment_bytes(member: ConsumerGroupMember, assignment: Assignment, topics: TopicsImage) -> bytes:
    """``assignment`` as a classic member's SyncGroup assignment, in the version of its first protocol's
    subscription (Kafka ``prepareAssignment`` / ``fromConsumerGroup``)."""
    classic = member.classic
    if classic is None:
        raise ValueError(f"member {member.member_id} does not use the classic protocol")
    version = decode_version(classic.protocols[0][1]) if classic.protocols else 0
    return encode_assignment(by_names(assignment, topics), max(version, 0))


def _first_subscription(member: Member, protocol: str) -> Subscription:
    return decode_subscription(member.metadata(protocol))


def consumer_group_from_classic(
    group: Group, topics: TopicsImage, now_ms: int
) -> tuple[ConsumerGroup, list[ConsumerRecord]]:
    """Kafka ``ConsumerGroup.fromClassicGroup`` and ``createConsumerGroupRecords`` (see the module docstring):
    the converted group and its records (every member's subscription, the group epoch, every member's target,
    the target epoch, every member's current assignment). :class:`ConversionRefused` when a member's
    subscription or assignment does not decode, or carries a custom assignor's user data that would be lost."""
    gid = group.group_id
    generation = group.generation_id
    protocol = group.protocol_name
    converted = ConsumerGroup(gid, now_ms)
    converted.group_epoch = generation
    converted.assignment_epoch = generation
    taken: set[tuple[uuid.UUID, int]] = set()
    members: list[ConsumerGroupMember] = []
    try:
        for m in group.members.values():
            subscription = _first_subscription(m, protocol or "")
            if m.assignment:
                parts, user_data = decode_assignment(m.assignment)
                if user_data:
                    raise ConversionRefused(
                        f"Cannot upgrade classic group {gid} to consumer group because an unsupported custom "
                        "assignor is in use. Please refer to the documentation or switch to a default assignor "
                        "before re-attempting the upgrade."
                    )
                assigned = by_ids(parts, topics)
            else:  # joined and never synced: nothing assigned (Kafka 4 accepts the empty assignment)
                assigned = {}
            kept: dict[uuid.UUID, frozenset[int]] = {}
            for topic_id, ps in assigned.items():
                free = frozenset(p for p in ps if (topic_id, p) not in taken)
                taken.update((topic_id, p) for p in free)
                if free:
                    kept[topic_id] = free
            members.append(
                ConsumerGroupMember(
                    m.member_id,
                    instance_id=m.group_instance_id,
                    rack_id=subscription.rack_id,
                    client_id=m.client_id,
                    client_host=m.client_host,
                    subscribed_topic_names=tuple(sorted(set(subscription.topics))),
                    rebalance_timeout_ms=m.rebalance_timeout_ms,
                    member_epoch=generation,
                    previous_member_epoch=generation,
                    state=MemberState.STABLE,
                    assigned=kept,
                    classic=ClassicMemberMetadata(m.session_timeout_ms, tuple(m.protocols)),
                )
            )
    except (ConsumerProtocolError, KeyError):
        raise ConversionRefused(
            f"Cannot upgrade classic group {gid} to consumer group because the embedded consumer protocol is "
            "malformed."
        ) from None
    for member in members:
        converted.target[member.member_id] = dict(member.assigned)
        converted.update_member(member)
    records: list[ConsumerRecord] = []
    for member in members:
        records.append(
            ConsumerMemberRecord(
                gid,
                member.member_id,
                member.instance_id,
                member.rack_id,
                member.client_id,
                member.client_host,
                member.subscribed_topic_names,
                member.subscribed_topic_regex,
                member.server_assignor,
                member.rebalance_timeout_ms,
                member.classic,
            )
        )
    # Kafka's converted group has no subscription metadata yet: the joining member's heartbeat computes it.
    records.append(ConsumerGroupEpochRecord(gid, generation, ()))
    for member in members:
        records.append(ConsumerTargetMemberRecord(gid, member.member_id, assignment_text(member.assigned)))
    records.append(ConsumerTargetEpochRecord(gid, generation))
    for member in members:
        records.append(
            ConsumerCurrentAssignmentRecord(
                gid,
                member.member_id,
                member.member_epoch,
                member.previous_member_epoch,
                member.state.value,
                assignment_text(member.assigned),
                (),
            )
        )
    return converted, records


def group_tombstone_records(group: ConsumerGroup) -> list[ConsumerRecord]:
    """Kafka ``ConsumerGroup.createGroupTombstoneRecords``: every member's current assignment, target and
    subscription, the target epoch and the group epoch, in Kafka's order (the offsets stay)."""
    gid = group.group_id
    records: list[ConsumerRecord] = []
    records.extend(ConsumerTombstoneRecord(gid, TOMBSTONE_CURRENT, m) for m in group.members)
    records.extend(ConsumerTombstoneRecord(gid, TOMBSTONE_TARGET, m) for m in group.members)
    records.append(ConsumerTombstoneRecord(gid, TOMBSTONE_TARGET_EPOCH))
    records.extend(ConsumerTombstoneRecord(gid, TOMBSTONE_MEMBER, m) for m in group.members)
    records.append(ConsumerTombstoneRecord(gid, TOMBSTONE_GROUP))
    return records


def classic_group_from_consumer(
    group: ConsumerGroup,
    leaving: Iterable[str],
    topics: TopicsImage,
    now_ms: int,
    joining: ConsumerGroupMember | None = None,
) -> Group:
    """Kafka ``ClassicGroup.fromConsumerGroup`` (the downgrade): a Stable classic group at generation = the group
    epoch, protocol type ``consumer``, every member but ``leaving`` (all of them classic members) with its JoinGroup
    protocols and timeouts, then ``joining`` (a classic static member replacing the static member of its instance
    id, which must be in ``leaving``), the protocol the members vote for, the first member as leader, and each
    member's assignment its target assignment (the joining member: the replaced one's) encoded in its
    subscription's version. :class:`ConversionRefused` when a member's subscription does not decode."""
    gone = set(leaving)
    gid = group.group_id
    classic = Group(gid, GroupState.STABLE, now_ms)
    classic.generation_id = group.group_epoch
    classic.protocol_type = PROTOCOL_TYPE
    kept = [m for m in group.members.values() if m.member_id not in gone]
    targets = {m.member_id: group.target.get(m.member_id, {}) for m in kept}
    if joining is not None:
        replaced = group.static_member(joining.instance_id or "")
        if replaced is None or replaced.member_id not in gone:
            raise ValueError(f"member {joining.member_id} replaces no leaving static member of group {gid}")
        kept.append(joining)
        targets[joining.member_id] = group.target.get(replaced.member_id, {})
    for m in kept:
        if m.classic is None:
            raise ValueError(f"member {m.member_id} of group {gid} does not use the classic protocol")
        classic.add(
            Member(
                gid,
                m.member_id,
                m.instance_id,
                m.client_id,
                m.client_host,
                m.rebalance_timeout_ms,
                m.classic.session_timeout_ms,
                PROTOCOL_TYPE,
                list(m.classic.protocols),
            )
        )
    classic.protocol_type = PROTOCOL_TYPE
    classic.protocol_name = classic.select_protocol()
    try:
        for m in kept:
            member = classic.members[m.member_id]
            version = decode_version(member.metadata(classic.protocol_name))
            member.assignment = encode_assignment(by_names(targets[m.member_id], topics), max(version, 0))
    except ConsumerProtocolError as e:
        raise ConversionRefused(f"Cannot downgrade the classic group {gid}: {e}.") from None
    return classic
