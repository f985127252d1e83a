# pyright: strict
"""Per-group state of a classic group (Kafka ``GroupMetadata``): membership bookkeeping and the state graph.

This module holds data and the invariants that are local to one group (counts, leader, protocol support,
``validPreviousStates``). Everything that produces effects (timers, responses, records) lives in
:mod:`coordinator.core.group.machine` and the modules it delegates to.
"""

from __future__ import annotations

import logging

from coordinator.core.group.api import GroupState, OffsetCommitRequest, OffsetFetchRequest
from coordinator.core.group.errors import ErrorCode
from coordinator.core.group.member import Member

__all__ = ["VALID_PREVIOUS_STATES", "Group", "IllegalTransition"]

log = logging.getLogger("coordinator.group")

#: Kafka ``GroupState.validPreviousStates``.
VALID_PREVIOUS_STATES: dict[GroupState, frozenset[GroupState]] = {
    GroupState.PREPARING_REBALANCE: frozenset(
        {GroupState.STABLE, GroupState.COMPLETING_REBALANCE, GroupState.EMPTY}
    ),
    GroupState.COMPLETING_REBALANCE: frozenset({GroupState.PREPARING_REBALANCE}),
    GroupState.STABLE: frozenset({GroupState.COMPLETING_REBALANCE}),
    GroupState.EMPTY: frozenset({GroupState.PREPARING_REBALANCE}),
    GroupState.DEAD: frozenset(GroupState),
}


class IllegalTransition(RuntimeError):
    """A state change not allowed by :data:`VALID_PREVIOUS_STATES`: a bug in the machine, never a client error."""


