# pyright: strict
"""Reconciliation of one member towards its target assignment: Kafka 4's ``CurrentAssignmentBuilder``.

A member is STABLE (at its epoch, owning what it was given), UNREVOKED_PARTITIONS (it must first give up
``pending_revocation``: it stays at its epoch until a heartbeat's owned partitions no longer hold any of them),
or UNRELEASED_PARTITIONS (it is at the target epoch but part of its target is still held by another member: it
is given the rest now and those when they are released). Revocation always comes before assignment: a member that
must revoke is given nothing new in the same answer. When the member's subscription changed in this heartbeat, the
partitions of topics it no longer subscribes to become pending revocation at once, even while it is still revoking
others (Kafka 4.1's ``updateCurrentAssignment``).
"""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Callable, Sequence

from coordinator.core.consumer.api import TopicPartitions
from coordinator.core.consumer.member import Assignment, ConsumerGroupMember, MemberState

__all__ = ["FencedMemberEpoch", "reconcile"]


class FencedMemberEpoch(Exception):
    """The member must abandon its partitions and rejoin (Kafka ``FencedMemberEpochException``)."""


def reconcile(
    member: ConsumerGroupMember,
    target_epoch: int,
    target: Assignment,
    current_partition_epoch: Callable[[uuid.UUID, int], int],
    owned: Sequence[TopicPartitions] | None,
    subscribed_topic_ids: frozenset[uuid.UUID] | None = None,
    subscription_changed: bool = False,
) -> ConsumerGroupMember:
    """Kafka ``CurrentAssignmentBuilder.build``: the member's next state given the target assignment at
    ``target_epoch``, the epoch holding each partition now, the partitions the member says it owns (``None``: not
    sent in this heartbeat), the ids of the topics it subscribes to (its target in any other topic counts as
    empty; None: no such filter) and whether its subscription changed in this heartbeat (Kafka
    ``hasSubscriptionChanged``: a STABLE member already at ``target_epoch`` or an UNREVOKED_PARTITIONS member that
    still owns what it must revoke then has its unsubscribed topics moved to pending revocation, Kafka
    ``updateCurrentAssignment``). Returns ``member`` itself when nothing changes."""
    return _Builder(
        member,
        target_epoch,
        target,
        current_partition_epoch,
        owned,
        subscribed_topic_ids,
        subscription_changed,
    ).build()


