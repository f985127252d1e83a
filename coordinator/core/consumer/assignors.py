# pyright: strict
"""The server-side assignors of consumer groups: Kafka 4's ``UniformAssignor`` (its homogeneous and heterogeneous
builders, ``UniformHomogeneousAssignmentBuilder`` / ``UniformHeterogeneousAssignmentBuilder``) and
``RangeAssignor`` (``org.apache.kafka.coordinator.group.assignor``), as pure functions of a :class:`GroupSpec`.

Each takes every member's subscribed topic ids (topics that exist; Kafka's ``MemberSubscription``) and its part of
the current target assignment, and returns the new target, one entry per member (an empty mapping for a member
that gets nothing).

Where Kafka's output depends on hash-map iteration order we fix an order, the same in both builders:

* members are taken in the order the spec lists them, which :mod:`~coordinator.core.consumer.target` makes
  ascending member id (Kafka: ``groupSpec.memberIds()``, a ``HashMap`` key set). In the homogeneous uniform
  builder a member is offered one of the extra partitions of ``total % members`` in this order, and keeps the
  offer only if it already holds that many partitions or too few members follow to take the extra ones left;
* topics are taken in Kafka's ``Uuid.compareTo`` order (most then least significant 64 bits, signed) where Kafka
  iterates a ``HashSet<Uuid>`` (the homogeneous builder's unassigned partitions; a member's current assignment);
* a member's partitions of one topic are taken in ascending order (the homogeneous builder keeps the first ones
  up to the member's quota). Java's ``HashSet<Integer>`` iterates that way only while every partition number is
  below the set's table size (16, 32, ... by the set's size); beyond it Kafka's order follows the hash buckets.

The heterogeneous builder and the range assignor sort with total orders of their own, so they match Kafka for the
same member order.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction

from coordinator.core.consumer.member import Assignment, topic_order_key

__all__ = ["GroupSpec", "MemberSpec", "assign", "range_assign", "uniform_assign"]

#: Kafka ``UniformHeterogeneousAssignmentBuilder.MAX_ITERATION_COUNT``.
MAX_ITERATION_COUNT = 16

#: A new target assignment: member id -> topic id -> partitions (a member's own assignment object when it keeps
#: exactly that).
Result = dict[str, Assignment]


@dataclass(slots=True, frozen=True)
class MemberSpec:
    """One member as an assignor sees it (Kafka ``MemberSubscriptionAndAssignmentImpl``)."""

    member_id: str
    instance_id: str | None
    subscribed_topic_ids: frozenset[uuid.UUID]
    assignment: Assignment


@dataclass(slots=True, frozen=True)
class GroupSpec:
    """The group as an assignor sees it (Kafka ``GroupSpecImpl`` and ``SubscribedTopicDescriber``):
    ``homogeneous`` as Kafka's ``SubscriptionType`` (``ConsumerGroup.is_homogeneous``),
    ``partitions`` the partition count of every subscribed topic that exists."""

    members: Sequence[MemberSpec]
    homogeneous: bool
    partitions: Mapping[uuid.UUID, int]


def assign(name: str, spec: GroupSpec) -> Result:
    """Run the assignor ``name`` (``uniform`` or ``range``)."""
    if name == "range":
        return range_assign(spec)
    if name == "uniform":
        return uniform_assign(spec)
    raise ValueError(f"unknown assignor {name!r}")


# ================================================================================================ uniform


def uniform_assign(spec: GroupSpec) -> Result:
    """Kafka ``UniformAssignor.assign``: the homogeneous builder when every member subscribes alike, else the
    heterogeneous one."""
    if not spec.members:
        return {}
    if spec.homogeneous:
        return _UniformHomogeneous(spec).build()
    return _UniformHeterogeneous(spec).build()


def _frozen(assignment: Mapping[uuid.UUID, set[int] | frozenset[int]]) -> dict[uuid.UUID, frozenset[int]]:
    return {t: frozenset(p) for t, p in assignment.items() if p}


class _UniformHomogeneous:
    """Kafka 4.1's ``UniformHomogeneousAssignmentBuilder``: keep what each member has up to its quota (the extra
    partitions going to members that already hold them where the order allows), hand the rest out in order to
    members below quota."""

    def __init__(self, spec: GroupSpec) -> None:
        self.spec = spec
        self.subscribed = spec.members[0].subscribed_topic_ids

    def build(self) -> Result:
        spec = self.spec
        if not self.subscribed:
            return {m.member_id: {} for m in spec.members}
        owned: dict[uuid.UUID, set[int]] = {}
        for m in spec.members:
            for topic, parts in m.assignment.items():
                owned.setdefault(topic, set()).update(parts)
        unassigned: list[tuple[uuid.UUID, int]] = []
        total = 0
        for topic in sorted(self.subscribed, key=topic_order_key):
            count = spec.partitions[topic]
            free = set(range(count)).difference(owned.get(topic, ()))
            unassigned.extend((topic, p) for p in sorted(free))
            total += count
        members = len(spec.members)
        minimum = total // members
        extra = total % members
        result: dict[str, dict[uuid.UUID, set[int]]] = {}
        #: members that keep exactly what they have: their assignment itself is their result (no copy)
        kept_whole: dict[str, Assignment] = {}
        unfilled: list[tuple[str, int]] = []
        # maybeRevokePartitions
        for index, m in enumerate(spec.members):
            quota = minimum
            has_extra = extra > 0
            if has_extra:
                quota += 1
            if len(m.assignment) == 1:
                # the common case, one topic: kept whole when it fills its quota exactly (nothing to give up)
                ((topic, parts),) = m.assignment.items()
                if parts and len(parts) == quota and topic in self.subscribed:
                    kept_whole[m.member_id] = m.assignment
                    if has_extra:
                        extra -= 1
                    continue
            new: dict[uuid.UUID, set[int]] = {}
            for topic in sorted(m.assignment, key=topic_order_key):
                parts = sorted(m.assignment[topic])
                if topic not in self.subscribed:
                    continue  # the whole topic goes
                if len(parts) <= quota:
                    quota -= len(parts)
                    new[topic] = set(parts)
                    continue
                kept: set[int] = set()
                for p in parts:
                    if quota > 0:
                        quota -= 1
                        kept.add(p)
                    else:
                        unassigned.append((topic, p))
                if kept:
                    new[topic] = kept
            # A member that cannot fill its extra slot from what it holds gives the slot up while the members
            # from it on outnumber the extra slots left, so the extra partitions stay with members that hold
            # them and fewer partitions move (Kafka 4.1's maybeRevokePartitions).
            if quota > 0 and has_extra and members - index > extra:
                quota -= 1
                has_extra = False
            if quota > 0:
                unfilled.append((m.member_id, quota))
            if has_extra:
                extra -= 1
            result[m.member_id] = new
        # assignRemainingPartitions
        index = 0
        for member_id, quota in unfilled:
            target = result[member_id]
            given = 0
            while given < quota and index < len(unassigned):
                topic, p = unassigned[index]
                index += 1
                given += 1
                target.setdefault(topic, set()).add(p)
        if index < len(unassigned):
            raise RuntimeError("uniform assignor: partitions were left unassigned")
        return {
            m.member_id: kept_whole[m.member_id]
            if m.member_id in kept_whole
            else _frozen(result[m.member_id])
            for m in spec.members
        }


class _Balancer:
    """Kafka ``UniformHeterogeneousAssignmentBuilder.MemberAssignmentBalancer``: walks the members of one topic
    from the least and from the most loaded without re-sorting after every move."""

    def __init__(self, sizes: list[int]) -> None:
        self.sizes = sizes
        self.sorted: list[int] = []
        self.least_end = 0
        self.least_count = -1
        self.next_least = 0
        self.most_start = 0
        self.most_end = 0
        self.most_count = 1
        self.next_most = -1

    def initialize(self, members: list[int]) -> int:
        sizes = self.sizes
        self.sorted = sorted(members, key=lambda i: (sizes[i], i))
        n = len(self.sorted)
        self.least_end = 0
        self.least_count = sizes[self.sorted[0]] - 1
        self.next_least = 0
        self.most_start = n
        self.most_end = n
        self.most_count = sizes[self.sorted[n - 1]] + 1
        self.next_most = n - 1
        return sizes[self.sorted[n - 1]] - sizes[self.sorted[0]]

    def next_least_loaded(self) -> int:
        sizes, order = self.sizes, self.sorted
        if self.next_least >= self.least_end:
            self.least_count += 1
            while self.least_end < len(order) and sizes[order[self.least_end]] == self.least_count:
                self.least_end += 1
            self.next_least = 0
        member = order[self.next_least]
        self.next_least += 1
        return member

    def next_most_loaded(self) -> int:
        sizes, order = self.sizes, self.sorted
        if self.next_most < self.most_start:
            if self.most_end <= self.most_start and self.most_start > 0:
                self.most_count = sizes[order[self.most_start - 1]]
            else:
                self.most_count -= 1
            while self.most_start > 0 and sizes[order[self.most_start - 1]] == self.most_count:
                self.most_start -= 1
            self.next_most = self.most_end - 1
        if self.next_most < 0:
            return -1
        member = order[self.next_most]
        self.next_most -= 1
        return member

    def exclude_most_loaded(self) -> None:
        order = self.sorted
        member = order[self.next_most + 1]
        order[self.next_most + 1] = order[self.most_end - 1]
        order[self.most_end - 1] = member
        self.most_end -= 1

    def is_balanced(self) -> bool:
        return self.most_count - self.least_count <= 1


class _UniformHeterogeneous:
    """Kafka ``UniformHeterogeneousAssignmentBuilder``: keep what members still subscribe to, give unassigned
    partitions to the least loaded subscriber topic by topic, then move partitions from the most to the least
    loaded subscribers until every topic's subscribers differ by at most one (or 16 rounds)."""

    def __init__(self, spec: GroupSpec) -> None:
        self.spec = spec
        self.member_ids = [m.member_id for m in spec.members]
        self.subscribers: dict[uuid.UUID, list[int]] = {}
        for index, m in enumerate(spec.members):
            for topic in sorted(m.subscribed_topic_ids, key=topic_order_key):
                self.subscribers.setdefault(topic, []).append(index)
        self.sizes = [0] * len(spec.members)
        self.owners: dict[uuid.UUID, list[int]] = {t: [-1] * spec.partitions[t] for t in self.subscribers}
        self.target: list[dict[uuid.UUID, set[int]]] = [{} for _ in spec.members]

    def _topic_key(self, topic: uuid.UUID) -> tuple[Fraction, int, tuple[int, int]]:
        subscribers = len(self.subscribers[topic])
        return (-Fraction(self.spec.partitions[topic], subscribers), subscribers, topic_order_key(topic))

    def _sorted(self, topics: list[uuid.UUID] | set[uuid.UUID]) -> list[uuid.UUID]:
        return sorted(topics, key=self._topic_key)

    def build(self) -> Result:
        if not self.subscribers:
            return {member_id: {} for member_id in self.member_ids}
        self._maybe_revoke_partitions()
        unassigned: dict[uuid.UUID, list[int]] = {}
        for topic, owners in self.owners.items():
            free = [p for p, owner in enumerate(owners) if owner == -1]
            if free:
                unassigned[topic] = free
        self._assign_remaining_partitions(unassigned)
        self._balance()
        return {self.member_ids[i]: _frozen(a) for i, a in enumerate(self.target)}

    def _maybe_revoke_partitions(self) -> None:
        for index, m in enumerate(self.spec.members):
            for topic, parts in m.assignment.items():
                if topic in m.subscribed_topic_ids and topic in self.owners:
                    self.sizes[index] += len(parts)
                    owners = self.owners[topic]
                    for p in parts:
                        owners[p] = index
                    self.target[index][topic] = set(parts)

    def _assign_remaining_partitions(self, unassigned: dict[uuid.UUID, list[int]]) -> None:
        balancer = _Balancer(self.sizes)
        for topic in self._sorted(list(unassigned)):
            balancer.initialize(self.subscribers[topic])
            for p in unassigned[topic]:
                self._assign_partition(topic, p, balancer.next_least_loaded())

    def _balance(self) -> None:
        topics = [t for t, subscribers in self.subscribers.items() if len(subscribers) >= 2]
        if topics:
            self._balance_topics(self._sorted(topics))

    def _balance_topics(self, topics: list[uuid.UUID]) -> None:
        last = -1
        balancer = _Balancer(self.sizes)
        for _ in range(MAX_ITERATION_COUNT):
            for index, topic in enumerate(topics):
                if index == last:
                    return
                moved = self._balance_topic(topic, balancer)
                if moved > 0 or last == -1:
                    last = index

    def _balance_topic(self, topic: uuid.UUID, balancer: _Balancer) -> int:
        moved = 0
        owners = self.owners[topic]
        if balancer.initialize(self.subscribers[topic]) <= 1:
            return moved
        partitions = sorted(range(len(owners)), key=lambda p: (owners[p], p))
        start: dict[int, int] = {}
        end: dict[int, int] = {}
        for i, p in enumerate(partitions):
            start.setdefault(owners[p], i)
            end[owners[p]] = i + 1
        while not balancer.is_balanced():
            most = -1
            while True:
                most = balancer.next_most_loaded()
                if most == -1:
                    break
                if most not in end or end[most] - start[most] <= 0:
                    balancer.exclude_most_loaded()
                    continue
                break
            if most == -1:
                break
            p = partitions[end[most] - 1]
            end[most] -= 1
            least = balancer.next_least_loaded()
            if balancer.is_balanced():
                break
            self._assign_partition(topic, p, least)
            moved += 1
        return moved

    def _assign_partition(self, topic: uuid.UUID, p: int, member: int) -> None:
        owners = self.owners[topic]
        old = owners[p]
        if old != -1:
            parts = self.target[old].get(topic)
            if parts is not None:
                parts.discard(p)
                if not parts:
                    del self.target[old][topic]
            self.sizes[old] -= 1
        self.target[member].setdefault(topic, set()).add(p)
        owners[p] = member
        self.sizes[member] += 1