class Group:
    """A consumer group.

    ``members`` is insertion-ordered (join order); this makes "any member" choices deterministic: the new leader
    after the leader leaves is the oldest remaining member, and the re-elected leader after the leader fails to
    rejoin is the oldest member that did rejoin (Kafka iterates a hash map there: the choice is arbitrary).

    Its committed offsets are not here but in the :class:`~coordinator.core.group.offsets.OffsetManager` shared by
    the group types, which asks the group to validate commits and fetches (an
    :class:`~coordinator.core.group.offsets.OffsetGroup`).
    """

    __slots__ = (
        "group_id",
        "state",
        "state_timestamp_ms",
        "generation_id",
        "protocol_type",
        "protocol_name",
        "leader_id",
        "members",
        "static_members",
        "pending_members",
        "pending_sync",
        "num_awaiting_join",
        "supported_protocols",
        "new_member_added",
        "join_deadline_ms",
        "join_initial",
        "join_delay_ms",
        "join_remaining_ms",
        "join_key",
        "sync_deadline_ms",
        "sync_generation",
    )

    def __init__(self, group_id: str, state: GroupState = GroupState.EMPTY, now_ms: int = 0) -> None:
        self.group_id = group_id
        self.state = state
        self.state_timestamp_ms = now_ms
        self.generation_id = 0
        self.protocol_type: str | None = None
        self.protocol_name: str | None = None
        self.leader_id: str | None = None
        self.members: dict[str, Member] = {}
        self.static_members: dict[str, str] = {}
        #: MEMBER_ID_REQUIRED members not yet rejoined: member id -> deadline of their pending timer.
        self.pending_members: dict[str, int] = {}
        #: members that got their JoinGroup answer of this generation but have not sent SyncGroup yet.
        #: (an insertion-ordered dict used as a set, so that laggards are removed in a deterministic order)
        self.pending_sync: dict[str, None] = {}
        self.num_awaiting_join = 0
        #: protocol name -> number of members supporting it.
        self.supported_protocols: dict[str, int] = {}
        self.new_member_added = False
        # The join barrier: armed while PreparingRebalance. ``join_initial`` marks an InitialDelayedJoin, which
        # never completes early; ``join_delay_ms`` / ``join_remaining_ms`` are its current delay and what is left.
        self.join_deadline_ms: int | None = None
        self.join_initial = False
        self.join_delay_ms = 0
        self.join_remaining_ms = 0
        self.join_key: tuple[str, str] = ("join", group_id)
        # The pending-sync timeout (DelayedSync), armed for generation ``sync_generation``.
        self.sync_deadline_ms: int | None = None
        self.sync_generation = -1

    # ---------------------------------------------------------------------------------------------- state

    def is_(self, state: GroupState) -> bool:
        return self.state is state

    def can_rebalance(self) -> bool:
        return self.state in VALID_PREVIOUS_STATES[GroupState.PREPARING_REBALANCE]

    def transition_to(self, state: GroupState, now_ms: int) -> GroupState:
        """Change state, enforcing ``validPreviousStates``; returns the previous state."""
        if self.state not in VALID_PREVIOUS_STATES[state]:
            raise IllegalTransition(f"group {self.group_id}: {self.state} -> {state} is not allowed")
        previous = self.state
        self.state = state
        self.state_timestamp_ms = now_ms
        return previous

    # ---------------------------------------------------------------------------------------------- members

    def has(self, member_id: str) -> bool:
        return member_id in self.members

    def is_leader(self, member_id: str) -> bool:
        return self.leader_id is not None and self.leader_id == member_id

    @property
    def size(self) -> int:
        return len(self.members)

    def add(self, member: Member) -> None:
        """Add ``member`` (Kafka ``GroupMetadata.add``). Its ``awaiting_join`` flag must already be set if it
        has a parked JoinGroup. The first member sets the protocol type; the first member becomes leader if
        there is none. A pending member of that id stops being pending."""
        if member.group_instance_id is not None:
            if member.group_instance_id in self.static_members:
                raise RuntimeError(
                    f"static member {member.group_instance_id} is already in group {self.group_id}"
                )
            self.static_members[member.group_instance_id] = member.member_id
        if not self.members:
            self.protocol_type = member.protocol_type
        if self.leader_id is None:
            self.leader_id = member.member_id
        self.members[member.member_id] = member
        self._inc_protocols(member)
        if member.awaiting_join:
            self.num_awaiting_join += 1
        self.pending_members.pop(member.member_id, None)

    def remove(self, member_id: str) -> Member | None:
        """Remove a member or a pending member (Kafka ``GroupMetadata.remove``); parked requests are the
        caller's business. If it was the leader, the oldest remaining member becomes leader."""
        member = self.members.pop(member_id, None)
        if member is not None:
            self._dec_protocols(member)
            if member.awaiting_join:
                self.num_awaiting_join -= 1
            if member.group_instance_id is not None:
                self.static_members.pop(member.group_instance_id, None)
        if self.leader_id == member_id:
            self.leader_id = next(iter(self.members), None)
        self.pending_members.pop(member_id, None)
        self.pending_sync.pop(member_id, None)
        return member

    def update_member(
        self,
        member: Member,
        protocols: list[tuple[str, bytes]],
        rebalance_timeout_ms: int,
        session_timeout_ms: int,
    ) -> None:
        """Replace a member's protocols and timeouts (Kafka ``updateMember`` without the callback part)."""
        self._dec_protocols(member)
        member.protocols = protocols
        self._inc_protocols(member)
        member.rebalance_timeout_ms = rebalance_timeout_ms
        member.session_timeout_ms = session_timeout_ms

    def park_join(self, member: Member, token: object) -> tuple[bool, object]:
        """Park ``member``'s JoinGroup. Returns ``(superseded, old_token)``: a JoinGroup that was already parked
        for this member is replaced (Kafka drops its callback; the machine answers it)."""
        superseded, old = member.awaiting_join, member.join_token
        if not superseded:
            self.num_awaiting_join += 1
            member.awaiting_join = True
        member.join_token = token
        return superseded, old

    def take_join(self, member: Member) -> tuple[bool, object]:
        """Un-park ``member``'s JoinGroup: ``(was_parked, token)``."""
        if not member.awaiting_join:
            return False, None
        token = member.join_token
        member.awaiting_join = False
        member.join_token = None
        self.num_awaiting_join -= 1
        return True, token

    def replace_static_member(self, instance_id: str, old_member_id: str, new_member_id: str) -> Member:
        """Re-key the static member ``instance_id`` from ``old_member_id`` to ``new_member_id``. The leader id
        follows, and the member keeps its place in join order (O(members) unless it is the newest member).
        The caller answers the old id's parked requests first."""
        members = self.members
        member = members[old_member_id]
        member.rename(self.group_id, new_member_id)
        if next(reversed(members)) == old_member_id:
            del members[old_member_id]
            members[new_member_id] = member
        else:
            self.members = {(new_member_id if k == old_member_id else k): v for k, v in members.items()}
        if self.leader_id == old_member_id:
            self.leader_id = new_member_id
        self.static_members[instance_id] = new_member_id
        # As in Kafka, ``pending_sync`` keeps the *old* id: if the old incarnation had not sent SyncGroup yet,
        # the pending-sync timeout still fires for it and rebalances the group.
        return member

    def validate_member(self, member_id: str, instance_id: str | None) -> ErrorCode | None:
        """Kafka ``validateCurrentMember``: FENCED_INSTANCE_ID / UNKNOWN_MEMBER_ID, or ``None`` if valid."""
        if instance_id is not None:
            current = self.static_members.get(instance_id)
            if current is None:
                return ErrorCode.UNKNOWN_MEMBER_ID
            if current != member_id:
                log.info(
                    "group=%s generation=%d member=%s fenced: instance %s now belongs to %s",
                    self.group_id,
                    self.generation_id,
                    member_id,
                    instance_id,
                    current,
                )
                return ErrorCode.FENCED_INSTANCE_ID
            return None
        if member_id not in self.members:
            return ErrorCode.UNKNOWN_MEMBER_ID
        return None

    # ---------------------------------------------------------------------------------------------- offsets

    def validate_offset_commit(self, req: OffsetCommitRequest) -> ErrorCode | None:
        """Kafka ``ClassicGroup.validateOffsetCommit`` (non-transactional): the error a commit gets, or ``None``.
        A commit without generation is a simple (admin / manually assigned) one, taken only by an Empty group; a
        member's commit needs the member (:meth:`validate_member`) and the current generation, and is refused
        with REBALANCE_IN_PROGRESS in CompletingRebalance (the member must sync first)."""
        state = self.state
        if state is GroupState.DEAD:
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        if req.generation_id < 0 and state is GroupState.EMPTY:
            return None
        if req.generation_id >= 0 or req.member_id != "" or req.group_instance_id is not None:
            error = self.validate_member(req.member_id, req.group_instance_id)
            if error is not None:
                return error
            if req.generation_id != self.generation_id:
                return ErrorCode.ILLEGAL_GENERATION
        elif state is not GroupState.EMPTY:
            return ErrorCode.UNKNOWN_MEMBER_ID  # only members may commit to a non-empty group
        if state is GroupState.COMPLETING_REBALANCE:
            return ErrorCode.REBALANCE_IN_PROGRESS
        return None

    def validate_offset_fetch(self, req: OffsetFetchRequest) -> ErrorCode | None:
        """Kafka ``ClassicGroup.validateOffsetFetch``: a Dead group is GROUP_ID_NOT_FOUND (its partitions come
        back unknown); any other fetches (the classic protocol sends no member or generation with it)."""
        return ErrorCode.GROUP_ID_NOT_FOUND if self.state is GroupState.DEAD else None

    def has_all_members_joined(self) -> bool:
        return len(self.members) == self.num_awaiting_join and not self.pending_members

    def rebalance_timeout_ms(self) -> int:
        """Max over members' rebalance timeouts (0 for no members)."""
        timeout = 0
        for member in self.members.values():
            if member.rebalance_timeout_ms > timeout:
                timeout = member.rebalance_timeout_ms
        return timeout

    def maybe_elect_new_joined_leader(self) -> bool:
        """Kafka ``maybeElectNewJoinedLeader``: keep a leader that rejoined, else pick the oldest member that
        rejoined; ``False`` if there is no leader or nobody rejoined."""
        if self.leader_id is None:
            return False
        leader = self.members[self.leader_id]
        if leader.awaiting_join:
            return True
        for member_id, member in self.members.items():
            if member.awaiting_join:
                self.leader_id = member_id
                return True
        return False

    # ---------------------------------------------------------------------------------------------- protocols

    # ``supported_protocols`` counts *members* per protocol name: a member that lists a name twice counts once.
    # Deviation: Kafka 3.7 ``GroupMetadata.incSupportedProtocols`` counts list entries, while its checks
    # (``supportsProtocols`` with ``MemberMetadata.plainProtocolSet``, ``candidateProtocols``) compare the count
    # with the number of members. There, one JoinGroup that lists a name twice makes every later member fail with
    # INCONSISTENT_GROUP_PROTOCOL, and ``selectProtocol`` throws inside the DelayedJoin (the generation is already
    # bumped), leaving the group in PreparingRebalance with no join operation. Kafka answers the duplicate
    # JoinGroup itself normally (nothing rejects it), so we do too, and count what the checks assume.

    def _inc_protocols(self, member: Member) -> None:
        counts = self.supported_protocols
        for name in member.protocol_names():
            counts[name] = counts.get(name, 0) + 1

    def _dec_protocols(self, member: Member) -> None:
        counts = self.supported_protocols
        for name in member.protocol_names():
            left = counts.get(name, 0) - 1
            if left > 0:
                counts[name] = left
            else:
                counts.pop(name, None)

    def supports_protocols(self, protocol_type: str, protocols: list[tuple[str, bytes]]) -> bool:
        """Kafka ``supportsProtocols``: an Empty group takes any non-empty type with at least one protocol;
        otherwise the type must match and one offered protocol must be supported by every current member."""
        if self.state is GroupState.EMPTY:
            return bool(protocol_type) and bool(protocols)
        if self.protocol_type != protocol_type:
            return False
        n = len(self.members)
        counts = self.supported_protocols
        return any(counts.get(name, 0) == n for name, _ in protocols)

    def select_protocol(self) -> str:
        """Kafka ``selectProtocol``: every member votes for its most preferred protocol among those all members
        support; most votes wins.

        UNVERIFIED in Kafka (tie order of a Scala hash-map ``groupBy``/``maxBy``). Our deterministic tie-break:
        among protocols with the most votes, the one whose first vote came from the oldest member (join order)
        wins -- usually the leader's preference. It does not depend on protocol names or hashing.
        """
        if not self.members:
            raise RuntimeError(f"cannot select a protocol for empty group {self.group_id}")
        n = len(self.members)
        candidates = {name for name, count in self.supported_protocols.items() if count == n}
        votes: dict[str, int] = {}
        for member in self.members.values():
            choice = member.vote(candidates)
            votes[choice] = votes.get(choice, 0) + 1
        best, best_votes = "", -1
        for name, count in votes.items():  # insertion order = order of first vote
            if count > best_votes:
                best, best_votes = name, count
        return best
