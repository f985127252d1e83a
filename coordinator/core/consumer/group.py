# pyright: strict
"""A consumer group's state (Kafka 4's ``ConsumerGroup`` / ``ModernGroup``): members, static members, the group
and target-assignment epochs, the target assignment, which member epoch holds each partition, and the group
state derived from them. Data and local invariants only; effects are the machine's
(:mod:`coordinator.core.consumer.machine`).

The group also answers the shared offsets' questions (:class:`~coordinator.core.group.offsets.OffsetGroup`) with
Kafka 4's consumer-group rules (``ConsumerGroup.validateOffsetCommit`` / ``validateOffsetFetch``).
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterable
from enum import StrEnum

from coordinator.core.consumer.api import TopicsImage
from coordinator.core.consumer.member import Assignment, ConsumerGroupMember, MemberState
from coordinator.core.consumer.records import SubscribedTopic
from coordinator.core.group.api import OffsetCommitRequest, OffsetFetchRequest
from coordinator.core.group.errors import ErrorCode

__all__ = ["ConsumerGroup", "ConsumerGroupState", "regex_matches"]


class ConsumerGroupState(StrEnum):
    """Kafka ``ConsumerGroup.ConsumerGroupState``; the values are the names ListGroups / DescribeGroups report."""

    EMPTY = "Empty"
    ASSIGNING = "Assigning"
    RECONCILING = "Reconciling"
    STABLE = "Stable"
    DEAD = "Dead"


def regex_matches(regex: str, names: Iterable[str]) -> frozenset[str]:
    """The topic names ``regex`` matches in full (Kafka: RE2J ``Pattern.matcher(topic).matches()``; here Python's
    ``re``, whose syntax RE2 shares for ordinary patterns). An invalid pattern matches nothing (the heartbeat
    refuses it before it gets here)."""
    try:
        pattern = re.compile(regex)
    except re.error:
        return frozenset()
    return frozenset(n for n in names if pattern.fullmatch(n))


class ConsumerGroup:
    """One consumer group.

    ``members`` keeps join order (used only for listing); assignors see members in member-id order.
    ``partition_epochs[topic][partition]`` is the epoch of the member that holds the partition (assigned or
    pending revocation): a partition is free for another member only when absent (Kafka ``currentPartitionEpoch``
    == -1). ``subscribed`` is the subscription metadata the group epoch was last computed from (sorted by name).
    """

    __slots__ = (
        "group_id",
        "group_epoch",
        "_assignment_epoch",
        "_unreconciled",
        "members",
        "static_members",
        "target",
        "partition_epochs",
        "subscribed",
        "topic_counts",
        "regex_counts",
        "assignor_counts",
        "classic_members",
        "classic_protocols",
        "state",
        "state_timestamp_ms",
    )

    def __init__(self, group_id: str, now_ms: int = 0) -> None:
        self.group_id = group_id
        self.group_epoch = 0
        self._assignment_epoch = 0
        #: ids of the members not reconciled to the target epoch (kept so that the state costs O(1)).
        self._unreconciled: set[str] = set()
        self.members: dict[str, ConsumerGroupMember] = {}
        self.static_members: dict[str, str] = {}
        self.target: dict[str, Assignment] = {}
        self.partition_epochs: dict[uuid.UUID, dict[int, int]] = {}
        self.subscribed: tuple[SubscribedTopic, ...] = ()
        #: subscribed topic name -> members subscribing to it by name.
        self.topic_counts: dict[str, int] = {}
        #: subscription regex -> members subscribing with it.
        self.regex_counts: dict[str, int] = {}
        #: server assignor name -> members asking for it.
        self.assignor_counts: dict[str, int] = {}
        #: members that use the classic protocol (Kafka ``numClassicProtocolMembers``).
        self.classic_members = 0
        #: classic protocol name -> classic members listing it (Kafka ``classicProtocolMembersSupportedProtocols``).
        self.classic_protocols: dict[str, int] = {}
        self.state = ConsumerGroupState.EMPTY
        self.state_timestamp_ms = now_ms

    # ---------------------------------------------------------------------------------------------- epochs

    @property
    def assignment_epoch(self) -> int:
        """The epoch of the target assignment (Kafka ``targetAssignmentEpoch``)."""
        return self._assignment_epoch

    @assignment_epoch.setter
    def assignment_epoch(self, epoch: int) -> None:
        if epoch != self._assignment_epoch:
            self._assignment_epoch = epoch
            self._unreconciled = {m.member_id for m in self.members.values() if not m.is_reconciled_to(epoch)}

    # ---------------------------------------------------------------------------------------------- OffsetGroup

    @property
    def generation_id(self) -> int:
        """The group epoch (what the offsets' log lines call the generation)."""
        return self.group_epoch

    def validate_offset_commit(self, req: OffsetCommitRequest) -> ErrorCode | None:
        """Kafka 4 ``ConsumerGroup.validateOffsetCommit``: a commit with a negative member epoch into an Empty group
        is an admin (or manually assigned) commit and is taken; otherwise the member must exist
        (UNKNOWN_MEMBER_ID), commit with OffsetCommit v9+ (UNSUPPORTED_VERSION; checked when the request says its
        version) and send its current member epoch (STALE_MEMBER_EPOCH)."""
        if req.generation_id < 0 and not self.members:
            return None
        member = self.members.get(req.member_id)
        if member is None:
            return ErrorCode.UNKNOWN_MEMBER_ID
        if member.classic is None and req.api_version is not None and req.api_version < 9:
            return ErrorCode.UNSUPPORTED_VERSION
        if req.generation_id != member.member_epoch:
            # Kafka ``validateMemberEpoch``: a classic member's generation is its member epoch.
            return (
                ErrorCode.ILLEGAL_GENERATION if member.classic is not None else ErrorCode.STALE_MEMBER_EPOCH
            )
        return None

    def validate_offset_fetch(self, req: OffsetFetchRequest) -> ErrorCode | None:
        """Kafka 4 ``ConsumerGroup.validateOffsetFetch``: a fetch without member id and with a negative epoch (an
        admin's, or any before v9) is accepted; a member's needs the member (UNKNOWN_MEMBER_ID) at the epoch it
        sends (STALE_MEMBER_EPOCH)."""
        if req.member_id is None and req.member_epoch < 0:
            return None
        member = self.members.get(req.member_id or "")
        if member is None:
            return ErrorCode.UNKNOWN_MEMBER_ID
        if req.member_epoch != member.member_epoch:
            return (
                ErrorCode.ILLEGAL_GENERATION if member.classic is not None else ErrorCode.STALE_MEMBER_EPOCH
            )
        return None

    # ---------------------------------------------------------------------------------------------- members

    def static_member(self, instance_id: str) -> ConsumerGroupMember | None:
        member_id = self.static_members.get(instance_id)
        return None if member_id is None else self.members.get(member_id)

    def update_member(self, member: ConsumerGroupMember) -> None:
        """Kafka ``ConsumerGroup.updateMember``: replace or add ``member``, keeping the subscription counts, the
        static-member index and the partition epochs consistent."""
        old = self.members.get(member.member_id)
        self._count(old, -1)
        self._count(member, +1)
        if old is not None:
            self._remove_partition_epochs(old.assigned, old.member_epoch)
            self._remove_partition_epochs(old.pending_revocation, old.member_epoch)
        self._add_partition_epochs(member.assigned, member.member_epoch)
        self._add_partition_epochs(member.pending_revocation, member.member_epoch)
        self.members[member.member_id] = member
        if member.is_reconciled_to(self._assignment_epoch):
            self._unreconciled.discard(member.member_id)
        else:
            self._unreconciled.add(member.member_id)
        if member.instance_id is not None:
            self.static_members[member.instance_id] = member.member_id

    def remove_member(self, member_id: str) -> ConsumerGroupMember | None:
        """Kafka ``ConsumerGroup.removeMember`` together with its target tombstone: the member, its part of the
        target assignment and the partitions it held go."""
        member = self.members.pop(member_id, None)
        self.target.pop(member_id, None)
        self._unreconciled.discard(member_id)
        if member is None:
            return None
        self._count(member, -1)
        self._remove_partition_epochs(member.assigned, member.member_epoch)
        self._remove_partition_epochs(member.pending_revocation, member.member_epoch)
        if member.instance_id is not None and self.static_members.get(member.instance_id) == member_id:
            del self.static_members[member.instance_id]
        return member

    def _count(self, member: ConsumerGroupMember | None, delta: int) -> None:
        if member is None:
            return
        for name in member.subscribed_topic_names:
            _bump(self.topic_counts, name, delta)
        if member.subscribed_topic_regex:
            _bump(self.regex_counts, member.subscribed_topic_regex, delta)
        if member.server_assignor is not None:
            _bump(self.assignor_counts, member.server_assignor, delta)
        if member.classic is not None:
            self.classic_members += delta
            for name in dict.fromkeys(name for name, _ in member.classic.protocols):
                _bump(self.classic_protocols, name, delta)

    # ---------------------------------------------------------------------------------------------- classic members

    def supports_classic_protocols(self, protocol_type: str, names: Iterable[str]) -> bool:
        """Kafka ``supportsClassicProtocols``: a classic member may join if it speaks the embedded consumer protocol
        and, unless the group is empty, one of its protocols is listed by every classic member."""
        wanted = list(names)
        if protocol_type != "consumer":
            return False
        if not self.members:
            return bool(wanted)
        return any(self.classic_protocols.get(name, 0) == self.classic_members for name in wanted)

    def all_members_use_classic_protocol_except(self, member_ids: Iterable[str]) -> bool:
        """Kafka ``allMembersUseClassicProtocolExcept``: every member but ``member_ids`` (which must not use it)
        uses the classic protocol."""
        leaving = [self.members[m] for m in set(member_ids) if m in self.members]
        if any(m.classic is not None for m in leaving):
            return False
        return self.classic_members == len(self.members) - len(leaving)

    def waiting_on_unreleased_partition(self, member: ConsumerGroupMember) -> bool:
        """Kafka ``waitingOnUnreleasedPartition``: the member waits for a partition of its target that another
        member still holds."""
        if member.state is not MemberState.UNRELEASED_PARTITIONS:
            return False
        for topic, parts in self.target.get(member.member_id, {}).items():
            assigned = member.assigned.get(topic, frozenset())
            for p in parts:
                if p not in assigned and self.current_partition_epoch(topic, p) != -1:
                    return True
        return False

    def current_partition_epoch(self, topic_id: uuid.UUID, partition: int) -> int:
        """Kafka ``currentPartitionEpoch``: the epoch of the member holding the partition, -1 if none does."""
        return self.partition_epochs.get(topic_id, {}).get(partition, -1)

    def _add_partition_epochs(self, assignment: Assignment, epoch: int) -> None:
        for topic, parts in assignment.items():
            epochs = self.partition_epochs.setdefault(topic, {})
            for p in parts:
                epochs[p] = epoch

    def _remove_partition_epochs(self, assignment: Assignment, epoch: int) -> None:
        for topic, parts in assignment.items():
            epochs = self.partition_epochs.get(topic)
            if epochs is None:
                continue
            for p in parts:
                if epochs.get(p) == epoch:
                    del epochs[p]
            if not epochs:
                del self.partition_epochs[topic]

    # ---------------------------------------------------------------------------------------------- subscriptions

    def subscribed_topic_names(
        self, image: TopicsImage, old: ConsumerGroupMember | None, new: ConsumerGroupMember | None
    ) -> dict[str, int]:
        """Kafka ``computeSubscribedTopicNames`` with ``old`` replaced by ``new``: every topic name the members
        subscribe to (by name, or through a regex resolved against ``image`` now), with how many members do."""
        counts = dict(self.topic_counts)
        regexes = dict(self.regex_counts)
        for member, delta in ((old, -1), (new, +1)):
            if member is None:
                continue
            for name in member.subscribed_topic_names:
                _bump(counts, name, delta)
            if member.subscribed_topic_regex:
                _bump(regexes, member.subscribed_topic_regex, delta)
        if regexes:
            names = list(image.names())
            for regex, n in regexes.items():
                for name in regex_matches(regex, names):
                    counts[name] = counts.get(name, 0) + n
        return counts

    def is_homogeneous(
        self, old: ConsumerGroupMember | None, new: ConsumerGroupMember | None, members: int
    ) -> bool:
        """Kafka 4 ``ConsumerGroup.subscriptionType`` with ``old`` replaced by ``new`` and ``members`` members:
        without regexes, homogeneous when every subscribed topic name is subscribed by every member; with any
        regex, only when all the members use one single regex and no topic is subscribed by name."""
        counts = dict(self.topic_counts)
        regexes = dict(self.regex_counts)
        for member, delta in ((old, -1), (new, +1)):
            if member is None:
                continue
            for name in member.subscribed_topic_names:
                _bump(counts, name, delta)
            if member.subscribed_topic_regex:
                _bump(regexes, member.subscribed_topic_regex, delta)
        if not regexes:
            return all(count == members for count in counts.values())
        return len(regexes) == 1 and next(iter(regexes.values())) == members and not counts

    @staticmethod
    def subscription_metadata(names: Iterable[str], image: TopicsImage) -> tuple[SubscribedTopic, ...]:
        """Kafka ``computeSubscriptionMetadata``: the subscribed topics that exist, with id and partition count
        (sorted by name). Topics that do not exist are left out: a member subscribed only to them gets nothing."""
        out: list[SubscribedTopic] = []
        for name in sorted(names):
            topic = image.by_name(name)
            if topic is not None:
                out.append(SubscribedTopic(name, str(topic.topic_id), topic.partitions))
        return tuple(out)

    def preferred_assignor(
        self, old: ConsumerGroupMember | None, new: ConsumerGroupMember | None
    ) -> str | None:
        """Kafka ``computePreferredServerAssignor``: the server assignor most members ask for (with ``old``
        replaced by ``new``); ties go to the name that sorts first (Kafka: hash-map order). None: nobody asks."""
        counts = dict(self.assignor_counts)
        if old is not None and old.server_assignor is not None:
            _bump(counts, old.server_assignor, -1)
        if new is not None and new.server_assignor is not None:
            _bump(counts, new.server_assignor, +1)
        if not counts:
            return None
        return min(counts, key=lambda name: (-counts[name], name))

    # ---------------------------------------------------------------------------------------------- state

    def compute_state(self) -> ConsumerGroupState:
        """Kafka ``maybeUpdateGroupState``: Empty without members, Assigning while the target lags the group epoch,
        Reconciling while a member is not reconciled to the target, else Stable."""
        if not self.members:
            return ConsumerGroupState.EMPTY
        if self.group_epoch > self._assignment_epoch:
            return ConsumerGroupState.ASSIGNING
        if self._unreconciled:
            return ConsumerGroupState.RECONCILING
        return ConsumerGroupState.STABLE

    def reconciling_members(self) -> int:
        return sum(1 for m in self.members.values() if m.state is not MemberState.STABLE)


def _bump(counts: dict[str, int], key: str, delta: int) -> None:
    value = counts.get(key, 0) + delta
    if value > 0:
        counts[key] = value
    else:
        counts.pop(key, None)