class _Builder:
    def __init__(
        self,
        member: ConsumerGroupMember,
        target_epoch: int,
        target: Assignment,
        current_partition_epoch: Callable[[uuid.UUID, int], int],
        owned: Sequence[TopicPartitions] | None,
        subscribed_topic_ids: frozenset[uuid.UUID] | None,
        subscription_changed: bool = False,
    ) -> None:
        self.subscribed_topic_ids = subscribed_topic_ids
        self.subscription_changed = subscription_changed
        self.member = member
        self.target_epoch = target_epoch
        self.target = target
        self.current_partition_epoch = current_partition_epoch
        self.owned = owned

    def build(self) -> ConsumerGroupMember:
        member = self.member
        state = member.state
        if state is MemberState.STABLE:
            if member.member_epoch != self.target_epoch:
                return self._compute_next_assignment(member.member_epoch, member.assigned)
            if self.subscription_changed:
                return self._update_current_assignment()
            return member
        if state is MemberState.UNREVOKED_PARTITIONS:
            if self._owns_revoked_partitions(member.pending_revocation):
                if self.subscription_changed:
                    return self._update_current_assignment()
                return member
            # Revoked: the member moves to the next epoch (never past the target's) and on towards the target.
            return self._compute_next_assignment(
                min(member.member_epoch + 1, self.target_epoch), member.assigned
            )
        if state is MemberState.UNRELEASED_PARTITIONS:
            return self._compute_next_assignment(member.member_epoch, member.assigned)
        # UNKNOWN: only after a downgrade in Kafka; fence unless the member owns nothing.
        if self.owned is None or len(self.owned) > 0:
            raise FencedMemberEpoch(
                "The consumer group member is in a unknown state. The member must abandon all its partitions and rejoin."
            )
        return self._compute_next_assignment(self.target_epoch, member.assigned)

    def _owns_revoked_partitions(self, pending: Assignment) -> bool:
        """Kafka ``ownsRevokedPartitions``: True if the member did not report what it owns, or still owns one of
        ``pending``."""
        if self.owned is None:
            return True
        for tp in self.owned:
            revoking = pending.get(tp.topic_id)
            if revoking and any(p in revoking for p in tp.partitions):
                return True
        return False

    def _update_current_assignment(self) -> ConsumerGroupMember:
        """Kafka ``updateCurrentAssignment``: the assigned partitions of topics the member no longer subscribes to
        join its pending revocation; epochs unchanged. It becomes UNREVOKED_PARTITIONS if it still owns (or did not
        say what it owns) any partition pending revocation; otherwise those partitions were already revoked and only
        its assignment shrinks (state and pending revocation kept)."""
        member = self.member
        subscribed = self.subscribed_topic_ids
        if subscribed is None:
            return member
        removed = {t: p for t, p in member.assigned.items() if t not in subscribed}
        if not removed:
            return member
        new_assigned = {t: p for t, p in member.assigned.items() if t in subscribed}
        new_revocation = dict(member.pending_revocation)
        for topic, parts in removed.items():
            new_revocation[topic] = new_revocation.get(topic, frozenset()) | parts
        if new_revocation and self._owns_revoked_partitions(new_revocation):
            return dataclasses.replace(
                member,
                state=MemberState.UNREVOKED_PARTITIONS,
                assigned=new_assigned,
                pending_revocation=new_revocation,
            )
        return dataclasses.replace(member, assigned=new_assigned)

    def _compute_next_assignment(self, member_epoch: int, assigned_now: Assignment) -> ConsumerGroupMember:
        member = self.member
        has_unreleased = False
        new_assigned: dict[uuid.UUID, frozenset[int]] = {}
        new_revocation: dict[uuid.UUID, frozenset[int]] = {}
        new_pending_assignment: dict[uuid.UUID, frozenset[int]] = {}
        subscribed = self.subscribed_topic_ids
        for topic in set(self.target) | set(assigned_now):
            target = self.target.get(topic, frozenset())
            if subscribed is not None and topic not in subscribed:
                target = frozenset[int]()  # no longer subscribed to the topic: its target counts as empty
            current = assigned_now.get(topic, frozenset())
            assigned = current & target
            revocation = current - assigned
            pending = set(target - assigned)
            revoking_own = member.pending_revocation.get(topic, frozenset())
            unreleased = {
                p for p in pending if self.current_partition_epoch(topic, p) != -1 and p not in revoking_own
            }
            if unreleased:
                has_unreleased = True
                pending -= unreleased
            if assigned:
                new_assigned[topic] = assigned
            if revocation:
                new_revocation[topic] = revocation
            if pending:
                new_pending_assignment[topic] = frozenset(pending)

        if new_revocation and self._owns_revoked_partitions(new_revocation):
            return _with_epoch(
                member,
                member_epoch,
                state=MemberState.UNREVOKED_PARTITIONS,
                assigned=new_assigned,
                pending_revocation=new_revocation,
            )
        if new_pending_assignment:
            for topic, parts in new_pending_assignment.items():
                new_assigned[topic] = new_assigned.get(topic, frozenset()) | parts
            state = MemberState.UNRELEASED_PARTITIONS if has_unreleased else MemberState.STABLE
            return _with_epoch(
                member, self.target_epoch, state=state, assigned=new_assigned, pending_revocation={}
            )
        state = MemberState.UNRELEASED_PARTITIONS if has_unreleased else MemberState.STABLE
        return _with_epoch(
            member, self.target_epoch, state=state, assigned=new_assigned, pending_revocation={}
        )


def _with_epoch(
    member: ConsumerGroupMember,
    epoch: int,
    *,
    state: MemberState,
    assigned: Assignment,
    pending_revocation: Assignment,
) -> ConsumerGroupMember:
    """Kafka ``Builder.updateMemberEpoch`` (the previous epoch becomes the current one) with the new state."""
    return dataclasses.replace(
        member,
        member_epoch=epoch,
        previous_member_epoch=member.member_epoch,
        state=state,
        assigned=assigned,
        pending_revocation=pending_revocation,
    )
