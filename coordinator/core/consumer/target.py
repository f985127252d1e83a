# pyright: strict
"""The target assignment of a group epoch: Kafka 4's ``TargetAssignmentBuilder`` (and the part of
``GroupMetadataManager.updateTargetAssignment`` that prepares it).

:func:`build_target` runs the group's assignor over every member (with one member added, updated or replaced)
and returns the new target together with the records that persist its delta: one
:class:`~coordinator.core.consumer.records.ConsumerTargetMemberRecord` per member whose part changed, then the
:class:`~coordinator.core.consumer.records.ConsumerTargetEpochRecord` of the new epoch. It changes nothing.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from coordinator.core.consumer.assignors import GroupSpec, MemberSpec, assign
from coordinator.core.consumer.group import ConsumerGroup, regex_matches
from coordinator.core.consumer.member import (
    EMPTY_ASSIGNMENT,
    Assignment,
    ConsumerGroupMember,
    assignment_text,
)
from coordinator.core.consumer.records import (
    ConsumerRecord,
    ConsumerTargetEpochRecord,
    ConsumerTargetMemberRecord,
    SubscribedTopic,
)

__all__ = ["TargetAssignment", "build_target", "partitions_moved"]


@dataclass(slots=True)
class TargetAssignment:
    """The result of :func:`build_target`: every member's part of the target (members absent from it have none),
    the records of the delta, and the assignor used."""

    epoch: int
    members: dict[str, Assignment]
    records: list[ConsumerRecord]
    assignor: str


def build_target(
    group: ConsumerGroup,
    epoch: int,
    assignor: str,
    subscribed: tuple[SubscribedTopic, ...],
    homogeneous: bool,
    updated: ConsumerGroupMember | None = None,
    removed: str | None = None,
) -> TargetAssignment:
    """Kafka ``TargetAssignmentBuilder.build``: the members are the group's, with ``updated`` added or replacing
    the member of its id and ``removed`` left out (a static member's previous incarnation). A member's current
    target is its own; a static member replacing another starts from the other's. The assignor sees only the topics
    of ``subscribed`` (the group's subscription metadata, whose names regexes are matched against); members in
    ascending member-id order (see :mod:`~coordinator.core.consumer.assignors`)."""
    members: dict[str, ConsumerGroupMember] = dict(group.members)
    current: dict[str, Assignment] = {m: group.target.get(m, EMPTY_ASSIGNMENT) for m in members}
    if updated is not None:
        members[updated.member_id] = updated
        start = group.target.get(updated.member_id, EMPTY_ASSIGNMENT)
        if updated.instance_id is not None:
            previous = group.static_members.get(updated.instance_id)
            if previous is not None and previous != updated.member_id:
                start = group.target.get(previous, EMPTY_ASSIGNMENT)
        current[updated.member_id] = start
    if removed is not None and (updated is None or removed != updated.member_id):
        members.pop(removed, None)
        current.pop(removed, None)

    partitions: dict[uuid.UUID, int] = {uuid.UUID(t.topic_id): t.partitions for t in subscribed}
    ids_by_name = {t.name: uuid.UUID(t.topic_id) for t in subscribed}
    topic_names = [t.name for t in subscribed]
    regex_names: dict[str, frozenset[str]] = {}
    by_subscription: dict[tuple[tuple[str, ...], str | None], frozenset[uuid.UUID]] = {}
    specs: list[MemberSpec] = []
    for member_id in sorted(members):
        member = members[member_id]
        key = (member.subscribed_topic_names, member.subscribed_topic_regex)
        topic_ids = by_subscription.get(key)
        if topic_ids is None:
            names = set(member.subscribed_topic_names)
            regex = member.subscribed_topic_regex
            if regex:
                if regex not in regex_names:
                    regex_names[regex] = regex_matches(regex, topic_names)
                names |= regex_names[regex]
            topic_ids = frozenset(ids_by_name[n] for n in names if n in ids_by_name)
            by_subscription[key] = topic_ids
        specs.append(MemberSpec(member_id, member.instance_id, topic_ids, current[member_id]))
    result = assign(assignor, GroupSpec(specs, homogeneous, partitions))

    new_target: dict[str, Assignment] = {}
    records: list[ConsumerRecord] = []
    for spec in specs:
        new = result.get(spec.member_id, EMPTY_ASSIGNMENT)
        new_target[spec.member_id] = new
        old = group.target.get(spec.member_id)
        if old is None or (old is not new and dict(old) != dict(new)):
            records.append(ConsumerTargetMemberRecord(group.group_id, spec.member_id, assignment_text(new)))
    records.append(ConsumerTargetEpochRecord(group.group_id, epoch))
    return TargetAssignment(epoch, new_target, records, assignor)


def partitions_moved(old: dict[str, Assignment], new: dict[str, Assignment]) -> int:
    """How many partitions have another target owner in ``new`` than in ``old`` (gaining or losing an owner
    counts). A target gives each partition one owner, so a partition changed owner exactly when some member
    lost or gained it: the count is the union of what members lost and gained, read from the members whose
    part changed (a member's unchanged part, often the very same object, is skipped)."""
    empty: Assignment = {}
    changed: dict[uuid.UUID, set[int]] = {}
    for member_id in old.keys() | new.keys():
        was, now = old.get(member_id, empty), new.get(member_id, empty)
        if was is now or was == now:
            continue
        for topic in was.keys() | now.keys():
            a, b = was.get(topic, frozenset[int]()), now.get(topic, frozenset[int]())
            if a != b:
                changed.setdefault(topic, set()).update(a ^ b)
    return sum(len(parts) for parts in changed.values())
