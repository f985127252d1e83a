# pyright: strict
"""The classic GroupCoordinator as a pure state machine.

Semantics follow Kafka 3.7's Scala ``GroupCoordinator`` (spec PART 2); names of private methods mirror Kafka's
(``_prepare_rebalance`` = ``prepareRebalance``, ``_on_complete_join`` = ``onCompleteJoin`` ...) so the two can
be read side by side. Committed offsets (:class:`~coordinator.core.group.offsets.OffsetManager`, which asks the
group to validate a commit or fetch), the admin requests (:mod:`~coordinator.core.group.admin`) and loading from
the group log (:mod:`~coordinator.core.group.loading`) live in modules of their own; the machine delegates to
them. Kafka's purgatories become timers:

* ``DelayedHeartbeat`` -> ``("heartbeat", group, member)`` (one per member; re-armed on every liveness signal);
* pending-member expiry -> ``("pending", group, member)``;
* ``DelayedJoin`` / ``InitialDelayedJoin`` -> ``("join", group)``; the early completion of a DelayedJoin
  (``tryComplete``) is the check :meth:`GroupCoordinator._check_join`, made wherever Kafka calls
  ``checkAndComplete(GroupJoinKey)``;
* ``DelayedSync`` -> ``("sync", group, generation)``, cancelled as soon as every member has sent SyncGroup.

Deviations from Kafka (each also noted where it happens):

* A parked JoinGroup/SyncGroup that a newer request of the same member replaces is answered with
  REBALANCE_IN_PROGRESS (Kafka silently drops the old callback; the client has long given up on that request),
  and a member removed while its SyncGroup is parked gets UNKNOWN_MEMBER_ID (Kafka never answers it). Both keep
  the shell from holding tokens that are never answered.
* Single-broker mode: store writes never fail (see :class:`~coordinator.core.group.api.Persist`). Replicated mode
  (:meth:`GroupCoordinator.own_by_partition`) writes commits and SyncGroup's group record in two phases
  (:meth:`GroupCoordinator.persisted`, with Kafka's error paths); the other group records (the static-member
  replacement, an Empty group after a join phase, tombstones, a reset) are fire-and-forget there: Kafka 3.7
  reverts a static replacement whose write fails, we do not (the shell logs the failure).
* Offsets never expire (no ``offsets.retention.minutes``); DeleteGroups is the only way to Dead besides unloading.
* Single-broker mode: one coordinator owns every group it is given and loading is all-or-nothing
  (``begin_loading()`` / ``finish_loading(now_ms)``); NOT_COORDINATOR is the shell's business. Replicated mode
  owns, loads and unloads per ``__consumer_offsets`` partition (``begin_loading(p)``, ``load``,
  ``finish_loading(now_ms, p)``, ``unload(p, now_ms)``: Kafka 3.7 ``GroupMetadataManager`` owned / loading
  partitions, ``onElection`` / ``onResignation``; see :mod:`~coordinator.core.group.ownership`) and answers
  COORDINATOR_LOAD_IN_PROGRESS / NOT_COORDINATOR itself. COORDINATOR_NOT_AVAILABLE (inactive broker) stays the
  shell's.
* Transactional offset commits (TxnOffsetCommit) are not served, so ``require_stable`` never yields
  UNSTABLE_OFFSET_COMMIT.
* A member that lists a protocol name twice counts once towards that protocol's support (see
  :class:`~coordinator.core.group.group.Group`): Kafka counts entries, which wedges the group.
* :meth:`GroupCoordinator.reset_group` recovers a group after an internal error; Kafka has no such path.

Decisions where the spec says UNVERIFIED or Kafka is arbitrary:

* Kafka 4.x's Java classic-group code was not compared (spec PART 2 intro); we follow 3.7, the verified source.
* Protocol-vote ties (Kafka: hash-map order) go to the protocol whose first vote came from the oldest member,
  see :meth:`~coordinator.core.group.group.Group.select_protocol`: deterministic, independent of protocol names.
* "Any member" choices (new leader after the leader leaves; re-elected leader when the leader does not rejoin)
  take the oldest member in join order, where Kafka iterates a hash map. A replaced static member keeps its place.
* ``offset.metadata.max.bytes`` is compared with Java ``String.length()`` (UTF-16 code units), as Kafka does,
  not with the UTF-8 byte length.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable
from typing import Any

from coordinator.core.group import admin
from coordinator.core.group.api import (
    EMIT_GROUP_STATE,
    EMIT_HEARTBEAT_ERROR,
    EMIT_MEMBER_ADDED,
    EMIT_MEMBER_REMOVED,
    EMIT_REBALANCE_BEGIN,
    EMIT_REBALANCE_END,
    REMOVED_EXPIRED,
    REMOVED_FENCED,
    REMOVED_JOIN_TIMEOUT,
    REMOVED_LEAVE,
    REMOVED_RESET,
    REMOVED_SYNC_TIMEOUT,
    TIMER_HEARTBEAT,
    TIMER_JOIN,
    TIMER_PENDING,
    TIMER_SYNC,
    CancelTimer,
    DeleteGroupsRequest,
    DescribeGroupsRequest,
    DescribeGroupsResponse,
    Effect,
    Emit,
    GroupState,
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupMember,
    JoinGroupRequest,
    JoinGroupResponse,
    LeaveGroupMemberResult,
    LeaveGroupRequest,
    LeaveGroupResponse,
    ListGroupsRequest,
    ListGroupsResponse,
    OffsetCommitRequest,
    OffsetFetchRequest,
    OffsetFetchResponse,
    Persist,
    Respond,
    SetTimer,
    SyncGroupRequest,
    SyncGroupResponse,
    TimerKey,
)
from coordinator.core.group.config import GroupConfig
from coordinator.core.group.durability import LocalDurability, ReplicatedDurability
from coordinator.core.group.errors import ErrorCode
from coordinator.core.group.group import Group
from coordinator.core.group.loading import group_record, load_record
from coordinator.core.group.member import Member
from coordinator.core.group.offsets import OffsetManager
from coordinator.core.group.ownership import group_write_error
from coordinator.core.group.records import Record

__all__ = ["GroupCoordinator", "REMOVED_GROUP_MAX_SIZE"]

log = logging.getLogger("coordinator.group")

#: ``member_removed`` reason when a JoinGroup is refused with GROUP_MAX_SIZE_REACHED and Kafka drops the member
#: (only possible when ``group.max.size`` was lowered below the current size).
REMOVED_GROUP_MAX_SIZE = "group_max_size"

_EMPTY = GroupState.EMPTY
_PREPARING = GroupState.PREPARING_REBALANCE
_COMPLETING = GroupState.COMPLETING_REBALANCE
_STABLE = GroupState.STABLE
_DEAD = GroupState.DEAD


#: Heartbeat answers carry nothing but the error, so they are shared (treat responses as read-only).
_HEARTBEAT_RESPONSES = {code: HeartbeatResponse(code) for code in ErrorCode}


class GroupCoordinator:
    """Kafka's classic group coordinator, without IO, threads or clocks.

    Every request method takes ``now_ms`` (coordinator time, monotonic, in ms) and, for requests that may be
    answered later, the shell's opaque ``token``; it returns the list of effects to apply in order (see
    :mod:`coordinator.core.group.api`). Read-only requests (OffsetFetch, DescribeGroups, ListGroups) return their
    response directly.

    ``new_uuid`` produces the random part of member ids (``<client_id or instance id>-<uuid>``); inject a counter
    for deterministic tests. ``emit_events=False`` suppresses :class:`~coordinator.core.group.api.Emit` effects (for
    simulations that do not record a history). ``offsets`` is where committed offsets are kept (by default a
    manager of its own; a second group type's machine may share one).

    The machine is not thread-safe; the shell calls it from one thread / event loop.
    """

    def __init__(
        self,
        config: GroupConfig | None = None,
        *,
        new_uuid: Callable[[], str] | None = None,
        emit_events: bool = True,
        offsets: OffsetManager | None = None,
    ) -> None:
        self.config = config if config is not None else GroupConfig()
        self._new_uuid: Callable[[], str] = new_uuid if new_uuid is not None else (lambda: str(uuid.uuid4()))
        self._emit_events = emit_events
        self._groups: dict[str, Group] = {}
        #: The committed offsets of every group this machine holds.
        self.offsets = (
            offsets
            if offsets is not None
            else OffsetManager(
                max_metadata_bytes=self.config.offset_metadata_max_bytes, emit_events=emit_events
            )
        )
        #: How groups and offsets are written and loaded, and which groups this machine serves (single broker:
        #: all, loaded at once, written synchronously; replicated mode, after :meth:`own_by_partition`: per
        #: offsets partition, written in two phases). See :mod:`~coordinator.core.group.durability`.
        self._durability: LocalDurability | ReplicatedDurability = LocalDurability(self._groups, self.offsets)

    # ============================================================================================ inspection

    @property
    def loading(self) -> bool:
        """True between :meth:`begin_loading` and :meth:`finish_loading` (replicated mode: while any offsets
        partition loads)."""
        return self._durability.own.any_loading

    @property
    def replicated(self) -> bool:
        """True once :meth:`own_by_partition` switched the machine to replicated mode."""
        return self._durability.replicated

    def own_by_partition(self, offsets_partitions: int) -> None:
        """Switch to replicated mode, before any group exists: the machine owns only the offsets
        partitions loaded with ``begin_loading(p)`` ... ``finish_loading(now_ms, p)`` (of ``offsets_partitions``)
        and persists commits and SyncGroup's group record in two phases (:class:`~coordinator.core.group.api.Persist`
        with a ``write`` id, then :meth:`persisted`). Raises ``ValueError`` if groups exist or it is on already."""
        if self.replicated or self._groups or self.loading:
            raise ValueError("replicated mode must be chosen before anything is loaded")
        self._durability = ReplicatedDurability(offsets_partitions, self._groups, self.offsets)

    def partition_for(self, group_id: str) -> int | None:
        """The offsets partition of ``group_id`` in replicated mode; None in single-broker mode."""
        return self._durability.own.partition_for(group_id)

    def partition_status(self, partition: int) -> str:
        """``"owned"``, ``"loading"`` or ``"not_owned"`` (replicated mode; single-broker mode: ``"owned"``, or
        ``"loading"`` while loading)."""
        return self._durability.own.partition_status(partition)

    def _status(self, group_id: str) -> ErrorCode | None:
        """Kafka 3.7 ``validateGroupStatus`` after the group id check: COORDINATOR_LOAD_IN_PROGRESS (the group's
        partition loads), NOT_COORDINATOR (replicated mode: not owned), None (served)."""
        return self._durability.own.status(group_id)

    def group(self, group_id: str) -> Group | None:
        """The live group object, for inspection by tests and simulators. Do not mutate it."""
        return self._groups.get(group_id)

    def group_ids(self) -> list[str]:
        return list(self._groups)

    # ============================================================================================ JoinGroup

    def join_group(self, now_ms: int, token: Any, req: JoinGroupRequest) -> list[Effect]:
        """Handle a JoinGroup (``handleJoinGroup``). The answer may come in this call or in a later one."""
        out: list[Effect] = []
        group_id = req.group_id
        member_id = req.member_id
        if not group_id:
            self._respond_join_error(out, token, member_id, ErrorCode.INVALID_GROUP_ID)
            return out
        status = self._status(group_id)
        if status is not None:
            self._respond_join_error(out, token, member_id, status)
            return out
        cfg = self.config
        session = req.session_timeout_ms
        if session < cfg.min_session_timeout_ms or session > cfg.max_session_timeout_ms:
            self._respond_join_error(out, token, member_id, ErrorCode.INVALID_SESSION_TIMEOUT)
            return out
        # JoinGroup v0 has no rebalance timeout: Kafka uses the session timeout (maybeOverrideRebalanceTimeout).
        # We also treat a negative value (the dataclass default, "not sent") that way.
        rebalance = req.rebalance_timeout_ms
        if req.api_version == 0 or rebalance < 0:
            rebalance = session
        protocols = [(name, bytes(meta)) for name, meta in req.protocols]
        is_unknown = member_id == ""

        group = self._groups.get(group_id)
        if group is None:
            # A group is created only by a JoinGroup without member id (getOrMaybeCreateGroup).
            if not is_unknown:
                self._respond_join_error(out, token, member_id, ErrorCode.UNKNOWN_MEMBER_ID)
                return out
            group = Group(group_id, _EMPTY, now_ms)
            self._groups[group_id] = group
            log.info("group=%s generation=0 created by a JoinGroup from client %s", group_id, req.client_id)

        if not self._accept_joining_member(group, member_id):
            self._drop_for_max_size(group, member_id, out)
            self._respond_join_error(out, token, "", ErrorCode.GROUP_MAX_SIZE_REACHED)
        elif is_unknown:
            self._do_new_member_join(now_ms, token, group, req, protocols, rebalance, out)
        else:
            self._do_current_member_join(now_ms, token, group, req, protocols, rebalance, out)

        # Kafka re-checks the join barrier after every JoinGroup.
        if group.state is _PREPARING:
            self._check_join(group, now_ms, out)
        return out

    def _accept_joining_member(self, group: Group, member_id: str) -> bool:
        """Kafka ``acceptJoiningMember`` (group.max.size)."""
        state = group.state
        max_size = self.config.max_size
        if state is _EMPTY or state is _DEAD:
            return True
        if state is _PREPARING:
            member = group.members.get(member_id)
            return (member is not None and member.awaiting_join) or group.num_awaiting_join < max_size
        return member_id in group.members or len(group.members) < max_size

    def _drop_for_max_size(self, group: Group, member_id: str, out: list[Effect]) -> None:
        # Kafka: ``group.remove(memberId)`` and nothing else (no rebalance; a member dropped here never has a
        # parked request: in PreparingRebalance it is not awaiting join, in the other states it is not known).
        if member_id in group.pending_members:
            out.append(CancelTimer((TIMER_PENDING, group.group_id, member_id)))
        member = group.remove(member_id)
        if member is not None:
            self._cancel_heartbeat(member, out)
            self._emit_removed(out, group, member, REMOVED_GROUP_MAX_SIZE)
            log.info(
                "group=%s generation=%d member=%s removed: group.max.size %d reached",
                group.group_id,
                group.generation_id,
                member_id,
                self.config.max_size,
            )

    def _do_new_member_join(
        self,
        now_ms: int,
        token: Any,
        group: Group,
        req: JoinGroupRequest,
        protocols: list[tuple[str, bytes]],
        rebalance: int,
        out: list[Effect],
    ) -> None:
        if group.state is _DEAD:
            self._respond_join_error(out, token, "", ErrorCode.COORDINATOR_NOT_AVAILABLE)
            return
        if not group.supports_protocols(req.protocol_type, protocols):
            self._respond_join_error(out, token, "", ErrorCode.INCONSISTENT_GROUP_PROTOCOL)
            return
        instance_id = req.group_instance_id
        prefix = instance_id if instance_id is not None else req.client_id
        new_member_id = f"{prefix}-{self._new_uuid()}"
        if instance_id is not None:
            old_member_id = group.static_members.get(instance_id)
            if old_member_id is not None:
                log.info(
                    "group=%s generation=%d member=%s static instance %s rejoins in %s, replacing member %s",
                    group.group_id,
                    group.generation_id,
                    new_member_id,
                    instance_id,
                    group.state,
                    old_member_id,
                )
                self._update_static_member_and_rebalance(
                    now_ms, token, group, req, protocols, rebalance, old_member_id, new_member_id, out
                )
            else:
                self._add_member_and_rebalance(
                    now_ms, token, group, req, protocols, rebalance, new_member_id, out
                )
        elif req.api_version >= 4:
            # KIP-394: the member must come back with this id; until then it is pending and blocks the barrier.
            deadline = now_ms + req.session_timeout_ms
            group.pending_members[new_member_id] = deadline
            out.append(SetTimer((TIMER_PENDING, group.group_id, new_member_id), deadline))
            log.info(
                "group=%s generation=%d member=%s pending: MEMBER_ID_REQUIRED (state %s)",
                group.group_id,
                group.generation_id,
                new_member_id,
                group.state,
            )
            self._respond_join_error(out, token, new_member_id, ErrorCode.MEMBER_ID_REQUIRED)
        else:
            self._add_member_and_rebalance(
                now_ms, token, group, req, protocols, rebalance, new_member_id, out
            )

    def _do_current_member_join(
        self,
        now_ms: int,
        token: Any,
        group: Group,
        req: JoinGroupRequest,
        protocols: list[tuple[str, bytes]],
        rebalance: int,
        out: list[Effect],
    ) -> None:
        member_id = req.member_id
        if group.state is _DEAD:
            self._respond_join_error(out, token, member_id, ErrorCode.COORDINATOR_NOT_AVAILABLE)
            return
        if not group.supports_protocols(req.protocol_type, protocols):
            self._respond_join_error(out, token, member_id, ErrorCode.INCONSISTENT_GROUP_PROTOCOL)
            return
        if member_id in group.pending_members:
            if req.group_instance_id is not None:
                # Kafka throws IllegalStateException here (the request fails with UNKNOWN_SERVER_ERROR).
                log.error(
                    "group=%s generation=%d member=%s pending member sent instance id %s",
                    group.group_id,
                    group.generation_id,
                    member_id,
                    req.group_instance_id,
                )
                self._respond_join_error(out, token, member_id, ErrorCode.UNKNOWN_SERVER_ERROR)
                return
            out.append(CancelTimer((TIMER_PENDING, group.group_id, member_id)))
            self._add_member_and_rebalance(now_ms, token, group, req, protocols, rebalance, member_id, out)
            return
        error = group.validate_member(member_id, req.group_instance_id)
        if error is not None:
            self._respond_join_error(out, token, member_id, error)
            return
        member = group.members[member_id]
        state = group.state
        if state is _PREPARING:
            self._update_member_and_rebalance(now_ms, token, group, member, req, protocols, rebalance, out)
        elif state is _COMPLETING:
            if member.matches(protocols):
                # Same metadata: probably a lost JoinGroup response; answer with the current generation.
                self._respond_current_generation(out, token, group, member, group.is_leader(member_id))
            else:
                self._update_member_and_rebalance(
                    now_ms, token, group, member, req, protocols, rebalance, out
                )
        elif state is _STABLE:
            if group.is_leader(member_id) or not member.matches(protocols):
                # The leader's JoinGroup always rebalances (it may have seen metadata changes).
                self._update_member_and_rebalance(
                    now_ms, token, group, member, req, protocols, rebalance, out
                )
            else:
                self._respond_current_generation(out, token, group, member, False)
        else:
            log.warning(
                "group=%s generation=%d member=%s rejoins in unexpected state %s",
                group.group_id,
                group.generation_id,
                member_id,
                state,
            )
            self._respond_join_error(out, token, member_id, ErrorCode.UNKNOWN_MEMBER_ID)

    def _add_member_and_rebalance(
        self,
        now_ms: int,
        token: Any,
        group: Group,
        req: JoinGroupRequest,
        protocols: list[tuple[str, bytes]],
        rebalance: int,
        member_id: str,
        out: list[Effect],
    ) -> None:
        member = Member(
            group.group_id,
            member_id,
            req.group_instance_id,
            req.client_id,
            req.client_host,
            rebalance,
            req.session_timeout_ms,
            req.protocol_type,
            protocols,
        )
        member.is_new = True
        if group.state is _PREPARING and group.generation_id == 0:
            group.new_member_added = True
        member.awaiting_join = True
        member.join_token = token
        group.add(member)
        if self._emit_events:
            out.append(
                Emit(
                    EMIT_MEMBER_ADDED,
                    {
                        "group": group.group_id,
                        "generation": group.generation_id,
                        "member": member_id,
                        "instance_id": member.group_instance_id,
                        "client_id": member.client_id,
                        "client_host": member.client_host,
                    },
                )
            )
        log.info(
            "group=%s generation=%d member=%s added (instance %s, client %s) in %s",
            group.group_id,
            group.generation_id,
            member_id,
            member.group_instance_id,
            member.client_id,
            group.state,
        )
        # A new member cannot heartbeat before its first join completes: it gets the new-member join timeout.
        self._schedule_heartbeat(member, now_ms, out, self.config.new_member_join_timeout_ms)
        self._maybe_prepare_rebalance(group, now_ms, out, f"adding new member {member_id}")

    def _update_member_and_rebalance(
        self,
        now_ms: int,
        token: Any,
        group: Group,
        member: Member,
        req: JoinGroupRequest,
        protocols: list[tuple[str, bytes]],
        rebalance: int,
        out: list[Effect],
    ) -> None:
        group.update_member(member, protocols, rebalance, req.session_timeout_ms)
        self._park_join(group, member, token, out)
        self._maybe_prepare_rebalance(
            group, now_ms, out, f"member {member.member_id} rejoins in {group.state}"
        )

    def _update_static_member_and_rebalance(
        self,
        now_ms: int,
        token: Any,
        group: Group,
        req: JoinGroupRequest,
        protocols: list[tuple[str, bytes]],
        rebalance: int,
        old_member_id: str,
        new_member_id: str,
        out: list[Effect],
    ) -> None:
        """KIP-345 replacement of a known static member that joined with an empty member id."""
        instance_id = req.group_instance_id
        assert instance_id is not None
        current_leader = group.leader_id
        member = group.members[old_member_id]
        # Fence the old incarnation's parked requests (Kafka ``replaceStaticMember``).
        parked, old_token = group.take_join(member)
        if parked:
            out.append(
                Respond(old_token, JoinGroupResponse(ErrorCode.FENCED_INSTANCE_ID, member_id=old_member_id))
            )
        if member.awaiting_sync:
            self._answer_sync(out, member, SyncGroupResponse(ErrorCode.FENCED_INSTANCE_ID))
        self._cancel_heartbeat(member, out)
        self._emit_removed(out, group, member, REMOVED_FENCED)
        group.replace_static_member(instance_id, old_member_id, new_member_id)
        if self._emit_events:
            out.append(
                Emit(
                    EMIT_MEMBER_ADDED,
                    {
                        "group": group.group_id,
                        "generation": group.generation_id,
                        "member": new_member_id,
                        "instance_id": instance_id,
                        "client_id": member.client_id,
                        "client_host": member.client_host,
                        "replaces": old_member_id,
                    },
                )
            )
        # Kafka reschedules with the member's *old* session timeout, before updateMember.
        self._schedule_heartbeat(member, now_ms, out)
        group.update_member(member, protocols, rebalance, req.session_timeout_ms)
        self._park_join(group, member, token, out)

        state = group.state
        if state is _STABLE:
            if group.protocol_name == group.select_protocol():
                # No rebalance: persist the new member id with the current assignments and answer with the
                # current generation. The member then gets its previous assignment from SyncGroup.
                self._persist_group(group, now_ms, out)
                _, join_token = group.take_join(member)
                if req.api_version >= 9:
                    # KIP-814: a static leader resumes leadership without running the assignor.
                    is_leader = group.is_leader(new_member_id)
                    response = JoinGroupResponse(
                        ErrorCode.NONE,
                        member_id=new_member_id,
                        generation_id=group.generation_id,
                        protocol_type=group.protocol_type,
                        protocol_name=group.protocol_name,
                        leader=group.leader_id or "",
                        skip_assignment=is_leader,
                        members=self._member_list(group) if is_leader else [],
                    )
                else:
                    # Before v9: the *old* leader id, so that a replaced leader does not run a useless assignment.
                    response = JoinGroupResponse(
                        ErrorCode.NONE,
                        member_id=new_member_id,
                        generation_id=group.generation_id,
                        protocol_type=group.protocol_type,
                        protocol_name=group.protocol_name,
                        leader=current_leader or "",
                    )
                out.append(Respond(join_token, response))
                log.info(
                    "group=%s generation=%d member=%s static instance %s replaced without rebalance",
                    group.group_id,
                    group.generation_id,
                    new_member_id,
                    instance_id,
                )
            else:
                self._maybe_prepare_rebalance(
                    group, now_ms, out, f"static member {instance_id} rejoined with a protocol change"
                )
        elif state is _COMPLETING:
            # The leader may already hold assignments keyed by the old member id: always rebalance.
            self._prepare_rebalance(group, now_ms, out, f"static member {instance_id} replaced during sync")
        elif state is _PREPARING:
            pass  # takes part in the ongoing rebalance
        else:
            raise RuntimeError(f"group {group.group_id}: static member {instance_id} known in state {state}")

    def _park_join(self, group: Group, member: Member, token: Any, out: list[Effect]) -> None:
        superseded, old_token = group.park_join(member, token)
        if superseded:
            # Deviation: Kafka drops the superseded callback unanswered; we answer it so no token leaks.
            out.append(
                Respond(
                    old_token, JoinGroupResponse(ErrorCode.REBALANCE_IN_PROGRESS, member_id=member.member_id)
                )
            )

    def _respond_join_error(self, out: list[Effect], token: Any, member_id: str, error: ErrorCode) -> None:
        out.append(Respond(token, JoinGroupResponse(error, member_id=member_id)))

    def _respond_current_generation(
        self, out: list[Effect], token: Any, group: Group, member: Member, with_members: bool
    ) -> None:
        out.append(
            Respond(
                token,
                JoinGroupResponse(
                    ErrorCode.NONE,
                    member_id=member.member_id,
                    generation_id=group.generation_id,
                    protocol_type=group.protocol_type,
                    protocol_name=group.protocol_name,
                    leader=group.leader_id or "",
                    members=self._member_list(group) if with_members else [],
                ),
            )
        )

    def _member_list(self, group: Group) -> list[JoinGroupMember]:
        """The leader's member list: ``(member id, instance id, metadata of the selected protocol)``."""
        protocol = group.protocol_name
        assert protocol is not None
        return [
            JoinGroupMember(m.member_id, m.group_instance_id, m.metadata(protocol))
            for m in group.members.values()
        ]

    # ============================================================================================ rebalance

    def _maybe_prepare_rebalance(self, group: Group, now_ms: int, out: list[Effect], reason: str) -> None:
        if group.can_rebalance():
            self._prepare_rebalance(group, now_ms, out, reason)

    def _prepare_rebalance(self, group: Group, now_ms: int, out: list[Effect], reason: str) -> None:
        """Kafka ``prepareRebalance``: cancel parked syncs, cancel the sync timeout, arm the join barrier."""
        if group.state is _COMPLETING:
            self._reset_and_propagate_assignment_error(group, now_ms, out, ErrorCode.REBALANCE_IN_PROGRESS)
        self._remove_sync_expiration(group, out)
        from_empty = group.state is _EMPTY
        self._transition(group, _PREPARING, now_ms, out)
        log.info(
            "group=%s generation=%d preparing to rebalance (%s)", group.group_id, group.generation_id, reason
        )
        if self._emit_events:
            out.append(
                Emit(
                    EMIT_REBALANCE_BEGIN,
                    {
                        "group": group.group_id,
                        "generation": group.generation_id,
                        "members": len(group.members),
                        "reason": reason,
                    },
                )
            )
        if from_empty:
            # InitialDelayedJoin: never completes early; may be extended while new members keep arriving.
            delay = self.config.initial_rebalance_delay_ms
            group.join_initial = True
            group.join_delay_ms = delay
            group.join_remaining_ms = max(group.rebalance_timeout_ms() - delay, 0)
        else:
            group.join_initial = False
            delay = group.rebalance_timeout_ms()
            if group.has_all_members_joined():  # tryCompleteElseWatch completes at once
                group.join_deadline_ms = None
                self._on_complete_join(group, now_ms, out)
                return
        group.join_deadline_ms = now_ms + delay
        out.append(SetTimer(group.join_key, group.join_deadline_ms))

    def _check_join(self, group: Group, now_ms: int, out: list[Effect]) -> None:
        """``checkAndComplete(GroupJoinKey)``: complete a (non-initial) DelayedJoin once everyone has joined."""
        if (
            group.state is _PREPARING
            and group.join_deadline_ms is not None
            and not group.join_initial
            and group.has_all_members_joined()
        ):
            group.join_deadline_ms = None
            out.append(CancelTimer(group.join_key))
            self._on_complete_join(group, now_ms, out)

    def _on_complete_join(self, group: Group, now_ms: int, out: list[Effect]) -> None:
        """Kafka ``onCompleteJoin``: drop dynamic laggards, elect a leader, start the next generation."""
        laggards = [m for m in group.members.values() if not m.awaiting_join and not m.is_static]
        for member in laggards:
            group.remove(member.member_id)
            self._cancel_heartbeat(member, out)
            self._emit_removed(out, group, member, REMOVED_JOIN_TIMEOUT)
        if laggards:
            log.info(
                "group=%s generation=%d removed %d dynamic members that did not rejoin: %s",
                group.group_id,
                group.generation_id,
                len(laggards),
                [m.member_id for m in laggards[:10]],
            )
        if group.state is _DEAD:
            return
        if not group.maybe_elect_new_joined_leader() and group.members:
            # Only static members left and none rejoined: wait another rebalance timeout; their sessions will
            # remove them.
            log.error(
                "group=%s generation=%d could not complete rebalance because no members rejoined",
                group.group_id,
                group.generation_id,
            )
            group.join_initial = False
            group.join_deadline_ms = now_ms + group.rebalance_timeout_ms()
            out.append(SetTimer(group.join_key, group.join_deadline_ms))
            return

        # initNextGeneration
        group.generation_id += 1
        group.pending_sync.clear()
        if not group.members:
            group.protocol_name = None
            self._transition(group, _EMPTY, now_ms, out)
            log.info("group=%s generation=%d is now empty", group.group_id, group.generation_id)
            self._persist_group(group, now_ms, out)
            self._emit_rebalance_end(group, out)
            return
        group.protocol_name = group.select_protocol()
        self._transition(group, _COMPLETING, now_ms, out)
        log.info(
            "group=%s generation=%d stabilized with %d members, leader %s, protocol %s",
            group.group_id,
            group.generation_id,
            len(group.members),
            group.leader_id,
            group.protocol_name,
        )
        leader_id = group.leader_id or ""
        leader_members = self._member_list(group)
        generation = group.generation_id
        for member in group.members.values():
            parked, token = group.take_join(member)
            if parked:
                is_leader = member.member_id == leader_id
                out.append(
                    Respond(
                        token,
                        JoinGroupResponse(
                            ErrorCode.NONE,
                            member_id=member.member_id,
                            generation_id=generation,
                            protocol_type=group.protocol_type,
                            protocol_name=group.protocol_name,
                            leader=leader_id,
                            members=leader_members if is_leader else [],
                        ),
                    )
                )
            self._schedule_heartbeat(member, now_ms, out)
            member.is_new = False
            group.pending_sync[member.member_id] = None
        # DelayedSync (KAFKA-12890): members that never send SyncGroup are removed after the rebalance timeout.
        group.sync_generation = generation
        group.sync_deadline_ms = now_ms + group.rebalance_timeout_ms()
        out.append(SetTimer((TIMER_SYNC, group.group_id, generation), group.sync_deadline_ms))

    def _reset_and_propagate_assignment_error(
        self, group: Group, now_ms: int, out: list[Effect], error: ErrorCode
    ) -> None:
        """Answer every parked SyncGroup with ``error`` and clear assignments (Kafka
        ``resetAndPropagateAssignmentError``)."""
        for member in group.members.values():
            member.assignment = b""
            if member.awaiting_sync:
                self._answer_sync(out, member, SyncGroupResponse(error))
                self._schedule_heartbeat(member, now_ms, out)

    def _remove_sync_expiration(self, group: Group, out: list[Effect]) -> None:
        group.pending_sync.clear()
        self._cancel_sync_timer(group, out)

    def _cancel_sync_timer(self, group: Group, out: list[Effect]) -> None:
        if group.sync_deadline_ms is not None:
            group.sync_deadline_ms = None
            out.append(CancelTimer((TIMER_SYNC, group.group_id, group.sync_generation)))

    def _remove_pending_sync_member(self, group: Group, member_id: str, out: list[Effect]) -> None:
        group.pending_sync.pop(member_id, None)
        if not group.pending_sync:  # DelayedSync.tryComplete: everyone synced
            self._cancel_sync_timer(group, out)

    def _remove_member_and_update_group(
        self, group: Group, member: Member, now_ms: int, out: list[Effect], reason: str
    ) -> None:
        """Kafka ``removeMemberAndUpdateGroup``: answer a parked join, remove, then rebalance or re-check."""
        parked, token = group.take_join(member)
        if parked:
            out.append(Respond(token, JoinGroupResponse(ErrorCode.UNKNOWN_MEMBER_ID, member_id="")))
        if member.awaiting_sync:
            # Deviation: Kafka leaves this SyncGroup unanswered (the member is gone); we answer it.
            self._answer_sync(out, member, SyncGroupResponse(ErrorCode.UNKNOWN_MEMBER_ID))
        group.remove(member.member_id)
        self._emit_removed(out, group, member, reason)
        log.info(
            "group=%s generation=%d member=%s removed (%s) in %s",
            group.group_id,
            group.generation_id,
            member.member_id,
            reason,
            group.state,
        )
        state = group.state
        if state is _STABLE or state is _COMPLETING:
            self._maybe_prepare_rebalance(group, now_ms, out, f"member {member.member_id} removed ({reason})")
        elif state is _PREPARING:
            self._check_join(group, now_ms, out)

    # ============================================================================================ SyncGroup

    def sync_group(self, now_ms: int, token: Any, req: SyncGroupRequest) -> list[Effect]:
        """Handle a SyncGroup (``handleSyncGroup``). Followers' requests are parked until the leader's arrives."""
        out: list[Effect] = []
        if not req.group_id:
            out.append(Respond(token, SyncGroupResponse(ErrorCode.INVALID_GROUP_ID)))
            return out
        status = self._status(req.group_id)
        if status is ErrorCode.COORDINATOR_LOAD_IN_PROGRESS:
            # The rebalance state is lost: make the member rejoin (older clients do not expect error 14 here).
            out.append(Respond(token, SyncGroupResponse(ErrorCode.REBALANCE_IN_PROGRESS)))
            return out
        if status is not None:
            out.append(Respond(token, SyncGroupResponse(status)))
            return out
        group = self._groups.get(req.group_id)
        if group is None:
            out.append(Respond(token, SyncGroupResponse(ErrorCode.UNKNOWN_MEMBER_ID)))
            return out
        error = self._validate_sync_group(group, req)
        if error is not None:
            out.append(Respond(token, SyncGroupResponse(error)))
            return out
        state = group.state
        member_id = req.member_id
        if state is _EMPTY:
            out.append(Respond(token, SyncGroupResponse(ErrorCode.UNKNOWN_MEMBER_ID)))
        elif state is _PREPARING:
            out.append(Respond(token, SyncGroupResponse(ErrorCode.REBALANCE_IN_PROGRESS)))
        elif state is _COMPLETING:
            member = group.members[member_id]
            if member.awaiting_sync:
                # Deviation: Kafka overwrites the callback; we answer the superseded request.
                self._answer_sync(out, member, SyncGroupResponse(ErrorCode.REBALANCE_IN_PROGRESS))
            member.awaiting_sync = True
            member.sync_token = token
            self._remove_pending_sync_member(group, member_id, out)
            if group.is_leader(member_id):
                self._complete_sync(group, req, now_ms, out)
        else:  # Stable: answer with the stored assignment
            member = group.members[member_id]
            self._remove_pending_sync_member(group, member_id, out)
            out.append(
                Respond(
                    token,
                    SyncGroupResponse(
                        ErrorCode.NONE, member.assignment, group.protocol_type, group.protocol_name
                    ),
                )
            )
            self._schedule_heartbeat(member, now_ms, out)
        return out

    def _validate_sync_group(self, group: Group, req: SyncGroupRequest) -> ErrorCode | None:
        if group.state is _DEAD:
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        error = group.validate_member(req.member_id, req.group_instance_id)
        if error is not None:
            return error
        if req.generation_id != group.generation_id:
            return ErrorCode.ILLEGAL_GENERATION
        if req.protocol_type is not None and req.protocol_type != group.protocol_type:
            return ErrorCode.INCONSISTENT_GROUP_PROTOCOL
        if req.protocol_name is not None and req.protocol_name != group.protocol_name:
            return ErrorCode.INCONSISTENT_GROUP_PROTOCOL
        return None

    def _complete_sync(self, group: Group, req: SyncGroupRequest, now_ms: int, out: list[Effect]) -> None:
        """The leader's SyncGroup in CompletingRebalance: persist, hand out assignments, go Stable."""
        assignment = dict(req.assignments)
        missing = 0
        for member in group.members.values():
            data = assignment.get(member.member_id)
            if data is None:
                missing += 1
                member.assignment = b""
            else:
                member.assignment = bytes(data)
        if missing:
            log.warning(
                "group=%s generation=%d leader %s sent no assignment for %d members; they get empty ones",
                group.group_id,
                group.generation_id,
                req.member_id,
                missing,
            )
        log.info(
            "group=%s generation=%d member=%s assignment received from the leader for %d members",
            group.group_id,
            group.generation_id,
            req.member_id,
            len(group.members),
        )
        # storeGroup: written at once in single-broker mode (the state check Kafka makes in the write callback,
        # still CompletingRebalance of the same generation, holds), else persisted() moves the group on.
        if self._durability.write_sync_group(group, req.member_id, now_ms, out):
            self._set_and_propagate_assignment(group, now_ms, out)

    def _set_and_propagate_assignment(self, group: Group, now_ms: int, out: list[Effect]) -> None:
        """The group record is written: Stable, and every parked SyncGroup gets its assignment (Kafka
        ``setAndPropagateAssignment`` + ``transitionTo(Stable)``)."""
        self._transition(group, _STABLE, now_ms, out)
        self._emit_rebalance_end(group, out)
        protocol_type, protocol_name = group.protocol_type, group.protocol_name
        for member in group.members.values():
            if member.awaiting_sync:
                self._answer_sync(
                    out,
                    member,
                    SyncGroupResponse(ErrorCode.NONE, member.assignment, protocol_type, protocol_name),
                )
                self._schedule_heartbeat(member, now_ms, out)

    def _answer_sync(self, out: list[Effect], member: Member, response: SyncGroupResponse) -> None:
        token = member.sync_token
        member.awaiting_sync = False
        member.sync_token = None
        out.append(Respond(token, response))

    # ============================================================================================ Heartbeat

    def heartbeat(self, now_ms: int, token: Any, req: HeartbeatRequest) -> list[Effect]:
        """Handle a Heartbeat (``handleHeartbeat``); always answered in this call."""
        out: list[Effect] = []
        if not req.group_id:
            error = ErrorCode.INVALID_GROUP_ID
        elif (status := self._status(req.group_id)) is not None:
            # Answered blindly while loading (Kafka 3.7 handleHeartbeat); NOT_COORDINATOR as it is.
            error = ErrorCode.NONE if status is ErrorCode.COORDINATOR_LOAD_IN_PROGRESS else status
        else:
            group = self._groups.get(req.group_id)
            if group is None:
                error = ErrorCode.UNKNOWN_MEMBER_ID
            elif group.state is _DEAD:
                error = ErrorCode.COORDINATOR_NOT_AVAILABLE
            else:
                validation = group.validate_member(req.member_id, req.group_instance_id)
                if validation is not None:
                    error = validation
                elif req.generation_id != group.generation_id:
                    error = ErrorCode.ILLEGAL_GENERATION
                elif group.state is _EMPTY:
                    error = ErrorCode.UNKNOWN_MEMBER_ID
                else:
                    self._schedule_heartbeat(group.members[req.member_id], now_ms, out)
                    # PreparingRebalance: REBALANCE_IN_PROGRESS, but the session timer is reset all the same.
                    error = ErrorCode.REBALANCE_IN_PROGRESS if group.state is _PREPARING else ErrorCode.NONE
        if error is not ErrorCode.NONE and self._emit_events:
            out.append(
                Emit(
                    EMIT_HEARTBEAT_ERROR,
                    {
                        "group": req.group_id,
                        "generation": req.generation_id,
                        "member": req.member_id,
                        "error": error.name,
                    },
                )
            )
        out.append(Respond(token, _HEARTBEAT_RESPONSES[error]))
        return out

    def _schedule_heartbeat(
        self, member: Member, now_ms: int, out: list[Effect], timeout_ms: int = -1
    ) -> None:
        """``completeAndScheduleNextHeartbeatExpiration``: (re)arm the member's session timer."""
        deadline = now_ms + (member.session_timeout_ms if timeout_ms < 0 else timeout_ms)
        member.heartbeat_deadline_ms = deadline
        out.append(SetTimer(member.heartbeat_key, deadline))

    def _cancel_heartbeat(self, member: Member, out: list[Effect]) -> None:
        if member.heartbeat_deadline_ms >= 0:
            member.heartbeat_deadline_ms = -1
            out.append(CancelTimer(member.heartbeat_key))

    # ============================================================================================ LeaveGroup

    def leave_group(self, now_ms: int, token: Any, req: LeaveGroupRequest) -> list[Effect]:
        """Handle a LeaveGroup (batch form); always answered in this call."""
        out: list[Effect] = []
        if not req.group_id:
            out.append(Respond(token, LeaveGroupResponse(ErrorCode.INVALID_GROUP_ID)))
            return out
        status = self._status(req.group_id)
        if status is not None:
            out.append(Respond(token, LeaveGroupResponse(status)))
            return out
        group = self._groups.get(req.group_id)
        if group is None:
            results = [
                LeaveGroupMemberResult(mid, iid, ErrorCode.UNKNOWN_MEMBER_ID) for mid, iid in req.members
            ]
            out.append(Respond(token, LeaveGroupResponse(ErrorCode.NONE, results)))
            return out
        if group.state is _DEAD:
            out.append(Respond(token, LeaveGroupResponse(ErrorCode.COORDINATOR_NOT_AVAILABLE)))
            return out
        results: list[LeaveGroupMemberResult] = []
        for member_id, instance_id in req.members:
            if member_id == "":
                # Admin-style removal of a static member by instance id.
                current = group.static_members.get(instance_id) if instance_id is not None else None
                if current is None:
                    error = ErrorCode.UNKNOWN_MEMBER_ID
                else:
                    self._remove_current_member(group, group.members[current], now_ms, out, req.reason)
                    error = ErrorCode.NONE
            elif member_id in group.pending_members:
                group.remove(member_id)
                out.append(CancelTimer((TIMER_PENDING, group.group_id, member_id)))
                log.info(
                    "group=%s generation=%d member=%s pending member left",
                    group.group_id,
                    group.generation_id,
                    member_id,
                )
                if group.state is _PREPARING:
                    self._check_join(group, now_ms, out)
                error = ErrorCode.NONE
            else:
                validation = group.validate_member(member_id, instance_id)
                if validation is None:
                    self._remove_current_member(group, group.members[member_id], now_ms, out, req.reason)
                    error = ErrorCode.NONE
                else:
                    error = validation
            results.append(LeaveGroupMemberResult(member_id, instance_id, error))
        out.append(Respond(token, LeaveGroupResponse(ErrorCode.NONE, results)))
        return out

    def _remove_current_member(
        self, group: Group, member: Member, now_ms: int, out: list[Effect], reason: str | None
    ) -> None:
        self._cancel_heartbeat(member, out)
        log.info(
            "group=%s generation=%d member=%s leaves (client reason: %s)",
            group.group_id,
            group.generation_id,
            member.member_id,
            reason or "not provided",
        )
        self._remove_member_and_update_group(group, member, now_ms, out, REMOVED_LEAVE)

    # ============================================================================================ offsets

    def offset_commit(self, now_ms: int, token: Any, req: OffsetCommitRequest) -> list[Effect]:
        """Handle an OffsetCommit (``handleCommitOffsets``); always answered in this call. Accepted offsets are
        persisted (one :class:`~coordinator.core.group.records.OffsetCommitRecord` each) before the answer."""
        out: list[Effect] = []
        status = self._status(req.group_id)
        if status is not None:
            self.offsets.reject_commit(out, token, req, status, None)
            return out
        group = self._groups.get(req.group_id)
        if group is None:
            if req.generation_id >= 0:
                self.offsets.reject_commit(out, token, req, ErrorCode.ILLEGAL_GENERATION, None)
                return out
            # Not relying on group management (simple consumer / admin): create an Empty group for the offsets.
            group = Group(req.group_id, _EMPTY, now_ms)
            self._groups[req.group_id] = group
        if not self.offsets.accept_commit(group, req, token, out):
            return out
        if group.state is _STABLE or group.state is _PREPARING:
            # Commits count as liveness. In PreparingRebalance the generation has not been bumped yet, so a
            # member of the previous generation may still commit.
            self._schedule_heartbeat(group.members[req.member_id], now_ms, out)
        self._durability.write_commit(group, req, now_ms, out, token)
        return out

    def offset_fetch(self, now_ms: int, req: OffsetFetchRequest) -> OffsetFetchResponse:
        """Handle an OffsetFetch: no generation or member check; ``partitions=None`` means all stored ones
        (sorted by topic, partition). Unknown partitions, and every partition of an unknown or Dead group, come back
        as offset -1, error NONE (:meth:`~coordinator.core.group.offsets.OffsetManager.fetch`)."""
        status = self._status(req.group_id)
        if status is not None:
            return OffsetFetchResponse(status)
        return self.offsets.fetch(self._groups.get(req.group_id), req)

    # ============================================================================================ admin

    def describe_groups(self, now_ms: int, req: DescribeGroupsRequest) -> DescribeGroupsResponse:
        """Describe groups; an unknown group is ``Dead`` with no members and no error
        (:func:`~coordinator.core.group.admin.describe_groups`)."""
        return admin.describe_groups(self._groups, self._status, req)

    def list_groups(self, now_ms: int, req: ListGroupsRequest) -> ListGroupsResponse:
        """List groups (in creation order), optionally filtered by exact state names. While loading the error is
        COORDINATOR_LOAD_IN_PROGRESS but the groups known so far are still listed."""
        return admin.list_groups(self._groups, self.loading, req)

    def delete_groups(self, now_ms: int, token: Any, req: DeleteGroupsRequest) -> list[Effect]:
        """Delete Empty groups (``handleDeleteGroups``): Empty -> Dead, a tombstone is persisted, offsets go
        (:func:`~coordinator.core.group.admin.delete_groups`)."""
        return admin.delete_groups(
            self._groups, self.offsets, self._status, now_ms, token, req, self._transition
        )

    # ============================================================================================ timers

    def on_timer(self, now_ms: int, key: TimerKey) -> list[Effect]:
        """A timer armed by :class:`~coordinator.core.group.api.SetTimer` fired. Stale or unknown keys are ignored."""
        out: list[Effect] = []
        if len(key) < 2:
            return out
        kind, group_id = key[0], key[1]
        # Keys are the machine's own: group ids and member ids are str, generations int; anything else is stale.
        group = self._groups.get(group_id) if isinstance(group_id, str) else None
        if group is None or group.state is _DEAD or self._status(group.group_id) is not None:
            return out
        if kind == TIMER_HEARTBEAT:
            member_id = key[2]
            if isinstance(member_id, str):
                self._on_heartbeat_timer(group, member_id, now_ms, out)
        elif kind == TIMER_JOIN:
            self._on_join_timer(group, now_ms, out)
        elif kind == TIMER_SYNC:
            generation = key[2]
            if isinstance(generation, int):
                self._on_sync_timer(group, generation, now_ms, out)
        elif kind == TIMER_PENDING:
            member_id = key[2]
            if isinstance(member_id, str):
                self._on_pending_timer(group, member_id, now_ms, out)
        return out

    def _on_heartbeat_timer(self, group: Group, member_id: str, now_ms: int, out: list[Effect]) -> None:
        member = group.members.get(member_id)
        if member is None or member.heartbeat_deadline_ms < 0 or now_ms < member.heartbeat_deadline_ms:
            return
        member.heartbeat_deadline_ms = -1
        if member.has_satisfied_heartbeat():
            # Waiting on the coordinator: Kafka completes the expectation without re-arming; the next join/sync
            # answer re-arms it.
            return
        log.info(
            "group=%s generation=%d member=%s session expired (new member: %s)",
            group.group_id,
            group.generation_id,
            member_id,
            member.is_new,
        )
        self._remove_member_and_update_group(group, member, now_ms, out, REMOVED_EXPIRED)

    def _on_pending_timer(self, group: Group, member_id: str, now_ms: int, out: list[Effect]) -> None:
        deadline = group.pending_members.get(member_id)
        if deadline is None or now_ms < deadline:
            return
        group.remove(member_id)
        log.info(
            "group=%s generation=%d member=%s pending member expired",
            group.group_id,
            group.generation_id,
            member_id,
        )
        if group.state is _PREPARING:
            self._check_join(group, now_ms, out)

    def _on_join_timer(self, group: Group, now_ms: int, out: list[Effect]) -> None:
        deadline = group.join_deadline_ms
        if deadline is None or now_ms < deadline or group.state is not _PREPARING:
            return
        if group.join_initial and group.new_member_added and group.join_remaining_ms != 0:
            # InitialDelayedJoin.onComplete: new members arrived during this window -> wait another window.
            group.new_member_added = False
            delay = min(self.config.initial_rebalance_delay_ms, group.join_remaining_ms)
            group.join_remaining_ms = max(group.join_remaining_ms - group.join_delay_ms, 0)
            group.join_delay_ms = delay
            group.join_deadline_ms = now_ms + delay
            out.append(SetTimer(group.join_key, group.join_deadline_ms))
            log.debug(
                "group=%s generation=%d initial join delay extended by %d ms (%d ms left)",
                group.group_id,
                group.generation_id,
                delay,
                group.join_remaining_ms,
            )
            return
        group.join_deadline_ms = None
        self._on_complete_join(group, now_ms, out)

    def _on_sync_timer(self, group: Group, generation: int, now_ms: int, out: list[Effect]) -> None:
        deadline = group.sync_deadline_ms
        if deadline is None or group.sync_generation != generation or now_ms < deadline:
            return
        group.sync_deadline_ms = None
        if generation != group.generation_id or group.state not in (_COMPLETING, _STABLE):
            return
        if not group.pending_sync:
            return
        laggards = list(group.pending_sync)
        for member_id in laggards:
            member = group.remove(member_id)
            if member is not None:
                self._cancel_heartbeat(member, out)
                self._emit_removed(out, group, member, REMOVED_SYNC_TIMEOUT)
        log.info(
            "group=%s generation=%d removed %d members that did not send SyncGroup: %s",
            group.group_id,
            generation,
            len(laggards),
            laggards[:10],
        )
        self._prepare_rebalance(group, now_ms, out, f"pending sync expired for {len(laggards)} members")

    # ============================================================================================ recovery

    def wedged(self, group_id: str) -> str | None:
        """Why ``group_id`` cannot make progress on its own, or ``None``: a group in PreparingRebalance must have
        its join barrier armed (a shell also checks the timer itself is armed)."""
        group = self._groups.get(group_id)
        if group is not None and group.state is _PREPARING and group.join_deadline_ms is None:
            return "PreparingRebalance without a join barrier"
        return None

    def reset_group(self, now_ms: int, group_id: str, reason: str) -> list[Effect]:
        """Recover ``group_id`` after an internal error left its state in doubt (no Kafka counterpart: Kafka has
        no recovery and such a group stays wedged). Every parked JoinGroup and SyncGroup is answered
        UNKNOWN_MEMBER_ID, every timer of the group is cancelled and all members and pending members are dropped;
        the group goes on as an Empty group of the next generation that keeps its protocol type and offsets, and is
        persisted as such. Members learn at their next request (UNKNOWN_MEMBER_ID) and join again. Emits
        ``member_removed`` (reason ``"reset"``) per member and a ``group_state`` event carrying ``reason``.

        Uses only plain attributes of the group, so it works on a group whose bookkeeping is inconsistent."""
        out: list[Effect] = []
        group = self._groups.get(group_id)
        if group is None:
            return out
        for member in list(group.members.values()):
            if member.awaiting_join:
                member.awaiting_join = False
                out.append(
                    Respond(member.join_token, JoinGroupResponse(ErrorCode.UNKNOWN_MEMBER_ID, member_id=""))
                )
            if member.awaiting_sync:
                self._answer_sync(out, member, SyncGroupResponse(ErrorCode.UNKNOWN_MEMBER_ID))
            member.heartbeat_deadline_ms = -1
            out.append(CancelTimer(member.heartbeat_key))
            self._emit_removed(out, group, member, REMOVED_RESET)
        for pending_id in group.pending_members:
            out.append(CancelTimer((TIMER_PENDING, group_id, pending_id)))
        out.append(CancelTimer(group.join_key))
        out.append(CancelTimer((TIMER_SYNC, group_id, group.sync_generation)))
        fresh = Group(group_id, _EMPTY, now_ms)
        fresh.generation_id = group.generation_id + 1
        fresh.protocol_type = group.protocol_type
        self._groups[group_id] = fresh
        log.error(
            "group=%s generation=%d reset from %s with %d members after an internal error (%s)",
            group_id,
            fresh.generation_id,
            group.state.value,
            len(group.members),
            reason,
        )
        if self._emit_events:
            out.append(
                Emit(
                    EMIT_GROUP_STATE,
                    {
                        "group": group_id,
                        "from_state": group.state.value,
                        "to_state": _EMPTY.value,
                        "generation": fresh.generation_id,
                        "members": 0,
                        "reason": reason,
                    },
                )
            )
        self._persist_group(fresh, now_ms, out)
        return out

    # ============================================================================================ migration

    def release_group(self, now_ms: int, group_id: str, out: list[Effect]) -> Group | None:
        """Hand ``group_id`` over to another group type (Kafka 4's online upgrade, ``convertToConsumerGroup``):
        parked JoinGroups and SyncGroups are answered REBALANCE_IN_PROGRESS (``completeAllJoinFutures`` /
        ``completeAllSyncFutures``), every timer of the group is cancelled and the group is forgotten; its offsets
        stay (they are shared). Writes nothing: the caller writes the conversion's records. Returns the group (None:
        unknown id)."""
        group = self._groups.pop(group_id, None)
        if group is None:
            return None
        for member in group.members.values():
            parked, token = group.take_join(member)
            if parked:
                out.append(
                    Respond(
                        token, JoinGroupResponse(ErrorCode.REBALANCE_IN_PROGRESS, member_id=member.member_id)
                    )
                )
            if member.awaiting_sync:
                self._answer_sync(out, member, SyncGroupResponse(ErrorCode.REBALANCE_IN_PROGRESS))
            self._cancel_heartbeat(member, out)
        for pending_id in group.pending_members:
            out.append(CancelTimer((TIMER_PENDING, group_id, pending_id)))
        if group.join_deadline_ms is not None:
            group.join_deadline_ms = None
            out.append(CancelTimer(group.join_key))
        self._remove_sync_expiration(group, out)
        log.info(
            "group=%s generation=%d handed over to another group type with %d members",
            group_id,
            group.generation_id,
            len(group.members),
        )
        del now_ms
        return group

    def adopt_group(
        self, now_ms: int, group: Group, out: list[Effect], reason: str, rebalance: bool = True
    ) -> None:
        """Take ``group``, converted from another group type (Kafka 4's online downgrade,
        ``convertToClassicGroup``): it must be Stable with its members' protocols, protocol and assignments set.
        Its record is written, every member's session timer armed (``rescheduleClassicGroupMemberHeartbeat``) and,
        with ``rebalance``, a rebalance begins (``prepareRebalance``), so the members rejoin as a classic group."""
        if group.group_id in self._groups:
            raise ValueError(f"group {group.group_id} exists already")
        self._groups[group.group_id] = group
        self._persist_group(group, now_ms, out)
        for member in group.members.values():
            self._schedule_heartbeat(member, now_ms, out)
        log.info(
            "group=%s generation=%d taken from another group type with %d members",
            group.group_id,
            group.generation_id,
            len(group.members),
        )
        if rebalance:
            self._prepare_rebalance(group, now_ms, out, reason)

    def forget_group(self, group_id: str) -> None:
        """While loading: forget ``group_id`` (its offsets stay, shared): a later record of another group type
        holds the id (the conversion's tombstone in Kafka's log)."""
        self._groups.pop(group_id, None)

    def drop_group(self, group_id: str) -> None:
        """Forget ``group_id`` and its offsets in memory (the last resort when :meth:`reset_group` itself failed;
        the shell answers what was parked). The durable log is untouched: a restart loads it again."""
        self._groups.pop(group_id, None)
        self.offsets.delete_group(group_id)

    # ============================================================================================ durability

    def begin_loading(self, partition: int | None = None) -> list[Effect]:
        """Start (re)loading from the durable log.

        Single-broker mode (``partition`` None): every in-memory group is unloaded first (-> Dead): parked
        JoinGroups (PreparingRebalance) and SyncGroups (CompletingRebalance / Stable) are answered NOT_COORDINATOR
        and all timers are cancelled. Until :meth:`finish_loading`, requests get COORDINATOR_LOAD_IN_PROGRESS
        (Heartbeat: NONE; SyncGroup: REBALANCE_IN_PROGRESS).

        Replicated mode: offsets partition ``partition`` becomes *loading* (Kafka 3.7
        ``addLoadingPartition``): its groups' requests get COORDINATOR_LOAD_IN_PROGRESS until
        ``finish_loading(now_ms, partition)``; other partitions are unaffected. A partition already loading or
        owned stays as it is (3.7: "Already loading"; an owned one is not reloaded) and nothing is returned.
        ``ValueError`` for a partition out of range, or for the wrong mode."""
        out: list[Effect] = []
        for group in self._durability.begin_loading(partition):
            self._unload_group(group, out)
        return out

    def _unload_group(self, group: Group, out: list[Effect]) -> None:
        """Kafka ``onGroupUnloaded`` (partition emigration)."""
        previous = group.state
        self._transition(group, _DEAD, group.state_timestamp_ms, out)
        for member in group.members.values():
            if previous is _PREPARING:
                parked, token = group.take_join(member)
                if parked:
                    out.append(
                        Respond(
                            token, JoinGroupResponse(ErrorCode.NOT_COORDINATOR, member_id=member.member_id)
                        )
                    )
            elif member.awaiting_sync:
                self._answer_sync(out, member, SyncGroupResponse(ErrorCode.NOT_COORDINATOR))
            self._cancel_heartbeat(member, out)
        for pending_id in group.pending_members:
            out.append(CancelTimer((TIMER_PENDING, group.group_id, pending_id)))
        if group.join_deadline_ms is not None:
            group.join_deadline_ms = None
            out.append(CancelTimer(group.join_key))
        self._remove_sync_expiration(group, out)
        log.info(
            "group=%s generation=%d offsets_partition=%s unloaded",
            group.group_id,
            group.generation_id,
            self.partition_for(group.group_id),
        )

    def load(self, record: Record) -> None:
        """Replay one persisted record (in log order). Offsets are last-writer-wins; the last group record of a
        group replaces its membership (loaded as Stable, or Empty if it has no members); a tombstone drops the
        group and its offsets. Raises (changing nothing) for a record that cannot be a group's state: a member id
        twice, a static instance id twice (:func:`~coordinator.core.group.loading.load_record`); in replicated mode
        ``ValueError`` for a record of a group whose offsets partition is not loading."""
        self._durability.check_record(record)
        load_record(self._groups, self.offsets, record)

    def finish_loading(self, now_ms: int, partition: int | None = None) -> list[Effect]:
        """End loading (Kafka ``onGroupLoaded`` for every loaded group): a group over ``group.max.size``
        rebalances, and every member of a loaded group gets a session timer. Replicated mode: for the groups of
        ``partition``, which becomes owned (Ready); nothing happens if it is not loading (its load was cancelled
        by :meth:`unload`)."""
        out: list[Effect] = []
        loaded = self._durability.finish_loading(now_ms, partition)
        for group in loaded:
            log.info(
                "group=%s generation=%d offsets_partition=%s loaded in %s with %d members",
                group.group_id,
                group.generation_id,
                self.partition_for(group.group_id),
                group.state,
                len(group.members),
            )
            if len(group.members) > self.config.max_size:
                self._prepare_rebalance(group, now_ms, out, "freshly loaded group is over capacity")
            for member in group.members.values():
                self._schedule_heartbeat(member, now_ms, out)
        return out

    def unload(self, partition: int, now_ms: int) -> list[Effect]:
        """Replicated mode: this coordinator resigned offsets partition ``partition`` (Kafka 3.7
        ``onResignation`` -> ``removeGroupsForPartition``; 0.9 ``handleGroupEmigration``): it is neither loading
        nor owned any more, and every group of it is unloaded as ``onGroupUnloaded`` does (-> Dead, parked
        JoinGroups / SyncGroups answered NOT_COORDINATOR, its timers cancelled) and forgotten with its offsets.
        Its requests get NOT_COORDINATOR from now on. Two-phase writes still in flight are answered when their
        :meth:`persisted` comes (the write may have been replicated: Kafka answers from its callback too).
        ``now_ms`` stamps nothing today (Kafka's transition keeps the state timestamp) but is the input's clock."""
        del now_ms
        out: list[Effect] = []
        gone = self._durability.unload(partition)
        for group in gone:
            if group.state is not _DEAD:
                self._unload_group(group, out)
        log.info("offsets partition %d unloaded: %d groups gone", partition, len(gone))
        return out

    def persisted(self, write: int, error: int, now_ms: int, leader_epoch: int = -1) -> list[Effect]:
        """The outcome of two-phase write ``write`` (a :class:`~coordinator.core.group.api.Persist` ``write`` id):
        ``error`` is the append's error code (0: acknowledged as ``offsets.commit.required.acks`` asks),
        ``leader_epoch`` the offsets partition's leader epoch it was appended under (for the ``commit`` events).

        * a commit (Kafka 3.7 ``storeOffsets``' ``putCacheCallback``, done by the durability strategy): on success
          its offsets enter the cache (if its partition was unloaded meanwhile, only the answer, NONE, is given:
          the write is durable and the next load reads it; see
          :meth:`~coordinator.core.group.durability.ReplicatedDurability._acked_offsets_target` for a reload in
          between) and ``commit`` events are emitted (with ``offsets_partition`` and ``leader_epoch``); on failure nothing becomes visible, every partition of it
          is answered :func:`~coordinator.core.group.ownership.commit_error` and ``commit_rejected`` events emitted;
        * a SyncGroup group record (3.7 ``doSyncGroup``'s ``storeGroup`` callback): only if the group is still
          the same, in CompletingRebalance, of the same generation: on success it goes Stable and the parked
          SyncGroups get their assignments; on failure they get
          :func:`~coordinator.core.group.ownership.group_write_error` and the group rebalances
          (``resetAndPropagateAssignmentError`` + ``maybePrepareRebalance``).

        An unknown ``write`` (answered already) changes nothing."""
        out: list[Effect] = []
        pending = self._durability.persisted(write, error, now_ms, leader_epoch, out)
        if pending is None:
            return out
        group = pending.group
        if (
            self._groups.get(group.group_id) is not group
            or group.state is not _COMPLETING
            or group.generation_id != pending.generation
        ):
            log.info(
                "group=%s generation=%d group record of generation %d written (error %d) after the group moved on",
                group.group_id,
                group.generation_id,
                pending.generation,
                error,
            )
            return out
        mapped = group_write_error(error)
        if mapped is ErrorCode.NONE:
            self._set_and_propagate_assignment(group, now_ms, out)
            return out
        log.warning(
            "group=%s generation=%d offsets_partition=%s group record not written (error %d): members get %s",
            group.group_id,
            group.generation_id,
            self.partition_for(group.group_id),
            error,
            mapped.name,
        )
        self._reset_and_propagate_assignment_error(group, now_ms, out, mapped)
        self._maybe_prepare_rebalance(
            group,
            now_ms,
            out,
            f"error when storing group assignment during SyncGroup (member: {pending.leader})",
        )
        return out

    @property
    def pending_writes(self) -> int:
        """Two-phase writes awaiting :meth:`persisted`."""
        return self._durability.pending_writes

    def _persist_group(self, group: Group, now_ms: int, out: list[Effect]) -> None:
        """``storeGroup``: the group with the members' current assignments (no members when Empty)."""
        out.append(Persist(group_record(group, now_ms)))

    # ============================================================================================ events

    def _transition(self, group: Group, state: GroupState, now_ms: int, out: list[Effect]) -> None:
        previous = group.transition_to(state, now_ms)
        log.debug(
            "group=%s generation=%d %s -> %s",
            group.group_id,
            group.generation_id,
            previous.value,
            state.value,
        )
        if self._emit_events:
            out.append(
                Emit(
                    EMIT_GROUP_STATE,
                    {
                        "group": group.group_id,
                        "from_state": previous.value,
                        "to_state": state.value,
                        "generation": group.generation_id,
                        "members": len(group.members),
                    },
                )
            )

    def _emit_rebalance_end(self, group: Group, out: list[Effect]) -> None:
        if self._emit_events:
            out.append(
                Emit(
                    EMIT_REBALANCE_END,
                    {
                        "group": group.group_id,
                        "generation": group.generation_id,
                        "members": len(group.members),
                        "leader": group.leader_id if group.members else None,
                        "protocol": group.protocol_name,
                    },
                )
            )

    def _emit_removed(self, out: list[Effect], group: Group, member: Member, reason: str) -> None:
        if self._emit_events:
            out.append(
                Emit(
                    EMIT_MEMBER_REMOVED,
                    {
                        "group": group.group_id,
                        "generation": group.generation_id,
                        "member": member.member_id,
                        "instance_id": member.group_instance_id,
                        "reason": reason,
                    },
                )
            )