# ================================================================================================ range


def _range_member_order(spec: GroupSpec) -> list[MemberSpec]:
    """Kafka ``RangeAssignor.sortMemberIds``: static members first by instance id, then the others by member id."""
    static = sorted((m for m in spec.members if m.instance_id is not None), key=lambda m: m.instance_id or "")
    dynamic = sorted((m for m in spec.members if m.instance_id is None), key=lambda m: m.member_id)
    return static + dynamic


def range_assign(spec: GroupSpec) -> Result:
    """Kafka's server-side ``RangeAssignor``: per topic, its subscribers in :func:`_range_member_order` get
    consecutive ranges, the first ``partitions % subscribers`` one partition more. Not sticky: the current
    target is ignored."""
    if not spec.members:
        return {}
    members = _range_member_order(spec)
    subscribers: dict[uuid.UUID, int] = {}
    if spec.homogeneous:
        for topic in members[0].subscribed_topic_ids:
            subscribers[topic] = len(members)
    else:
        for m in members:
            for topic in m.subscribed_topic_ids:
                subscribers[topic] = subscribers.get(topic, 0) + 1
    next_range: dict[uuid.UUID, int] = dict.fromkeys(subscribers, 0)
    extra: dict[uuid.UUID, int] = {t: spec.partitions[t] % n for t, n in subscribers.items()}
    result: Result = {}
    for m in members:
        topics = members[0].subscribed_topic_ids if spec.homogeneous else m.subscribed_topic_ids
        assignment: dict[uuid.UUID, frozenset[int]] = {}
        for topic in topics:
            count = spec.partitions[topic]
            quota = count // subscribers[topic]
            if extra[topic] > 0:
                quota += 1
                extra[topic] -= 1
            first = next_range[topic]
            last = min(first + quota, count)
            next_range[topic] = last
            if first < last:
                assignment[topic] = frozenset(range(first, last))
        result[m.member_id] = assignment
    return result
