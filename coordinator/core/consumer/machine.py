# pyright: strict
"""Consumer groups (KIP-848's consumer protocol) as Kafka 4's group coordinator serves them, as a pure state
machine: no sockets, threads or clocks.

Semantics follow Kafka 4's ``GroupMetadataManager`` for groups of type ``consumer``; names of private methods
mirror Kafka's (``_consumer_group_heartbeat`` = ``consumerGroupHeartbeat``, ``_consumer_group_fence_member`` =
``consumerGroupFenceMember``, ``_maybe_reconcile`` = ``maybeReconcile`` ...) so the two can be read side by side.
The assignors are :mod:`~coordinator.core.consumer.assignors`, the target assignment
:mod:`~coordinator.core.consumer.target`, reconciliation (``CurrentAssignmentBuilder``)
:mod:`~coordinator.core.consumer.reconcile`, the group's state :mod:`~coordinator.core.consumer.group`, the
records :mod:`~coordinator.core.consumer.records`.

How a shell drives it
---------------------
As the classic machine (:mod:`coordinator.core.group`): call a method with the coordinator time and an opaque
token, apply the returned effects in order (``Persist`` before any later ``Respond``; ``SetTimer`` /
``CancelTimer``; ``Emit``). A heartbeat is answered in the same call (in replicated mode, one that wrote records
is answered by :meth:`~ConsumerGroupCoordinator.persisted`). Kafka's records become ``Persist`` effects in the
order Kafka writes them; Kafka's timers become:

* the session timeout -> ``("consumer-session", group, member)``, re-armed on every heartbeat (not on a static
  member's ``-2`` leave: the member is kept until it fires, ``scheduleConsumerGroupSessionTimeout``);
* the rebalance timeout -> ``("consumer-rebalance", group, member)``, armed when a member of the consumer protocol
  enters UNREVOKED_PARTITIONS, cancelled when it leaves it (classic members have their join and sync timeouts
  instead; loading arms it for every revoking member, as Kafka's ``onLoaded``); when it fires while the member is
  still at the epoch it was armed for, the member is fenced (``scheduleConsumerGroupRebalanceTimeout``).

Loading (single broker): ``begin_loading()`` (after the classic machine's, which clears the shared offsets),
``load(record)`` for every record :meth:`ConsumerGroupCoordinator.takes_record` accepts, in log order, then
``finish_loading(now_ms)``. Replicated mode (``own_by_partition(n)`` once): per ``__consumer_offsets``
partition ``begin_loading(p)``, ``load``, ``finish_loading(now_ms, p)``, and ``unload(p, now_ms)`` on
resignation; Persist effects with a ``write`` id (ids from :data:`FIRST_WRITE_ID` up, apart from the classic
machine's) are one batch whose outcome the shell reports with ``persisted(write, error, now_ms,
leader_epoch)``. The consumer records are in the classic codec's ``Record`` union
(:mod:`coordinator.core.group.records`). Offset records of a group this machine holds are its to replay (the
consumer group's records come first in the log); the rest are the classic machine's.

What the shell answers itself: NOT_COORDINATOR in single-broker mode, authorization, the version-specific shapes
(DescribeGroups below v6 reports this machine's GROUP_ID_NOT_FOUND as ``Dead`` without error, as Kafka does), and
a group id the classic machine holds:
Kafka answers GROUP_ID_NOT_FOUND "Group <id> is not a consumer group" (:meth:`~ConsumerGroupCoordinator.
not_a_consumer_group`) unless it converts the group (an empty classic group becomes a consumer group on a join;
the online migration between the types is the facade's, :mod:`coordinator.core.groups`).

Classic-protocol members of a consumer group (Kafka's ``classicGroup*ToConsumerGroup``) are served by
:meth:`~ConsumerGroupCoordinator.classic_join_group`, :meth:`~ConsumerGroupCoordinator.classic_sync_group`,
:meth:`~ConsumerGroupCoordinator.classic_heartbeat` and :meth:`~ConsumerGroupCoordinator.classic_leave_group`
(the facade routes the classic APIs of a consumer group to them): such a member carries ``classic`` metadata (its
session timeout and JoinGroup protocols, :mod:`~coordinator.core.consumer.classic_members`), its JoinGroup is the
consumer protocol's join/heartbeat with the owned partitions of its subscription, its SyncGroup returns its current
assignment, its Heartbeat says REBALANCE_IN_PROGRESS when it must rejoin. Two more timers:
``("consumer-join", group, member)`` (a classic member told to rejoin must within its rebalance timeout) and
``("consumer-sync", group, member)`` (SyncGroup due within its rebalance timeout after JoinGroup); both fence it.
``on_fence`` and ``on_static_replace`` (hooks the facade sets) may take a group away when a member is fenced or a
classic static member replaces the last consumer-protocol member (the downgrade).

Deviations from Kafka (each also noted where it happens):

* Subscription metadata is compared with the topics image on every heartbeat (any change bumps the group epoch
  at once); Kafka refreshes it when the member's subscription changed or its refresh deadline passed
  (``hasMetadataExpired``, reset when the metadata image changes). Same outcome, without the refresh delay.
* Regex subscriptions (v1's ``SubscribedTopicRegex``) are resolved synchronously, at each heartbeat of the group,
  with Python's ``re`` in full-match mode; Kafka 4 resolves them asynchronously with RE2/J
  (``maybeUpdateRegularExpressions``, a background refresh) and bumps the group epoch when the resolution arrives.
  A pattern Python's ``re`` refuses gets INVALID_REGULAR_EXPRESSION (Kafka: one RE2/J refuses).
* The group epoch record carries the subscription metadata (Kafka 3.x: a separate
  ``ConsumerGroupPartitionMetadata`` record; 4.1: a hash of it in ``ConsumerGroupMetadataValue``).
* Hash-map orders of Kafka are fixed (see :mod:`~coordinator.core.consumer.assignors`): assignors see members in
  member-id order and topics in ``Uuid`` order; the preferred server assignor's ties go to the name that sorts first.
* The leave answer carries no heartbeat interval (0), as Kafka's (``consumerGroupLeave`` sets none).
* Members are removed only as Kafka removes them: a leave, a session or rebalance timeout, a static member's
  replacement (``member_removed`` reasons ``leave``, ``expired``, ``rebalance_timeout``, ``static_replaced``);
  FENCED_MEMBER_EPOCH removes nobody, so the reason ``fenced`` never occurs here.
* The events are herdlab's (no Kafka counterpart): ``member_added`` / ``member_removed`` carry the group epoch
  after the change as ``epoch``; ``target_assignment``'s ``partitions_moved`` counts partitions whose target owner
  changed, a partition gaining or losing its owner included.
* ConsumerGroupDescribe of an unknown group carries the message ``Group <id> not found.``; ListGroups' state
  filter is case-insensitive (Kafka 4 ``listGroups``).
* Kafka's later per-partition assignment epochs (trunk's ``CurrentAssignmentBuilder``) and the UNKNOWN member
  state's producers (a downgrade) are not modelled; UNKNOWN is handled as Kafka handles it but never arises.
* No per-group configuration (``GroupConfigManager``), no offset expiry. Classic members follow Kafka 4's
  ``classicGroupJoinToConsumerGroup`` / ``classicGroupSyncToConsumerGroup`` / ``classicGroupHeartbeatToConsumerGroup``
  / ``classicGroupLeaveToConsumerGroup`` except: when a classic static member replacing the last consumer-protocol
  member downgrades the group, its subscription counts as changed only when its topics change or the replaced
  member's regex goes (a classic member has none), not when a metadata refresh is due then (Kafka bumps then too);
  a JoinGroup whose subscription does not decode is UNKNOWN_SERVER_ERROR (Kafka's ``IllegalStateException``); a
  classic member's protocols count once per name (as the classic machine's); the classic-member errors carry no
  messages where the classic responses have no field for them. Replicated mode: classic members' requests are
  answered at once (their records are not two-phase writes).
* Reconciliation follows Kafka 4.1's ``CurrentAssignmentBuilder`` (after revoking, the member moves to
  ``min(epoch + 1, target epoch)``; a partition it is revoking itself is not "unreleased" for it; a topic it no
  longer subscribes to has an empty target; a subscription change while revoking moves the unsubscribed topics'
  partitions to pending revocation at once, ``updateCurrentAssignment``).
* Single-broker mode: writes never fail. Replicated mode (:meth:`ConsumerGroupCoordinator.own_by_partition`,
  as the classic machine's): a heartbeat's records are one two-phase write and its answer waits for
  :meth:`~ConsumerGroupCoordinator.persisted` (Kafka's runtime answers when the records are committed), commits
  are two-phase as the classic ones; the records of timer firings (session / rebalance timeouts) and DeleteGroups
  are fire-and-forget (Kafka writes them as any other, with no one waiting). A failed write is answered with
  Kafka's mapped error; this machine keeps its in-memory change and the shell drops it by reloading the offsets
  partition from its log while the broker still leads it, or by the unload of a resignation
  (:mod:`coordinator.groups.runner`; Kafka's runtime reverts to the last written offset,
  ``revertLastWrittenOffset``). Unlike Kafka, which fails the rest of the batch, a request handled between the
  failed write and its outcome may still write records computed on the unwritten change.
"""

from __future__ import annotations

import dataclasses
import logging
import re
import uuid
from collections.abc import Callable
from typing import Any, cast

from coordinator.core.consumer.api import (
    LEAVE_EPOCH,
    STATIC_LEAVE_EPOCH,
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
    DescribedConsumerGroup,
    DescribedConsumerMember,
    TopicPartitions,
    TopicsImage,
)
from coordinator.core.consumer.classic_members import (
    assignment_bytes,
    group_tombstone_records,
    owned_partitions,
)
from coordinator.core.consumer.config import ConsumerGroupConfig
from coordinator.core.consumer.group import ConsumerGroup, ConsumerGroupState, regex_matches
from coordinator.core.consumer.member import (
    EMPTY_ASSIGNMENT,
    Assignment,
    ConsumerGroupMember,
    MemberState,
    assignment_from_text,
    assignment_text,
    assignment_to_wire,
)
from coordinator.core.consumer.protocol import PROTOCOL_TYPE as CLASSIC_PROTOCOL_TYPE
from coordinator.core.consumer.protocol import ConsumerProtocolError, decode_subscription
from coordinator.core.consumer.reconcile import FencedMemberEpoch, reconcile
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
from coordinator.core.consumer.target import build_target, partitions_moved
from coordinator.core.group.api import (
    EMIT_GROUP_STATE,
    EMIT_MEMBER_ADDED,
    EMIT_MEMBER_REMOVED,
    REMOVED_EXPIRED,
    REMOVED_LEAVE,
    CancelTimer,
    DeletedGroup,
    DeleteGroupsResponse,
    DescribedGroup,
    Effect,
    Emit,
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupRequest,
    JoinGroupResponse,
    LeaveGroupMemberResult,
    LeaveGroupRequest,
    LeaveGroupResponse,
    ListedGroup,
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
from coordinator.core.group.errors import ErrorCode
from coordinator.core.group.offsets import OffsetEntry, OffsetManager, PreparedCommit
from coordinator.core.group.ownership import Ownership, WholeOwnership, commit_error
from coordinator.core.group.records import GroupTombstoneRecord, OffsetCommitRecord

__all__ = [
    "EMIT_MEMBER_EPOCH",
    "EMIT_TARGET_ASSIGNMENT",
    "FIRST_WRITE_ID",
    "GROUP_TYPE",
    "PROTOCOL_TYPE",
    "REMOVED_CLASSIC_JOIN_TIMEOUT",
    "REMOVED_CLASSIC_SYNC_TIMEOUT",
    "REMOVED_REBALANCE_TIMEOUT",
    "REMOVED_STATIC_REPLACED",
    "TIMER_CLASSIC_JOIN",
    "TIMER_CLASSIC_SYNC",
    "TIMER_REBALANCE",
    "FenceHook",
    "StaticReplaceHook",
    "TIMER_SESSION",
    "ConsumerGroupCoordinator",
]

log = logging.getLogger("coordinator.consumer")

TIMER_SESSION = "consumer-session"  #: ("consumer-session", group_id, member_id)
TIMER_REBALANCE = (
    "consumer-rebalance"  #: ("consumer-rebalance", group_id, member_id): the revocation deadline
)
#: ("consumer-join", group_id, member_id): a classic member told to rejoin must send JoinGroup within its rebalance
#: timeout (Kafka ``consumerGroupJoinKey``).
TIMER_CLASSIC_JOIN = "consumer-join"
#: ("consumer-sync", group_id, member_id): a classic member must send SyncGroup within its rebalance timeout after
#: its JoinGroup (Kafka ``consumerGroupSyncKey``).
TIMER_CLASSIC_SYNC = "consumer-sync"
#: ``member_removed`` reasons of classic members that did not rejoin / sync in time.
REMOVED_CLASSIC_JOIN_TIMEOUT = "join_timeout"
REMOVED_CLASSIC_SYNC_TIMEOUT = "sync_timeout"

#: ``on_fence(now_ms, group, member, reason, out)``: called before a member is fenced (left, expired, timed out);
#: True means the hook took the whole group away (the online downgrade) and the fence must do nothing more.
FenceHook = Callable[[int, ConsumerGroup, ConsumerGroupMember, str, list[Effect]], bool]
#: ``on_static_replace(now_ms, group, replaced, joining, subscription_changed, out)``: a classic static member
#: (``joining``) replaces ``replaced``, the group's last consumer-protocol member; True means the hook converted the
#: group (the online downgrade) and the JoinGroup is answered from ``joining``.
StaticReplaceHook = Callable[
    [int, ConsumerGroup, ConsumerGroupMember, ConsumerGroupMember, bool, list[Effect]], bool
]

#: ``target_assignment``: group, epoch (the group epoch the target was computed for), members, partitions_moved
#: (partitions whose target owner changed, gaining or losing one included), assignor.
EMIT_TARGET_ASSIGNMENT = "target_assignment"
#: ``member_epoch``: group, member, epoch, previous_epoch, state (``stable`` / ``unrevoked_partitions`` /
#: ``unreleased_partitions``): a member's epoch or reconciliation state changed.
EMIT_MEMBER_EPOCH = "member_epoch"

REMOVED_REBALANCE_TIMEOUT = "rebalance_timeout"  #: did not revoke within its rebalance timeout
REMOVED_STATIC_REPLACED = "static_replaced"  #: a static member's previous incarnation, replaced by a rejoin

#: ListGroups' group type and DescribeGroups' / ListGroups' protocol type of consumer groups.
GROUP_TYPE = "consumer"
PROTOCOL_TYPE = "consumer"

_EMPTY = ConsumerGroupState.EMPTY


class _ApiError(Exception):
    """An error answer (Kafka's ``ApiException``): raised before any state changes."""

    def __init__(self, code: ErrorCode, message: str | None = None) -> None:
        super().__init__(message or code.name)
        self.code = code
        self.message = message


def _blank(value: str | None) -> bool:
    """Kafka ``throwIfEmptyString``'s test: a value that is present and empty once trimmed."""
    return value is not None and not value.strip()


class ConsumerGroupCoordinator:
    """Kafka 4's group coordinator for groups of type ``consumer``, without IO, threads or clocks.

    ``topics`` is the broker's topics image (read, never changed); ``offsets`` the committed offsets shared with
    the classic machine; ``new_uuid`` the generator of member ids for v0 joins (inject a counter in tests);
    ``emit_events=False`` suppresses :class:`~coordinator.core.group.api.Emit` effects. Not thread-safe.
    """

    def __init__(
        self,
        config: ConsumerGroupConfig,
        topics: TopicsImage,
        *,
        offsets: OffsetManager,
        new_uuid: Callable[[], str] | None = None,
        emit_events: bool = True,
    ) -> None:
        self.config = config
        self.topics = topics
        self.offsets = offsets
        self._new_uuid: Callable[[], str] = new_uuid if new_uuid is not None else (lambda: str(uuid.uuid4()))
        self._emit_events = emit_events
        self._groups: dict[str, ConsumerGroup] = {}
        #: Which groups this machine serves: all (single broker; loading between begin_loading() and
        #: finish_loading(now_ms)), or per offsets partition after own_by_partition (replicated mode).
        self._own: WholeOwnership | Ownership = WholeOwnership()
        #: Replicated mode's two-phase writes awaiting persisted(), by write id.
        self._writes: dict[int, _PendingHeartbeat | _PendingCommit] = {}
        self._next_write = FIRST_WRITE_ID
        #: Offsets acknowledged while their partition loads, by partition and group (applied when it is loaded).
        self._late_offsets: dict[int, dict[str, dict[tuple[str, int], OffsetEntry]]] = {}
        #: (group, member) -> session deadline; a firing before it is stale.
        self._session_deadlines: dict[tuple[str, str], int] = {}
        #: (group, member) -> (member epoch the rebalance timeout was armed for, deadline).
        self._rebalance_deadlines: dict[tuple[str, str], tuple[int, int]] = {}
        #: (group, member) -> deadline of a classic member's join / sync timeout.
        self._join_deadlines: dict[tuple[str, str], int] = {}
        self._sync_deadlines: dict[tuple[str, str], int] = {}
        #: Called before a member is fenced; the online downgrade (:mod:`coordinator.core.groups`) sets it.
        self.on_fence: FenceHook | None = None
        #: Called when a classic static member replaces the last consumer-protocol member (the facade's downgrade).
        self.on_static_replace: StaticReplaceHook | None = None

    # ============================================================================================ inspection

    @property
    def loading(self) -> bool:
        """True while loading (replicated mode: while any offsets partition loads)."""
        return self._own.any_loading

    @property
    def replicated(self) -> bool:
        return isinstance(self._own, Ownership)

    def own_by_partition(self, offsets_partitions: int) -> None:
        """Switch to replicated mode, before anything is loaded (as the classic machine's): the machine serves
        only the groups of the offsets partitions loaded with ``begin_loading(p)`` ... ``finish_loading(now_ms,
        p)``, answers NOT_COORDINATOR / COORDINATOR_LOAD_IN_PROGRESS for the others, and writes a heartbeat's
        records and a commit's offsets in two phases (:class:`~coordinator.core.group.api.Persist` with a
        ``write`` id, then :meth:`persisted`). ``ValueError`` if groups exist or it is on already."""
        if self.replicated or self._groups or self.loading:
            raise ValueError("replicated mode must be chosen before anything is loaded")
        self._own = Ownership(offsets_partitions)

    def partition_for(self, group_id: str) -> int | None:
        """The offsets partition of ``group_id`` in replicated mode; None in single-broker mode."""
        return self._own.partition_for(group_id)

    def partition_status(self, partition: int) -> str:
        """``"owned"``, ``"loading"`` or ``"not_owned"``."""
        return self._own.partition_status(partition)

    @property
    def pending_writes(self) -> int:
        """Two-phase writes awaiting :meth:`persisted`."""
        return len(self._writes)

    def _status(self, group_id: str) -> ErrorCode | None:
        """COORDINATOR_LOAD_IN_PROGRESS (the group's partition loads), NOT_COORDINATOR (replicated mode: not
        owned), None (served)."""
        return self._own.status(group_id)

    def holds(self, group_id: str) -> bool:
        """True if ``group_id`` is a consumer group of this machine."""
        return group_id in self._groups

    def group(self, group_id: str) -> ConsumerGroup | None:
        """The live group (an :class:`~coordinator.core.group.offsets.OffsetGroup`), for the shell's offsets
        routing and for tests. Do not mutate it."""
        return self._groups.get(group_id)

    def group_ids(self) -> list[str]:
        return list(self._groups)

    @staticmethod
    def not_a_consumer_group(group_id: str) -> ConsumerGroupHeartbeatResponse:
        """Kafka's answer to a heartbeat for a group id that is a group of another type."""
        return ConsumerGroupHeartbeatResponse(
            ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a consumer group"
        )

    # ============================================================================================ heartbeat

    def heartbeat(self, now_ms: int, token: Any, req: ConsumerGroupHeartbeatRequest) -> list[Effect]:
        """Handle a ConsumerGroupHeartbeat (Kafka ``consumerGroupHeartbeat``): join (epoch 0), heartbeat
        (the member's epoch), leave (-1) or a static member's temporary leave (-2). The answer is in the
        returned effects, after the records it depends on. An error changes nothing."""
        out: list[Effect] = []
        try:
            self._throw_if_consumer_group_heartbeat_request_is_invalid(req)
            status = self._status(req.group_id)
            if status is not None:
                raise _ApiError(status)
            if req.member_epoch in (LEAVE_EPOCH, STATIC_LEAVE_EPOCH):
                response = self._consumer_group_leave(now_ms, req, out)
            else:
                response, _ = self._consumer_group_heartbeat(now_ms, req, out)
        except _ApiError as e:
            log.info(
                "group=%s member=%s epoch=%d heartbeat refused: %s (%s)",
                req.group_id,
                req.member_id,
                req.member_epoch,
                e.code.name,
                e.message,
            )
            response = ConsumerGroupHeartbeatResponse(e.code, e.message)
        else:
            if self.replicated and any(isinstance(e, Persist) for e in out):
                # Kafka answers once the records are committed: one two-phase write, answered by persisted().
                write = self._take_write()
                out[:] = [Persist(e.record, write) if isinstance(e, Persist) else e for e in out]
                self._writes[write] = _PendingHeartbeat(token, response, req.group_id, req.member_id)
                return out
        out.append(Respond(token, response))
        return out

    def _take_write(self) -> int:
        write = self._next_write
        self._next_write += 1
        return write

    def _throw_if_consumer_group_heartbeat_request_is_invalid(
        self, req: ConsumerGroupHeartbeatRequest
    ) -> None:
        """Kafka ``throwIfConsumerGroupHeartbeatRequestIsInvalid`` (with Kafka's messages)."""
        epoch = req.member_epoch
        if (req.api_version >= 1 or epoch > 0 or epoch == LEAVE_EPOCH) and _blank(req.member_id):
            raise _ApiError(ErrorCode.INVALID_REQUEST, "MemberId can't be empty.")
        if _blank(req.group_id):
            raise _ApiError(ErrorCode.INVALID_REQUEST, "GroupId can't be empty.")
        if _blank(req.instance_id):
            raise _ApiError(ErrorCode.INVALID_REQUEST, "InstanceId can't be empty.")
        if _blank(req.rack_id):
            raise _ApiError(ErrorCode.INVALID_REQUEST, "RackId can't be empty.")
        if epoch == 0:
            if req.rebalance_timeout_ms == -1:
                raise _ApiError(
                    ErrorCode.INVALID_REQUEST, "RebalanceTimeoutMs must be provided in first request."
                )
            if req.topic_partitions is None or len(req.topic_partitions) > 0:
                raise _ApiError(ErrorCode.INVALID_REQUEST, "TopicPartitions must be empty when (re-)joining.")
            if req.subscribed_topic_names is None and req.subscribed_topic_regex is None:
                raise _ApiError(
                    ErrorCode.INVALID_REQUEST,
                    "Either SubscribedTopicNames or SubscribedTopicRegex must be non-null when (re-)joining.",
                )
        elif epoch == STATIC_LEAVE_EPOCH:
            if req.instance_id is None:
                raise _ApiError(ErrorCode.INVALID_REQUEST, "InstanceId can't be null.")
        elif epoch < STATIC_LEAVE_EPOCH:
            raise _ApiError(ErrorCode.INVALID_REQUEST, "MemberEpoch is invalid.")
        if req.server_assignor is not None and req.server_assignor not in self.config.assignors:
            raise _ApiError(
                ErrorCode.UNSUPPORTED_ASSIGNOR,
                f"ServerAssignor {req.server_assignor} is not supported. Supported assignors: "
                f"{', '.join(self.config.assignors)}.",
            )

    def _consumer_group_heartbeat(
        self,
        now_ms: int,
        req: ConsumerGroupHeartbeatRequest,
        out: list[Effect],
        classic: ClassicMemberMetadata | None = None,
        create_static: bool = False,
    ) -> tuple[ConsumerGroupHeartbeatResponse, ConsumerGroupMember]:
        """Kafka ``consumerGroupHeartbeat`` (the regular path): 1. create or update the member (a subscription
        change, a new member or a changed topic bumps the group epoch), 2. compute a new target assignment when the
        group epoch is ahead of it, 3. reconcile the member towards its target. Everything is decided before the
        group changes; an :class:`_ApiError` leaves it untouched. Returns the answer and the member after it.

        With ``classic`` it is a classic member's JoinGroup (Kafka ``classicGroupJoinToConsumerGroup``, steps 1-3):
        the member is created if unknown (a static one only when ``create_static``: it joined without member id),
        its epoch is not checked, it keeps ``classic`` as its metadata, and its timers are the caller's."""
        group_id = req.group_id
        epoch = req.member_epoch
        regex = req.subscribed_topic_regex or None
        if regex is not None:
            self._throw_if_regular_expression_is_invalid(regex)
        is_classic = classic is not None
        create = epoch == 0 or is_classic
        group = self._groups.get(group_id)
        new_group = group is None
        if group is None:
            if not create:
                raise _ApiError(ErrorCode.GROUP_ID_NOT_FOUND, f"Consumer group {group_id} not found.")
            group = ConsumerGroup(group_id, now_ms)
        self._throw_if_consumer_group_is_full(group, req.member_id)

        member_id = req.member_id or self._new_uuid()
        owned = req.topic_partitions
        replaced: ConsumerGroupMember | None = None
        if req.instance_id is None:
            member = self._get_or_maybe_subscribe_dynamic_member(
                group, member_id, epoch, owned, create, check_epoch=not is_classic
            )
        else:
            member, replaced = self._get_or_maybe_subscribe_static_member(
                group,
                member_id,
                epoch,
                req.instance_id,
                owned,
                create_static if is_classic else create,
                classic=is_classic,
            )

        # 1. The member.
        updated = dataclasses.replace(
            member,
            instance_id=req.instance_id if req.instance_id is not None else member.instance_id,
            rack_id=req.rack_id if req.rack_id is not None else member.rack_id,
            rebalance_timeout_ms=(
                req.rebalance_timeout_ms if req.rebalance_timeout_ms != -1 else member.rebalance_timeout_ms
            ),
            server_assignor=req.server_assignor
            if req.server_assignor is not None
            else member.server_assignor,
            subscribed_topic_names=(
                tuple(sorted(set(req.subscribed_topic_names)))
                if req.subscribed_topic_names is not None
                else member.subscribed_topic_names
            ),
            subscribed_topic_regex=(
                regex if req.subscribed_topic_regex is not None else member.subscribed_topic_regex
            ),
            client_id=req.client_id,
            client_host=req.client_host,
            classic=classic,
        )
        records: list[ConsumerRecord] = []
        if replaced is not None:
            self._replace_member(records, group, replaced, member)
        bump = group.group_epoch == 0
        if updated != member:
            records.append(_member_record(group_id, updated))
            if not updated.same_subscription(member):
                bump = True
                log.debug(
                    "group=%s member=%s epoch=%d subscription now %s regex=%s",
                    group_id,
                    member_id,
                    member.member_epoch,
                    list(updated.subscribed_topic_names),
                    updated.subscribed_topic_regex,
                )

        names = group.subscribed_topic_names(self.topics, member, updated)
        subscribed = ConsumerGroup.subscription_metadata(names, self.topics)
        members_after = len(group.members)
        if updated.member_id not in group.members and (
            updated.instance_id is None or updated.instance_id not in group.static_members
        ):
            members_after += 1
        homogeneous = group.is_homogeneous(member, updated, members_after)
        if subscribed != group.subscribed:
            bump = True
        group_epoch = group.group_epoch + 1 if bump else group.group_epoch
        if bump:
            records.append(ConsumerGroupEpochRecord(group_id, group_epoch, subscribed))

        # 2. The target assignment.
        new_target: dict[str, Assignment] | None = None
        assignor = ""
        if group_epoch > group.assignment_epoch:
            assignor = group.preferred_assignor(member, updated) or self.config.default_assignor
            result = build_target(
                group,
                group_epoch,
                assignor,
                subscribed,
                homogeneous,
                updated,
                removed=replaced.member_id if replaced is not None else None,
            )
            records.extend(result.records)
            new_target = result.members
            target_epoch = group_epoch
            target = new_target.get(member_id, EMPTY_ASSIGNMENT)
        else:
            target_epoch = group.assignment_epoch
            target = group.target.get(member_id)
            if target is None and replaced is not None:
                target = group.target.get(replaced.member_id)
            if target is None:
                target = EMPTY_ASSIGNMENT

        # 3. Reconciliation.
        reconciled = self._maybe_reconcile(
            group, updated, target_epoch, target, owned, not updated.same_subscription(member)
        )
        if reconciled is not updated and reconciled != updated:
            records.append(_current_record(group_id, reconciled))

        # Apply: from here on nothing fails.
        state_before = group.state
        if new_group:
            self._groups[group_id] = group
            log.info("group=%s epoch=0 created by member %s (client %s)", group_id, member_id, req.client_id)
        for record in records:
            out.append(Persist(record))
        if replaced is not None:
            self._apply_replace(group, replaced, out)
        is_new_member = member_id not in group.members
        group.group_epoch = group_epoch
        group.subscribed = subscribed
        if new_target is not None:
            old_target = dict(group.target)
            group.target = dict(new_target)
            group.assignment_epoch = group_epoch
            moved = partitions_moved(old_target, group.target)
            log.info(
                "group=%s epoch=%d new target assignment with the %s assignor: %d members, %d partitions moved",
                group_id,
                group_epoch,
                assignor,
                len(new_target),
                moved,
            )
            self._emit(
                out,
                EMIT_TARGET_ASSIGNMENT,
                {
                    "group": group_id,
                    "epoch": group_epoch,
                    "members": len(new_target),
                    "partitions_moved": moved,
                    "assignor": assignor,
                },
            )
        elif replaced is not None:
            group.target[member_id] = target  # the replaced incarnation's (replaceMember's target record)
        group.update_member(reconciled)
        if is_new_member:
            log.info(
                "group=%s epoch=%d member=%s joined (instance %s, client %s)",
                group_id,
                group_epoch,
                member_id,
                req.instance_id,
                req.client_id,
            )
            fields: dict[str, Any] = {
                "group": group_id,
                "member": member_id,
                "epoch": group_epoch,
                "instance_id": req.instance_id,
                "client_id": req.client_id,
                "client_host": req.client_host,
            }
            if replaced is not None and replaced.member_id != member_id:
                fields["replaces"] = replaced.member_id
            self._emit(out, EMIT_MEMBER_ADDED, fields)
        self._after_reconcile(now_ms, group, member, updated, reconciled, out)
        if not is_classic:
            self._schedule_consumer_group_session_timeout(now_ms, group_id, member_id, out)
        self._maybe_update_group_state(now_ms, group, state_before, out)

        response = ConsumerGroupHeartbeatResponse(
            ErrorCode.NONE,
            member_id=reconciled.member_id,
            member_epoch=reconciled.member_epoch,
            heartbeat_interval_ms=self.config.heartbeat_interval_ms,
        )
        # Kafka's full request: every field a full request must carry (the names or the regex, the owned partitions).
        full_request = epoch == 0 or (
            req.rebalance_timeout_ms != -1
            and (req.subscribed_topic_names is not None or req.subscribed_topic_regex is not None)
            and req.topic_partitions is not None
        )
        if full_request or dict(reconciled.assigned) != dict(member.assigned):
            response.assignment = assignment_to_wire(reconciled.assigned)
        return response, reconciled

    def _throw_if_regular_expression_is_invalid(self, regex: str) -> None:
        """Kafka ``throwIfRegularExpressionIsInvalid`` (Python's ``re`` for RE2/J)."""
        try:
            re.compile(regex)
        except re.error as e:
            raise _ApiError(
                ErrorCode.INVALID_REGULAR_EXPRESSION,
                f"SubscribedTopicRegex `{regex}` is not a valid regular expression: {e}.",
            ) from None

    def _throw_if_consumer_group_is_full(self, group: ConsumerGroup, member_id: str) -> None:
        """Kafka ``throwIfConsumerGroupIsFull``: a member not yet in a full group is refused."""
        max_size = self.config.max_size
        if len(group.members) >= max_size and (not member_id or member_id not in group.members):
            raise _ApiError(
                ErrorCode.GROUP_MAX_SIZE_REACHED,
                f"The consumer group has reached its maximum capacity of {max_size} members.",
            )

    def _get_or_maybe_create_member(
        self, group: ConsumerGroup, member_id: str, create: bool
    ) -> ConsumerGroupMember:
        """Kafka ``ConsumerGroup.getOrMaybeCreateMember``."""
        member = group.members.get(member_id)
        if member is not None:
            return member
        if not create:
            raise _ApiError(
                ErrorCode.UNKNOWN_MEMBER_ID, f"Member {member_id} is not a member of group {group.group_id}."
            )
        return ConsumerGroupMember(member_id)

    def _get_or_maybe_subscribe_dynamic_member(
        self,
        group: ConsumerGroup,
        member_id: str,
        epoch: int,
        owned: tuple[TopicPartitions, ...] | None,
        create: bool,
        check_epoch: bool = True,
    ) -> ConsumerGroupMember:
        """Kafka ``getOrMaybeSubscribeDynamicConsumerGroupMember`` (a classic member's epoch is not checked)."""
        member = self._get_or_maybe_create_member(group, member_id, create)
        if check_epoch:
            self._throw_if_member_epoch_is_invalid(group, member, epoch, owned)
        return member

    def _get_or_maybe_subscribe_static_member(
        self,
        group: ConsumerGroup,
        member_id: str,
        epoch: int,
        instance_id: str,
        owned: tuple[TopicPartitions, ...] | None,
        create: bool,
        classic: bool = False,
    ) -> tuple[ConsumerGroupMember, ConsumerGroupMember | None]:
        """Kafka ``getOrMaybeSubscribeStaticConsumerGroupMember``: a join with an instance id whose member left with
        ``-2`` replaces it (the new member starts at epoch 0 with the old one's assignment); a join while the old
        one is still there is UNRELEASED_INSTANCE_ID, unless the joining or the existing member uses the classic
        protocol (``classic``: a classic member's JoinGroup, whose epoch is not checked). Returns the member and the
        member it replaces."""
        existing = group.static_member(instance_id)
        if create:
            if existing is None:
                return self._get_or_maybe_create_member(group, member_id, True), None
            if not classic and existing.classic is None:
                self._throw_if_instance_id_is_unreleased(group, existing, member_id, instance_id)
            copy = dataclasses.replace(existing, member_id=member_id, member_epoch=0, previous_member_epoch=0)
            log.info(
                "group=%s epoch=%d member=%s static instance %s rejoins, replacing member %s",
                group.group_id,
                group.group_epoch,
                member_id,
                instance_id,
                existing.member_id,
            )
            return copy, existing
        if existing is None:
            raise _ApiError(ErrorCode.UNKNOWN_MEMBER_ID, f"Instance id {instance_id} is unknown.")
        self._throw_if_instance_id_is_fenced(group, existing, member_id, instance_id)
        if not classic:
            self._throw_if_member_epoch_is_invalid(group, existing, epoch, owned)
        return existing, None

    def _throw_if_member_epoch_is_invalid(
        self,
        group: ConsumerGroup,
        member: ConsumerGroupMember,
        received: int,
        owned: tuple[TopicPartitions, ...] | None,
    ) -> None:
        """Kafka ``throwIfConsumerGroupMemberEpochIsInvalid``: an epoch ahead of the member's is fenced; one behind
        it is accepted only if it is the previous epoch and the member owns nothing beyond its current
        assignment (the answer that bumped it may have been lost)."""
        if received > member.member_epoch:
            raise _ApiError(
                ErrorCode.FENCED_MEMBER_EPOCH,
                f"The consumer group member has a greater member epoch ({received}) than the one known by the "
                f"group coordinator ({member.member_epoch}). The member must abandon all its partitions and rejoin.",
            )
        if received < member.member_epoch and (
            received != member.previous_member_epoch or not self._is_subset(owned, member.assigned)
        ):
            log.info(
                "group=%s epoch=%d member=%s fenced: sent epoch %d, has %d",
                group.group_id,
                group.group_epoch,
                member.member_id,
                received,
                member.member_epoch,
            )
            raise _ApiError(
                ErrorCode.FENCED_MEMBER_EPOCH,
                f"The consumer group member has a smaller member epoch ({received}) than the one known by the "
                f"group coordinator ({member.member_epoch}). The member must abandon all its partitions and rejoin.",
            )

    @staticmethod
    def _is_subset(owned: tuple[TopicPartitions, ...] | None, target: Assignment) -> bool:
        """Kafka ``isSubset``: every owned partition is in ``target``; False when nothing was sent."""
        if owned is None:
            return False
        for tp in owned:
            parts = target.get(tp.topic_id)
            if parts is None:
                return False
            if any(p not in parts for p in tp.partitions):
                return False
        return True

    def _throw_if_instance_id_is_unreleased(
        self, group: ConsumerGroup, existing: ConsumerGroupMember, member_id: str, instance_id: str
    ) -> None:
        """Kafka ``throwIfInstanceIdIsUnreleased``: the instance id is free only after a ``-2`` leave."""
        if existing.member_epoch != STATIC_LEAVE_EPOCH:
            raise _ApiError(
                ErrorCode.UNRELEASED_INSTANCE_ID,
                f"Static member {member_id} with instance id {instance_id} cannot join the group because the "
                f"instance id is owned by {existing.member_id} member.",
            )

    def _throw_if_instance_id_is_fenced(
        self, group: ConsumerGroup, existing: ConsumerGroupMember, member_id: str, instance_id: str
    ) -> None:
        """Kafka ``throwIfInstanceIdIsFenced``: the instance id belongs to another member id."""
        if existing.member_id != member_id:
            raise _ApiError(
                ErrorCode.FENCED_INSTANCE_ID,
                f"Static member {member_id} with instance id {instance_id} was fenced by member "
                f"{existing.member_id}.",
            )

    def _replace_member(
        self,
        records: list[ConsumerRecord],
        group: ConsumerGroup,
        old: ConsumerGroupMember,
        new: ConsumerGroupMember,
    ) -> None:
        """Kafka ``replaceMember``'s records: the old member's tombstones, the new member with the old one's
        target and assignment."""
        gid = group.group_id
        _remove_member_records(records, gid, old.member_id)
        records.append(_member_record(gid, new))
        records.append(
            ConsumerTargetMemberRecord(
                gid, new.member_id, assignment_text(group.target.get(old.member_id, {}))
            )
        )
        records.append(_current_record(gid, new))

    def _apply_replace(self, group: ConsumerGroup, old: ConsumerGroupMember, out: list[Effect]) -> None:
        """The in-memory side of :meth:`_replace_member`: the old incarnation goes with its target (taken over by
        the new one) and its timers."""
        group.remove_member(old.member_id)
        self._cancel_timers(group.group_id, old.member_id, out)
        self._emit_removed(out, group, old, REMOVED_STATIC_REPLACED)

    def _maybe_reconcile(
        self,
        group: ConsumerGroup,
        member: ConsumerGroupMember,
        target_epoch: int,
        target: Assignment,
        owned: tuple[TopicPartitions, ...] | None,
        subscription_changed: bool = False,
    ) -> ConsumerGroupMember:
        """Kafka ``maybeReconcile`` (decision part): the member reconciled towards ``target``; the member itself
        when it is reconciled already and its subscription did not change in this request
        (``subscription_changed``, Kafka ``hasSubscriptionChanged``)."""
        if not subscription_changed and member.is_reconciled_to(target_epoch):
            return member
        topic_ids = self._subscribed_topic_ids(member)
        try:
            return reconcile(
                member,
                target_epoch,
                target,
                group.current_partition_epoch,
                owned,
                topic_ids,
                subscription_changed,
            )
        except FencedMemberEpoch as e:
            raise _ApiError(ErrorCode.FENCED_MEMBER_EPOCH, str(e)) from None

    def _subscribed_topic_ids(self, member: ConsumerGroupMember) -> frozenset[uuid.UUID]:
        """The ids of the existing topics ``member`` subscribes to, by name or regex (Kafka
        ``CurrentAssignmentBuilder.subscribedTopicIds``)."""
        names = set(member.subscribed_topic_names)
        if member.subscribed_topic_regex:
            names |= regex_matches(member.subscribed_topic_regex, self.topics.names())
        ids: set[uuid.UUID] = set()
        for name in names:
            topic = self.topics.by_name(name)
            if topic is not None:
                ids.add(topic.topic_id)
        return frozenset(ids)

    def _after_reconcile(
        self,
        now_ms: int,
        group: ConsumerGroup,
        before: ConsumerGroupMember,
        updated: ConsumerGroupMember,
        after: ConsumerGroupMember,
        out: list[Effect],
    ) -> None:
        """Kafka ``maybeReconcile`` (effects part): when reconciliation changed a member of the consumer protocol
        (``updated`` -> ``after``), the rebalance timeout is (re)armed in UNREVOKED_PARTITIONS and cancelled
        otherwise; a classic member has none (its join and sync timeouts stand for it). A member epoch or state
        other than the one before the heartbeat (``before``) is a ``member_epoch`` event."""
        gid = group.group_id
        mid = after.member_id
        if after is not updated and after != updated and not after.uses_classic_protocol:
            if after.state is MemberState.UNREVOKED_PARTITIONS:
                self._schedule_consumer_group_rebalance_timeout(
                    now_ms, gid, mid, after.member_epoch, after.rebalance_timeout_ms, out
                )
            else:
                self._cancel_consumer_group_rebalance_timeout(gid, mid, out)
        if before.member_epoch == after.member_epoch and before.state is after.state:
            return
        log.info(
            "group=%s epoch=%d member=%s member epoch %d -> %d, %s, %d partitions assigned, %d to revoke",
            gid,
            group.group_epoch,
            mid,
            before.member_epoch,
            after.member_epoch,
            after.state.value,
            sum(len(p) for p in after.assigned.values()),
            sum(len(p) for p in after.pending_revocation.values()),
        )
        self._emit(
            out,
            EMIT_MEMBER_EPOCH,
            {
                "group": gid,
                "member": mid,
                "epoch": after.member_epoch,
                "previous_epoch": before.member_epoch,
                "state": after.state.value,
            },
        )

    # ============================================================================================ leave

    def _consumer_group_leave(
        self, now_ms: int, req: ConsumerGroupHeartbeatRequest, out: list[Effect]
    ) -> ConsumerGroupHeartbeatResponse:
        """Kafka ``consumerGroupLeave``: ``-1`` removes the member (fenced, as Kafka's
        ``consumerGroupFenceMember``, the group epoch bumped), ``-2`` from a static member keeps it at epoch -2
        until its session times out or its instance rejoins. The answer echoes the member id and epoch."""
        group = self._groups.get(req.group_id)
        if group is None:
            raise _ApiError(ErrorCode.GROUP_ID_NOT_FOUND, f"Consumer group {req.group_id} not found.")
        response = ConsumerGroupHeartbeatResponse(
            ErrorCode.NONE, member_id=req.member_id, member_epoch=req.member_epoch
        )
        if req.instance_id is None:
            member = self._get_or_maybe_create_member(group, req.member_id, False)
            log.info(
                "group=%s epoch=%d member=%s left the group",
                group.group_id,
                group.group_epoch,
                member.member_id,
            )
            self._consumer_group_fence_member(now_ms, group, member, REMOVED_LEAVE, out)
            return response
        member = group.static_member(req.instance_id)
        if member is None:
            raise _ApiError(ErrorCode.UNKNOWN_MEMBER_ID, f"Instance id {req.instance_id} is unknown.")
        self._throw_if_instance_id_is_fenced(group, member, req.member_id, req.instance_id)
        if req.member_epoch == STATIC_LEAVE_EPOCH:
            log.info(
                "group=%s epoch=%d member=%s static instance %s left for now (kept until its session ends)",
                group.group_id,
                group.group_epoch,
                member.member_id,
                req.instance_id,
            )
            self._consumer_group_static_member_group_leave(now_ms, group, member, out)
            response.member_id = member.member_id
            return response
        log.info(
            "group=%s epoch=%d member=%s static instance %s left the group",
            group.group_id,
            group.group_epoch,
            member.member_id,
            req.instance_id,
        )
        self._consumer_group_fence_member(now_ms, group, member, REMOVED_LEAVE, out)
        return response

    def _consumer_group_static_member_group_leave(
        self, now_ms: int, group: ConsumerGroup, member: ConsumerGroupMember, out: list[Effect]
    ) -> None:
        """Kafka ``consumerGroupStaticMemberGroupLeave``: epoch -2, nothing pending revocation; the member keeps its
        assigned partitions (no one else gets them) and its session timer."""
        state_before = group.state
        leaving = dataclasses.replace(member, member_epoch=STATIC_LEAVE_EPOCH, pending_revocation={})
        out.append(Persist(_current_record(group.group_id, leaving)))
        group.update_member(leaving)
        self._emit(
            out,
            EMIT_MEMBER_EPOCH,
            {
                "group": group.group_id,
                "member": member.member_id,
                "epoch": STATIC_LEAVE_EPOCH,
                "previous_epoch": member.member_epoch,
                "state": leaving.state.value,
            },
        )
        self._maybe_update_group_state(now_ms, group, state_before, out)

    def _consumer_group_fence_member(
        self, now_ms: int, group: ConsumerGroup, member: ConsumerGroupMember, reason: str, out: list[Effect]
    ) -> None:
        """Kafka ``consumerGroupFenceMember``: the member's tombstones, the group epoch bumped (with the
        subscription metadata recomputed without it), its timers cancelled. The new target is computed at the
        next heartbeat of another member (the group is Assigning until then)."""
        gid = group.group_id
        if self.on_fence is not None and self.on_fence(now_ms, group, member, reason, out):
            return
        state_before = group.state
        records: list[ConsumerRecord] = []
        _remove_member_records(records, gid, member.member_id)
        group.remove_member(member.member_id)
        names = group.subscribed_topic_names(self.topics, None, None)
        group.subscribed = ConsumerGroup.subscription_metadata(names, self.topics)
        group.group_epoch += 1
        records.append(ConsumerGroupEpochRecord(gid, group.group_epoch, group.subscribed))
        for record in records:
            out.append(Persist(record))
        self._cancel_timers(gid, member.member_id, out)
        self._emit_removed(out, group, member, reason)
        self._maybe_update_group_state(now_ms, group, state_before, out)

    # ============================================================================================ classic members

    def classic_join_group(self, now_ms: int, token: Any, req: JoinGroupRequest) -> list[Effect]:
        """A classic member's JoinGroup to a non-empty consumer group (Kafka ``classicGroupJoinToConsumerGroup``):
        the member joins or rejoins as the consumer protocol's heartbeat would make it (group epoch, target
        assignment, reconciliation, with its subscription's owned partitions), and is answered at once with its
        member epoch as generation, the group's protocol and no member list (it is never the leader): its
        assignment comes with SyncGroup. Its session timer runs on its JoinGroup's session timeout, and it must
        send SyncGroup within its rebalance timeout. The session timeout's bounds are the shell's (the classic
        machine's configuration, as Kafka's service checks them first). Errors: GROUP_MAX_SIZE_REACHED,
        INCONSISTENT_GROUP_PROTOCOL (not the embedded consumer protocol, or no protocol every classic member
        lists), MEMBER_ID_REQUIRED (v4+ dynamic member without id, with the id to use), and the member checks of
        the consumer protocol (UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID)."""
        out: list[Effect] = []
        status = self._status(req.group_id)
        group = self._groups.get(req.group_id)
        if status is not None or group is None:
            out.append(
                Respond(
                    token, JoinGroupResponse(status or ErrorCode.UNKNOWN_MEMBER_ID, member_id=req.member_id)
                )
            )
            return out
        unknown = req.member_id == ""
        member_id = self._new_uuid() if unknown else req.member_id
        protocols = tuple((name, bytes(meta)) for name, meta in req.protocols)
        try:
            self._throw_if_consumer_group_is_full(group, member_id)
            if not group.supports_classic_protocols(req.protocol_type, (name for name, _ in protocols)):
                raise _ApiError(
                    ErrorCode.INCONSISTENT_GROUP_PROTOCOL,
                    f"Member {member_id}'s protocols are not supported.",
                )
            if unknown and req.group_instance_id is None and req.api_version >= 4:
                log.info(
                    "group=%s epoch=%d dynamic classic member joins with no member id: asked to rejoin as %s",
                    group.group_id,
                    group.group_epoch,
                    member_id,
                )
                out.append(
                    Respond(token, JoinGroupResponse(ErrorCode.MEMBER_ID_REQUIRED, member_id=member_id))
                )
                return out
            try:
                subscription = decode_subscription(protocols[0][1])
            except ConsumerProtocolError:
                raise _ApiError(
                    ErrorCode.UNKNOWN_SERVER_ERROR,
                    "Malformed embedded consumer protocol in subscription deserialization.",
                ) from None
            rebalance = req.rebalance_timeout_ms
            if req.api_version == 0 or rebalance < 0:
                rebalance = req.session_timeout_ms
            hreq = ConsumerGroupHeartbeatRequest(
                group_id=group.group_id,
                member_id=member_id,
                member_epoch=-1,
                instance_id=req.group_instance_id,
                rack_id=subscription.rack_id,
                rebalance_timeout_ms=rebalance,
                subscribed_topic_names=subscription.topics,
                subscribed_topic_regex="",  # a classic member has no regex (Kafka sets it to "")
                topic_partitions=owned_partitions(subscription, self.topics),
                client_id=req.client_id,
                client_host=req.client_host,
            )
            classic = ClassicMemberMetadata(req.session_timeout_ms, protocols)
            downgraded = self._maybe_downgrade_on_static_replacement(
                now_ms, group, hreq, classic, unknown, out
            )
            if downgraded is not None:
                out.append(Respond(token, _classic_join_answer(downgraded, protocols[0][0])))
                return out
            _, member = self._consumer_group_heartbeat(
                now_ms, hreq, out, classic=classic, create_static=unknown
            )
        except _ApiError as e:
            log.info(
                "group=%s member=%s classic JoinGroup refused: %s (%s)",
                req.group_id,
                req.member_id,
                e.code.name,
                e.message,
            )
            out.append(Respond(token, JoinGroupResponse(e.code, member_id=req.member_id)))
            return out
        gid = group.group_id
        self._cancel_classic_timer(self._join_deadlines, TIMER_CLASSIC_JOIN, gid, member.member_id, out)
        self._schedule_consumer_group_session_timeout(
            now_ms, gid, member.member_id, out, req.session_timeout_ms
        )
        self._schedule_consumer_group_sync_timeout(now_ms, gid, member.member_id, rebalance, out)
        out.append(Respond(token, _classic_join_answer(member, protocols[0][0])))
        return out

    def _maybe_downgrade_on_static_replacement(
        self,
        now_ms: int,
        group: ConsumerGroup,
        req: ConsumerGroupHeartbeatRequest,
        classic: ClassicMemberMetadata,
        unknown: bool,
        out: list[Effect],
    ) -> ConsumerGroupMember | None:
        """Kafka ``classicGroupJoinToConsumerGroup``'s downgrade: a classic static member joining without member id
        replaces the group's last consumer-protocol member (a static one of its instance id). The joining member is
        the replaced one's copy at epoch 0 with the request's subscription, reconciled to the current target when
        its subscription is the same; ``on_static_replace`` (the facade) decides and converts the group. Returns
        the joining member when the group was converted (it is the classic machine's from then on), else None."""
        hook = self.on_static_replace
        instance_id = req.instance_id
        if hook is None or not unknown or instance_id is None:
            return None
        existing = group.static_member(instance_id)
        if (
            existing is None
            or existing.classic is not None
            or not group.all_members_use_classic_protocol_except([existing.member_id])
        ):
            return None
        joining = dataclasses.replace(
            existing,
            member_id=req.member_id,
            member_epoch=0,
            previous_member_epoch=0,
            rack_id=req.rack_id if req.rack_id is not None else existing.rack_id,
            rebalance_timeout_ms=req.rebalance_timeout_ms,
            subscribed_topic_names=tuple(sorted(set(req.subscribed_topic_names or ()))),
            subscribed_topic_regex=None,
            client_id=req.client_id,
            client_host=req.client_host,
            classic=classic,
        )
        # Kafka ``hasMemberSubscriptionChanged`` (the topic names) or a regex dropped (``regexUpdated``).
        changed = not joining.same_subscription(existing)
        if not changed:
            joining = self._maybe_reconcile(
                group,
                joining,
                group.assignment_epoch,
                group.target.get(existing.member_id, EMPTY_ASSIGNMENT),
                req.topic_partitions,
            )
        if not hook(now_ms, group, existing, joining, changed, out):
            return None
        return joining

    def _validate_consumer_group_member(
        self, group: ConsumerGroup, member_id: str, instance_id: str | None
    ) -> ConsumerGroupMember:
        """Kafka ``validateConsumerGroupMember`` and ``throwIfMemberDoesNotUseClassicProtocol``."""
        if instance_id is None:
            member = self._get_or_maybe_create_member(group, member_id, False)
        else:
            found = group.static_member(instance_id)
            if found is None:
                raise _ApiError(
                    ErrorCode.UNKNOWN_MEMBER_ID,
                    f"Member with instance id {instance_id} is not a member of group {group.group_id}.",
                )
            self._throw_if_instance_id_is_fenced(group, found, member_id, instance_id)
            member = found
        if member.classic is None:
            raise _ApiError(
                ErrorCode.UNKNOWN_MEMBER_ID, f"Member {member.member_id} does not use the classic protocol."
            )
        return member

    @staticmethod
    def _throw_if_generation_id_unmatched(member: ConsumerGroupMember, generation_id: int) -> None:
        if member.member_epoch != generation_id:
            raise _ApiError(
                ErrorCode.ILLEGAL_GENERATION,
                f"The request generation id {generation_id} is not equal to the member epoch "
                f"{member.member_epoch} of member {member.member_id}.",
            )

    def classic_sync_group(self, now_ms: int, token: Any, req: SyncGroupRequest) -> list[Effect]:
        """A classic member's SyncGroup to a consumer group (Kafka ``classicGroupSyncToConsumerGroup``): answered at
        once with the partitions it is assigned now (its reconciled current assignment, in its subscription's
        version); its sync timeout is cancelled and its session timer re-armed. Errors: UNKNOWN_MEMBER_ID (unknown,
        or not a classic member; also an Empty group), FENCED_INSTANCE_ID, ILLEGAL_GENERATION (not its member epoch),
        INCONSISTENT_GROUP_PROTOCOL (another protocol type or name than its JoinGroup's answer), and
        REBALANCE_IN_PROGRESS when the group epoch moved past it (it must rejoin; the join timeout starts)."""
        out: list[Effect] = []
        status = self._status(req.group_id)
        group = self._groups.get(req.group_id)
        if status is not None or group is None or not group.members:
            out.append(Respond(token, SyncGroupResponse(status or ErrorCode.UNKNOWN_MEMBER_ID)))
            return out
        try:
            member = self._validate_consumer_group_member(group, req.member_id, req.group_instance_id)
            self._throw_if_generation_id_unmatched(member, req.generation_id)
            assert member.classic is not None
            protocol_name = member.classic.protocols[0][0] if member.classic.protocols else ""
            if req.protocol_type is not None and req.protocol_type != CLASSIC_PROTOCOL_TYPE:
                raise _ApiError(ErrorCode.INCONSISTENT_GROUP_PROTOCOL)
            if req.protocol_name is not None and req.protocol_name != protocol_name:
                raise _ApiError(ErrorCode.INCONSISTENT_GROUP_PROTOCOL)
            self._throw_if_rebalance_in_progress(now_ms, group, member, out)
        except _ApiError as e:
            out.append(Respond(token, SyncGroupResponse(e.code)))
            return out
        gid = group.group_id
        self._cancel_classic_timer(self._sync_deadlines, TIMER_CLASSIC_SYNC, gid, member.member_id, out)
        self._schedule_consumer_group_session_timeout(
            now_ms, gid, member.member_id, out, _session_timeout(member)
        )
        out.append(
            Respond(
                token,
                SyncGroupResponse(
                    ErrorCode.NONE,
                    assignment_bytes(member, member.assigned, self.topics),
                    req.protocol_type,
                    req.protocol_name,
                ),
            )
        )
        return out

    def _throw_if_rebalance_in_progress(
        self, now_ms: int, group: ConsumerGroup, member: ConsumerGroupMember, out: list[Effect]
    ) -> None:
        """Kafka ``throwIfRebalanceInProgress``: the group epoch is past the member's and it is not revoking."""
        if group.group_epoch > member.member_epoch and member.state is not MemberState.UNREVOKED_PARTITIONS:
            self._schedule_consumer_group_join_timeout_if_absent(now_ms, group.group_id, member, out)
            raise _ApiError(
                ErrorCode.REBALANCE_IN_PROGRESS,
                f"A new rebalance is triggered in group {group.group_id} and member {member.member_id} should "
                "rejoin to catch up.",
            )

    def classic_heartbeat(self, now_ms: int, token: Any, req: HeartbeatRequest) -> list[Effect]:
        """A classic member's Heartbeat in a consumer group (Kafka ``classicGroupHeartbeatToConsumerGroup``): its
        session timer is re-armed; REBALANCE_IN_PROGRESS (and the join timeout started) when it must rejoin: the
        group epoch is past its member epoch, it must revoke partitions, or partitions it waits for are free now.
        Errors: UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID, ILLEGAL_GENERATION."""
        out: list[Effect] = []
        status = self._status(req.group_id)
        group = self._groups.get(req.group_id)
        if status is not None or group is None:
            out.append(Respond(token, HeartbeatResponse(status or ErrorCode.UNKNOWN_MEMBER_ID)))
            return out
        try:
            member = self._validate_consumer_group_member(group, req.member_id, req.group_instance_id)
            self._throw_if_generation_id_unmatched(member, req.generation_id)
        except _ApiError as e:
            out.append(Respond(token, HeartbeatResponse(e.code)))
            return out
        gid = group.group_id
        self._schedule_consumer_group_session_timeout(
            now_ms, gid, member.member_id, out, _session_timeout(member)
        )
        error = ErrorCode.NONE
        if (
            member.member_epoch < group.group_epoch
            or member.state is MemberState.UNREVOKED_PARTITIONS
            or (
                member.state is MemberState.UNRELEASED_PARTITIONS
                and not group.waiting_on_unreleased_partition(member)
            )
        ):
            error = ErrorCode.REBALANCE_IN_PROGRESS
            self._schedule_consumer_group_join_timeout_if_absent(now_ms, gid, member, out)
        out.append(Respond(token, HeartbeatResponse(error)))
        return out

    def classic_leave_group(self, now_ms: int, token: Any, req: LeaveGroupRequest) -> list[Effect]:
        """A classic LeaveGroup to a consumer group (Kafka ``classicGroupLeaveToConsumerGroup``): each classic member
        named (by member id, or by instance id with an empty member id for an admin's removal) is removed with its
        timers; if any was, the group epoch is bumped once (with the subscription metadata recomputed). Per member:
        UNKNOWN_MEMBER_ID (unknown, or a consumer-protocol member), FENCED_INSTANCE_ID."""
        out: list[Effect] = []
        status = self._status(req.group_id)
        group = self._groups.get(req.group_id)
        if status is not None:
            out.append(Respond(token, LeaveGroupResponse(status)))
            return out
        if group is None:
            results = [LeaveGroupMemberResult(m, i, ErrorCode.UNKNOWN_MEMBER_ID) for m, i in req.members]
            out.append(Respond(token, LeaveGroupResponse(ErrorCode.NONE, results)))
            return out
        gid = group.group_id
        state_before = group.state
        results: list[LeaveGroupMemberResult] = []
        leaving: list[ConsumerGroupMember] = []
        for member_id, instance_id in req.members:
            try:
                if instance_id is None:
                    member = self._validate_consumer_group_member(group, member_id, None)
                else:
                    found = group.static_member(instance_id)
                    if found is None:
                        raise _ApiError(ErrorCode.UNKNOWN_MEMBER_ID, f"Instance id {instance_id} is unknown.")
                    if member_id != "":
                        self._throw_if_instance_id_is_fenced(group, found, member_id, instance_id)
                    member = self._validate_consumer_group_member(group, found.member_id, None)
                if member in leaving:
                    raise _ApiError(ErrorCode.UNKNOWN_MEMBER_ID)
            except _ApiError as e:
                results.append(LeaveGroupMemberResult(member_id, instance_id, e.code))
                continue
            log.info(
                "group=%s epoch=%d classic member %s (instance %s) left the group (client reason: %s)",
                gid,
                group.group_epoch,
                member.member_id,
                instance_id,
                req.reason or "not provided",
            )
            leaving.append(member)
            results.append(LeaveGroupMemberResult(member.member_id, instance_id, ErrorCode.NONE))
        if leaving:
            records: list[ConsumerRecord] = []
            for member in leaving:
                _remove_member_records(records, gid, member.member_id)
                group.remove_member(member.member_id)
                self._cancel_timers(gid, member.member_id, out)
            names = group.subscribed_topic_names(self.topics, None, None)
            group.subscribed = ConsumerGroup.subscription_metadata(names, self.topics)
            group.group_epoch += 1
            records.append(ConsumerGroupEpochRecord(gid, group.group_epoch, group.subscribed))
            out[:0] = [Persist(record) for record in records]
            for member in leaving:
                self._emit_removed(out, group, member, REMOVED_LEAVE)
            self._maybe_update_group_state(now_ms, group, state_before, out)
        out.append(Respond(token, LeaveGroupResponse(ErrorCode.NONE, results)))
        return out

    # ============================================================================================ conversions

    def adopt_group(
        self, now_ms: int, group: ConsumerGroup, records: list[ConsumerRecord], out: list[Effect]
    ) -> None:
        """Take ``group``, converted from a classic group (the online upgrade, :mod:`coordinator.core.groups`): its
        conversion ``records`` are written and each member's session timer armed on its classic session timeout
        (Kafka ``convertToConsumerGroup``). Undo with :meth:`abandon_group` if the heartbeat that caused it fails."""
        if group.group_id in self._groups:
            raise ValueError(f"consumer group {group.group_id} exists already")
        self._groups[group.group_id] = group
        group.state = group.compute_state()
        group.state_timestamp_ms = now_ms
        out.extend(Persist(record) for record in records)
        for member in group.members.values():
            self._schedule_consumer_group_session_timeout(
                now_ms, group.group_id, member.member_id, out, _session_timeout(member)
            )

    def abandon_group(self, group_id: str) -> None:
        """Undo :meth:`adopt_group` (nothing of it was applied: the shell drops its effects)."""
        group = self._groups.pop(group_id, None)
        if group is None:
            return
        for member_id in group.members:
            self._session_deadlines.pop((group_id, member_id), None)

    def release_group(self, group_id: str, out: list[Effect]) -> ConsumerGroup | None:
        """Hand ``group_id`` over to the classic machine (the online downgrade): every member's timers are
        cancelled and the group is forgotten; its offsets stay (shared). Writes nothing (the caller writes the
        conversion's records)."""
        group = self._groups.pop(group_id, None)
        if group is None:
            return None
        for member_id in group.members:
            self._cancel_timers(group_id, member_id, out)
        return group

    def drop_empty_group(self, now_ms: int, group_id: str, out: list[Effect]) -> bool:
        """Kafka ``maybeDeleteEmptyConsumerGroup`` (a classic JoinGroup to an Empty consumer group): the group's
        tombstones are written and it is forgotten, its offsets kept, so the classic machine can create the classic
        group. False (nothing done) if the group is unknown or has members."""
        group = self._groups.get(group_id)
        if group is None or group.members:
            return False
        out.extend(Persist(record) for record in group_tombstone_records(group))
        del self._groups[group_id]
        log.info(
            "group=%s epoch=%d empty consumer group deleted for a classic JoinGroup",
            group_id,
            group.group_epoch,
        )
        self._emit(
            out,
            EMIT_GROUP_STATE,
            {
                "group": group_id,
                "from_state": group.state.value,
                "state": ConsumerGroupState.DEAD.value,
                "epoch": group.group_epoch,
                "members": 0,
            },
        )
        del now_ms
        return True

    def forget_group(self, group_id: str) -> None:
        """While loading: forget ``group_id`` without effects (its offsets stay)."""
        self._groups.pop(group_id, None)

    def invalid_heartbeat(self, req: ConsumerGroupHeartbeatRequest) -> ConsumerGroupHeartbeatResponse | None:
        """The answer Kafka's request checks give ``req`` before looking at any group (INVALID_REQUEST,
        UNSUPPORTED_ASSIGNOR ...), None if it passes them."""
        try:
            self._throw_if_consumer_group_heartbeat_request_is_invalid(req)
        except _ApiError as e:
            return ConsumerGroupHeartbeatResponse(e.code, e.message)
        return None

    # ============================================================================================ timers

    def _schedule_consumer_group_session_timeout(
        self, now_ms: int, group_id: str, member_id: str, out: list[Effect], timeout_ms: int | None = None
    ) -> None:
        """(Re)arm the member's session timer: ``timeout_ms``, by default the group's session timeout (a classic
        member's is its JoinGroup's, Kafka ``classicProtocolSessionTimeout``)."""
        deadline = now_ms + (self.config.session_timeout_ms if timeout_ms is None else timeout_ms)
        self._session_deadlines[(group_id, member_id)] = deadline
        out.append(SetTimer((TIMER_SESSION, group_id, member_id), deadline))

    def _schedule_consumer_group_rebalance_timeout(
        self,
        now_ms: int,
        group_id: str,
        member_id: str,
        member_epoch: int,
        timeout_ms: int,
        out: list[Effect],
    ) -> None:
        deadline = now_ms + max(timeout_ms, 0)
        self._rebalance_deadlines[(group_id, member_id)] = (member_epoch, deadline)
        out.append(SetTimer((TIMER_REBALANCE, group_id, member_id), deadline))

    def _cancel_consumer_group_rebalance_timeout(
        self, group_id: str, member_id: str, out: list[Effect]
    ) -> None:
        if self._rebalance_deadlines.pop((group_id, member_id), None) is not None:
            out.append(CancelTimer((TIMER_REBALANCE, group_id, member_id)))

    def _cancel_timers(self, group_id: str, member_id: str, out: list[Effect]) -> None:
        """Kafka ``cancelTimers``."""
        self._session_deadlines.pop((group_id, member_id), None)
        out.append(CancelTimer((TIMER_SESSION, group_id, member_id)))
        self._cancel_consumer_group_rebalance_timeout(group_id, member_id, out)
        self._cancel_classic_timer(self._join_deadlines, TIMER_CLASSIC_JOIN, group_id, member_id, out)
        self._cancel_classic_timer(self._sync_deadlines, TIMER_CLASSIC_SYNC, group_id, member_id, out)

    @staticmethod
    def _cancel_classic_timer(
        deadlines: dict[tuple[str, str], int], kind: str, group_id: str, member_id: str, out: list[Effect]
    ) -> None:
        if deadlines.pop((group_id, member_id), None) is not None:
            out.append(CancelTimer((kind, group_id, member_id)))

    def _schedule_consumer_group_join_timeout_if_absent(
        self, now_ms: int, group_id: str, member: ConsumerGroupMember, out: list[Effect]
    ) -> None:
        """Kafka ``scheduleConsumerGroupJoinTimeoutIfAbsent``: a classic member told to rejoin is fenced if it has
        not rejoined within its rebalance timeout."""
        key = (group_id, member.member_id)
        if key not in self._join_deadlines:
            deadline = now_ms + max(member.rebalance_timeout_ms, 0)
            self._join_deadlines[key] = deadline
            out.append(SetTimer((TIMER_CLASSIC_JOIN, group_id, member.member_id), deadline))

    def _schedule_consumer_group_sync_timeout(
        self, now_ms: int, group_id: str, member_id: str, timeout_ms: int, out: list[Effect]
    ) -> None:
        """Kafka ``scheduleConsumerGroupSyncTimeout``."""
        deadline = now_ms + max(timeout_ms, 0)
        self._sync_deadlines[(group_id, member_id)] = deadline
        out.append(SetTimer((TIMER_CLASSIC_SYNC, group_id, member_id), deadline))

    def on_timer(self, now_ms: int, key: TimerKey) -> list[Effect]:
        """A timer fired. A session timeout fences the member (reason ``expired``); a rebalance timeout fences it
        (reason ``rebalance_timeout``) only if it is still at the epoch the timeout was armed for. Stale or unknown
        keys, and any firing while loading, change nothing."""
        out: list[Effect] = []
        if len(key) != 3:
            return out
        kind, group_id, member_id = key
        if (
            not isinstance(group_id, str)
            or not isinstance(member_id, str)
            or self._status(group_id) is not None
        ):
            return out
        group = self._groups.get(group_id)
        member = group.members.get(member_id) if group is not None else None
        if kind == TIMER_SESSION:
            deadline = self._session_deadlines.get((group_id, member_id))
            if deadline is None or now_ms < deadline:
                return out
            if group is None or member is None:
                self._session_deadlines.pop((group_id, member_id), None)
                return out
            log.info(
                "group=%s epoch=%d member=%s fenced: session expired (member epoch %d)",
                group_id,
                group.group_epoch,
                member_id,
                member.member_epoch,
            )
            self._consumer_group_fence_member(now_ms, group, member, REMOVED_EXPIRED, out)
        elif kind == TIMER_REBALANCE:
            armed = self._rebalance_deadlines.get((group_id, member_id))
            if armed is None or now_ms < armed[1]:
                return out
            self._rebalance_deadlines.pop((group_id, member_id), None)
            if group is None or member is None or member.member_epoch != armed[0]:
                return out
            log.info(
                "group=%s epoch=%d member=%s fenced: did not revoke within %d ms at member epoch %d",
                group_id,
                group.group_epoch,
                member_id,
                member.rebalance_timeout_ms,
                member.member_epoch,
            )
            self._consumer_group_fence_member(now_ms, group, member, REMOVED_REBALANCE_TIMEOUT, out)
        elif kind in (TIMER_CLASSIC_JOIN, TIMER_CLASSIC_SYNC):
            deadlines = self._join_deadlines if kind == TIMER_CLASSIC_JOIN else self._sync_deadlines
            deadline = deadlines.get((group_id, member_id))
            if deadline is None or now_ms < deadline:
                return out
            del deadlines[(group_id, member_id)]
            if group is None or member is None:
                return out
            log.info(
                "group=%s epoch=%d member=%s fenced: the classic member did not %s within its rebalance timeout",
                group_id,
                group.group_epoch,
                member_id,
                "rejoin" if kind == TIMER_CLASSIC_JOIN else "sync",
            )
            reason = (
                REMOVED_CLASSIC_JOIN_TIMEOUT if kind == TIMER_CLASSIC_JOIN else REMOVED_CLASSIC_SYNC_TIMEOUT
            )
            self._consumer_group_fence_member(now_ms, group, member, reason, out)
        return out

    # ============================================================================================ offsets

    def offset_commit(self, now_ms: int, token: Any, req: OffsetCommitRequest) -> list[Effect]:
        """OffsetCommit to a consumer group (Kafka 4 ``OffsetMetadataManager.commitOffset`` with
        ``ConsumerGroup.validateOffsetCommit``): the member epoch travels in ``generation_id``. A group this
        machine does not hold gets GROUP_ID_NOT_FOUND (the shell sends those to the classic machine)."""
        out: list[Effect] = []
        status = self._status(req.group_id)
        if status is not None:
            self.offsets.reject_commit(out, token, req, status, None)
            return out
        group = self._groups.get(req.group_id)
        if group is None:
            self.offsets.reject_commit(out, token, req, ErrorCode.GROUP_ID_NOT_FOUND, None)
            return out
        if not self.offsets.accept_commit(group, req, token, out):
            return out
        if not self.replicated:
            self.offsets.store(req, now_ms, out, token)
            return out
        write = self._next_write
        prepared = self.offsets.prepare(group, req, now_ms, out, token, write)
        if prepared is not None:
            self._take_write()
            partition = self._own.partition_for(req.group_id)
            assert partition is not None
            self._writes[write] = _PendingCommit(prepared, partition)
        return out

    def offset_fetch(self, req: OffsetFetchRequest) -> OffsetFetchResponse:
        """OffsetFetch of a consumer group (COORDINATOR_LOAD_IN_PROGRESS while loading, NOT_COORDINATOR for a
        partition not owned)."""
        status = self._status(req.group_id)
        if status is not None:
            return OffsetFetchResponse(status)
        return self.offsets.fetch(self._groups.get(req.group_id), req)

    # ============================================================================================ admin

    def consumer_group_describe(self, group_ids: list[str]) -> list[DescribedConsumerGroup]:
        """ConsumerGroupDescribe (Kafka ``consumerGroupDescribe`` / ``ConsumerGroup.asDescribedGroup``): the
        assignor named is the one the group would use now. Unknown: GROUP_ID_NOT_FOUND."""
        described: list[DescribedConsumerGroup] = []
        for group_id in group_ids:
            status = self._status(group_id)
            if status is not None:
                described.append(DescribedConsumerGroup(group_id, status))
                continue
            group = self._groups.get(group_id)
            if group is None:
                described.append(
                    DescribedConsumerGroup(
                        group_id, ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} not found."
                    )
                )
                continue
            members = [
                DescribedConsumerMember(
                    member_id=m.member_id,
                    instance_id=m.instance_id,
                    rack_id=m.rack_id,
                    member_epoch=m.member_epoch,
                    client_id=m.client_id,
                    client_host=m.client_host,
                    subscribed_topic_names=m.subscribed_topic_names,
                    subscribed_topic_regex=m.subscribed_topic_regex,
                    assignment=assignment_to_wire(m.assigned),
                    target_assignment=assignment_to_wire(group.target.get(m.member_id, EMPTY_ASSIGNMENT)),
                )
                for m in group.members.values()
            ]
            described.append(
                DescribedConsumerGroup(
                    group_id,
                    ErrorCode.NONE,
                    state=group.state.value,
                    group_epoch=group.group_epoch,
                    assignment_epoch=group.assignment_epoch,
                    assignor_name=group.preferred_assignor(None, None) or self.config.default_assignor,
                    members=members,
                )
            )
        return described

    def describe_groups(self, group_ids: list[str]) -> list[DescribedGroup]:
        """DescribeGroups for consumer groups as Kafka 4 answers it: a consumer group is not a classic group, so it
        is GROUP_ID_NOT_FOUND with the message ``Group <id> is not a classic group.``, state ``Dead``, no members
        (DescribeGroups v6; the shell answers v0-v5 as Kafka does, ``Dead`` without the error). Ids this machine
        does not hold are described as unknown (``Dead``, NONE); the shell asks the classic machine for those."""
        described: list[DescribedGroup] = []
        for group_id in group_ids:
            status = self._status(group_id)
            if status is not None:
                described.append(DescribedGroup(group_id, status, ""))
            elif group_id in self._groups:
                described.append(
                    DescribedGroup(
                        group_id,
                        ErrorCode.GROUP_ID_NOT_FOUND,
                        ConsumerGroupState.DEAD.value,
                        error_message=f"Group {group_id} is not a classic group.",
                    )
                )
            else:
                described.append(DescribedGroup(group_id, ErrorCode.NONE, ConsumerGroupState.DEAD.value))
        return described

    def list_groups(self, states: list[str] | None) -> ListGroupsResponse:
        """ListGroups (Kafka ``listGroups`` / ``asListedGroup``): every consumer group with protocol type and
        group type ``consumer`` and its state's name; ``states`` filters case-insensitively (empty or None: all)."""
        wanted = {s.strip().lower() for s in states} if states else None
        listed = [
            ListedGroup(g.group_id, PROTOCOL_TYPE, g.state.value, GROUP_TYPE)
            for g in self._groups.values()
            if wanted is None or g.state.value.lower() in wanted
        ]
        error = ErrorCode.COORDINATOR_LOAD_IN_PROGRESS if self.loading else ErrorCode.NONE
        return ListGroupsResponse(error, listed)

    def delete_groups(self, now_ms: int, token: Any, group_ids: list[str]) -> list[Effect]:
        """DeleteGroups (Kafka ``validateDeleteGroup`` / ``createGroupTombstoneRecords``): an Empty group goes with
        its offsets (tombstones of its target epoch and group epoch, and the offsets' group tombstone); one with
        members is NON_EMPTY_GROUP; an unknown one GROUP_ID_NOT_FOUND. The answer comes last."""
        out: list[Effect] = []
        results: list[DeletedGroup] = []
        for group_id in group_ids:
            group = self._groups.get(group_id)
            status = self._status(group_id)
            if status is not None:
                results.append(DeletedGroup(group_id, status))
            elif group is None:
                results.append(DeletedGroup(group_id, ErrorCode.GROUP_ID_NOT_FOUND))
            elif group.members:
                results.append(DeletedGroup(group_id, ErrorCode.NON_EMPTY_GROUP))
            else:
                # Kafka's order: the offsets' tombstones, then the group's.
                out.append(Persist(GroupTombstoneRecord(group_id)))
                for gid, member_id in [(group_id, m) for m in group.target]:
                    out.append(Persist(ConsumerTombstoneRecord(gid, TOMBSTONE_TARGET, member_id)))
                out.append(Persist(ConsumerTombstoneRecord(group_id, TOMBSTONE_TARGET_EPOCH)))
                out.append(Persist(ConsumerTombstoneRecord(group_id, TOMBSTONE_GROUP)))
                del self._groups[group_id]
                self.offsets.delete_group(group_id)
                log.info("group=%s epoch=%d deleted", group_id, group.group_epoch)
                self._emit(
                    out,
                    EMIT_GROUP_STATE,
                    {
                        "group": group_id,
                        "from_state": group.state.value,
                        "state": ConsumerGroupState.DEAD.value,
                        "epoch": group.group_epoch,
                        "members": 0,
                    },
                )
                group.state = ConsumerGroupState.DEAD
                group.state_timestamp_ms = now_ms
                results.append(DeletedGroup(group_id, ErrorCode.NONE))
        out.append(Respond(token, DeleteGroupsResponse(results)))
        return out

    # ============================================================================================ durability

    @staticmethod
    def is_consumer_record(record: object) -> bool:
        """True for the records only consumer groups write."""
        return isinstance(
            record,
            (
                ConsumerGroupEpochRecord,
                ConsumerMemberRecord,
                ConsumerTargetEpochRecord,
                ConsumerTargetMemberRecord,
                ConsumerCurrentAssignmentRecord,
                ConsumerTombstoneRecord,
            ),
        )

    def takes_record(self, record: object) -> bool:
        """While loading: True if ``record`` is this machine's to replay: a consumer-group record, or an offset
        commit / group tombstone of a group this machine holds at this point of the log."""
        if self.is_consumer_record(record):
            return True
        if isinstance(record, (OffsetCommitRecord, GroupTombstoneRecord)):
            return record.group_id in self._groups
        return False

    def begin_loading(self, partition: int | None = None) -> list[Effect]:
        """Start (re)loading from the durable log.

        Single broker (``partition`` None): every consumer group is forgotten with its offsets and timers, and
        until :meth:`finish_loading` requests get COORDINATOR_LOAD_IN_PROGRESS. The shell calls the classic
        machine's ``begin_loading`` first (it clears every offset).

        Replicated mode: offsets partition ``partition`` becomes *loading* (its groups answer
        COORDINATOR_LOAD_IN_PROGRESS until ``finish_loading(now_ms, partition)``); a partition already loading or
        owned stays as it is. ``ValueError`` for a partition out of range or for the wrong mode."""
        out: list[Effect] = []
        own = self._own
        if isinstance(own, WholeOwnership):
            if partition is not None:
                raise ValueError("single-broker mode loads everything at once: begin_loading()")
            for group_id in list(self._groups):
                self._unload_group(group_id, out)
            own.loading = True
            return out
        if partition is None:
            raise ValueError(
                "replicated mode loads one offsets partition at a time: begin_loading(partition)"
            )
        own.check(partition)
        if partition not in own.loading and partition not in own.owned:
            own.loading.add(partition)
            log.info(
                "offsets partition %d loading: its consumer groups answer COORDINATOR_LOAD_IN_PROGRESS",
                partition,
            )
        return out

    def _unload_group(self, group_id: str, out: list[Effect]) -> None:
        """Forget ``group_id``: its timers are cancelled, its offsets go (Kafka ``onUnloaded``)."""
        group = self._groups.pop(group_id)
        for member_id in group.members:
            self._cancel_timers(group_id, member_id, out)
        self.offsets.delete_group(group_id)

    def unload(self, partition: int, now_ms: int) -> list[Effect]:
        """Replicated mode: this coordinator resigned offsets partition ``partition``: neither loading nor owned
        any more; its consumer groups are forgotten with their offsets and timers, and answer NOT_COORDINATOR from
        now on. Two-phase writes in flight are still answered when their :meth:`persisted` comes."""
        del now_ms
        own = self._own
        if not isinstance(own, Ownership):
            raise ValueError("unload(partition) is replicated mode's")
        own.check(partition)
        own.loading.discard(partition)
        own.owned.discard(partition)
        self._late_offsets.pop(partition, None)
        out: list[Effect] = []
        gone = [g for g in self._groups if own.partition_for(g) == partition]
        for group_id in gone:
            self._unload_group(group_id, out)
        log.info("offsets partition %d unloaded: %d consumer groups gone", partition, len(gone))
        return out

    def persisted(self, write: int, error: int, now_ms: int, leader_epoch: int = -1) -> list[Effect]:
        """The outcome of two-phase write ``write`` (replicated mode; ``error`` 0: acknowledged).

        * a heartbeat's records: the answer prepared when the heartbeat was handled, or, when the append failed,
          Kafka's mapped error (``GroupCoordinatorService`` ``normalizeException``: NOT_COORDINATOR for a lost
          leadership or storage error, COORDINATOR_NOT_AVAILABLE for missing replicas or a timeout,
          UNKNOWN_SERVER_ERROR otherwise). The in-memory change stays here: the shell reloads the partition from
          its log (Kafka reverts to the last written offset; see the module docstring);
        * a commit: completed as the classic machine's (the offsets become visible only now; ``commit`` events
          carry ``offsets_partition`` and ``leader_epoch``).

        An unknown ``write`` changes nothing."""
        out: list[Effect] = []
        pending = self._writes.pop(write, None)
        if isinstance(pending, _PendingHeartbeat):
            if error == ErrorCode.NONE:
                out.append(Respond(pending.token, pending.response))
            else:
                mapped = _heartbeat_write_error(error)
                log.warning(
                    "group=%s member=%s epoch=%d heartbeat records not written (error %d): answered %s",
                    pending.group_id,
                    pending.member_id,
                    pending.response.member_epoch,
                    error,
                    mapped.name,
                )
                out.append(Respond(pending.token, ConsumerGroupHeartbeatResponse(mapped)))
        elif isinstance(pending, _PendingCommit):
            mapped = commit_error(error)
            target = self._acked_offsets_target(pending) if mapped is ErrorCode.NONE else None
            self.offsets.complete(
                pending.commit,
                mapped,
                target,
                out,
                extra={"offsets_partition": pending.offsets_partition, "leader_epoch": leader_epoch},
            )
        del now_ms
        return out

    def _acked_offsets_target(self, pending: _PendingCommit) -> dict[tuple[str, int], OffsetEntry] | None:
        """Where an acknowledged commit's offsets go (as the classic machine's replicated durability): the group's
        offsets if its partition is owned and the group still there, a cache applied at the end of the load if the
        partition loads (the load may have read the log before the commit), nowhere if it is not owned."""
        own = self._own
        group_id = pending.commit.group.group_id
        partition = pending.offsets_partition
        if isinstance(own, Ownership) and partition in own.loading:
            return self._late_offsets.setdefault(partition, {}).setdefault(group_id, {})
        if self._status(group_id) is not None or group_id not in self._groups:
            return None
        return self.offsets.group_offsets(group_id)

    def load(self, record: object) -> None:
        """Replay one record (log order), as Kafka's ``replay`` methods do: the last record of a key wins, a
        tombstone deletes its key (a member goes with its member tombstone, a group with its group tombstone).
        ``TypeError`` for a record :meth:`takes_record` refuses; replicated mode: ``ValueError`` for a record of a
        group whose offsets partition is not loading."""
        own = self._own
        if isinstance(own, Ownership):
            group_id = getattr(record, "group_id", None)
            if not isinstance(group_id, str) or own.partition_for(group_id) not in own.loading:
                raise ValueError(f"record of group {group_id!r}: its offsets partition is not loading")
        if isinstance(record, OffsetCommitRecord):
            self.offsets.replay(record)
            return
        if isinstance(record, GroupTombstoneRecord):
            self._groups.pop(record.group_id, None)
            self.offsets.delete_group(record.group_id)
            return
        if not self.is_consumer_record(record):
            raise TypeError(f"not a consumer group record: {record!r}")
        record = cast(ConsumerRecord, record)
        group_id = record.group_id
        group = self._groups.get(group_id)
        if isinstance(record, ConsumerTombstoneRecord):
            if group is None:
                return
            self._replay_tombstone(group, record)
            return
        if group is None:
            group = ConsumerGroup(group_id)
            self._groups[group_id] = group
        if isinstance(record, ConsumerGroupEpochRecord):
            group.group_epoch = record.epoch
            group.subscribed = record.subscribed
        elif isinstance(record, ConsumerMemberRecord):
            old = group.members.get(record.member_id) or ConsumerGroupMember(record.member_id)
            group.update_member(
                dataclasses.replace(
                    old,
                    instance_id=record.instance_id,
                    rack_id=record.rack_id,
                    client_id=record.client_id,
                    client_host=record.client_host,
                    subscribed_topic_names=record.subscribed_topic_names,
                    subscribed_topic_regex=record.subscribed_topic_regex,
                    server_assignor=record.server_assignor,
                    rebalance_timeout_ms=record.rebalance_timeout_ms,
                    classic=record.classic,
                )
            )
        elif isinstance(record, ConsumerTargetEpochRecord):
            group.assignment_epoch = record.assignment_epoch
        elif isinstance(record, ConsumerTargetMemberRecord):
            group.target[record.member_id] = assignment_from_text(record.partitions)
        else:
            old = group.members.get(record.member_id) or ConsumerGroupMember(record.member_id)
            group.update_member(
                dataclasses.replace(
                    old,
                    member_epoch=record.member_epoch,
                    previous_member_epoch=record.previous_member_epoch,
                    state=MemberState(record.state),
                    assigned=assignment_from_text(record.assigned),
                    pending_revocation=assignment_from_text(record.pending_revocation),
                )
            )

    def _replay_tombstone(self, group: ConsumerGroup, record: ConsumerTombstoneRecord) -> None:
        kind, member_id = record.kind, record.member_id
        if kind == TOMBSTONE_CURRENT and member_id is not None:
            member = group.members.get(member_id)
            if member is not None:
                group.update_member(
                    dataclasses.replace(member, member_epoch=LEAVE_EPOCH, assigned={}, pending_revocation={})
                )
        elif kind == TOMBSTONE_TARGET and member_id is not None:
            group.target.pop(member_id, None)
        elif kind == TOMBSTONE_MEMBER and member_id is not None:
            target = group.target.get(member_id)
            group.remove_member(member_id)
            if target is not None:
                group.target[member_id] = target
        elif kind == TOMBSTONE_TARGET_EPOCH:
            group.assignment_epoch = -1
        elif kind == TOMBSTONE_GROUP:
            del self._groups[group.group_id]

    def finish_loading(self, now_ms: int, partition: int | None = None) -> list[Effect]:
        """End loading (Kafka ``onLoaded``): every loaded group gets its state; every member a session timer, and a
        rebalance timer if it is revoking. Replicated mode: for the groups of ``partition``, which becomes owned
        (offsets acknowledged while it loaded are applied); nothing if it is not loading."""
        out: list[Effect] = []
        own = self._own
        if isinstance(own, WholeOwnership):
            if partition is not None:
                raise ValueError("single-broker mode: finish_loading(now_ms)")
            own.loading = False
            loaded = list(self._groups.values())
        else:
            if partition is None:
                raise ValueError("replicated mode: finish_loading(now_ms, partition)")
            if partition not in own.loading:
                return out
            own.loading.discard(partition)
            own.owned.add(partition)
            for group_id, late in self._late_offsets.pop(partition, {}).items():
                if group_id in self._groups:
                    self.offsets.update(group_id, late)
            loaded = [g for g in self._groups.values() if own.partition_for(g.group_id) == partition]
        for group in loaded:
            group.state = group.compute_state()
            group.state_timestamp_ms = now_ms
            log.info(
                "group=%s epoch=%d loaded in %s with %d members (target epoch %d)",
                group.group_id,
                group.group_epoch,
                group.state.value,
                len(group.members),
                group.assignment_epoch,
            )
            for member in group.members.values():
                self._schedule_consumer_group_session_timeout(
                    now_ms, group.group_id, member.member_id, out, _session_timeout(member)
                )
                if member.state is MemberState.UNREVOKED_PARTITIONS:
                    self._schedule_consumer_group_rebalance_timeout(
                        now_ms,
                        group.group_id,
                        member.member_id,
                        member.member_epoch,
                        member.rebalance_timeout_ms,
                        out,
                    )
        return out

    # ============================================================================================ events

    def _maybe_update_group_state(
        self, now_ms: int, group: ConsumerGroup, before: ConsumerGroupState, out: list[Effect]
    ) -> None:
        """Kafka ``maybeUpdateGroupState``; a change is a ``group_state`` event (group, state, epoch: the group
        epoch, from_state, members)."""
        state = group.compute_state()
        group.state = state
        if state is before:
            return
        group.state_timestamp_ms = now_ms
        log.info("group=%s epoch=%d %s -> %s", group.group_id, group.group_epoch, before.value, state.value)
        self._emit(
            out,
            EMIT_GROUP_STATE,
            {
                "group": group.group_id,
                "from_state": before.value,
                "state": state.value,
                "epoch": group.group_epoch,
                "members": len(group.members),
            },
        )

    def _emit_removed(
        self, out: list[Effect], group: ConsumerGroup, member: ConsumerGroupMember, reason: str
    ) -> None:
        self._emit(
            out,
            EMIT_MEMBER_REMOVED,
            {
                "group": group.group_id,
                "member": member.member_id,
                "epoch": group.group_epoch,
                "member_epoch": member.member_epoch,
                "instance_id": member.instance_id,
                "reason": reason,
            },
        )

    def _emit(self, out: list[Effect], kind: str, fields: dict[str, Any]) -> None:
        if self._emit_events:
            out.append(Emit(kind, fields))


# ================================================================================================ writes

#: First write id of this machine's two-phase writes: far from the classic machine's (which count from 1), so a
#: shell may keep both machines' writes in one table.
FIRST_WRITE_ID = 1 << 40


@dataclasses.dataclass(slots=True)
class _PendingHeartbeat:
    """A heartbeat whose records are being written: its answer, given when they are."""

    token: Any
    response: ConsumerGroupHeartbeatResponse
    group_id: str
    member_id: str


@dataclasses.dataclass(slots=True)
class _PendingCommit:
    commit: PreparedCommit
    offsets_partition: int


def _heartbeat_write_error(append_error: int) -> ErrorCode:
    """Kafka ``GroupCoordinatorService.normalizeException`` for a failed append behind a heartbeat."""
    e = ErrorCode
    if append_error in (
        e.UNKNOWN_TOPIC_OR_PARTITION,
        e.NOT_ENOUGH_REPLICAS,
        e.NOT_ENOUGH_REPLICAS_AFTER_APPEND,
        e.REQUEST_TIMED_OUT,
    ):
        return e.COORDINATOR_NOT_AVAILABLE
    if append_error in (e.NOT_LEADER_OR_FOLLOWER, e.KAFKA_STORAGE_ERROR):
        return e.NOT_COORDINATOR
    return e.UNKNOWN_SERVER_ERROR


# ================================================================================================ records


def _member_record(group_id: str, m: ConsumerGroupMember) -> ConsumerMemberRecord:
    return ConsumerMemberRecord(
        group_id,
        m.member_id,
        m.instance_id,
        m.rack_id,
        m.client_id,
        m.client_host,
        m.subscribed_topic_names,
        m.subscribed_topic_regex,
        m.server_assignor,
        m.rebalance_timeout_ms,
        m.classic,
    )


def _current_record(group_id: str, m: ConsumerGroupMember) -> ConsumerCurrentAssignmentRecord:
    return ConsumerCurrentAssignmentRecord(
        group_id,
        m.member_id,
        m.member_epoch,
        m.previous_member_epoch,
        m.state.value,
        assignment_text(m.assigned),
        assignment_text(m.pending_revocation),
    )


def _remove_member_records(records: list[ConsumerRecord], group_id: str, member_id: str) -> None:
    """Kafka ``removeMember``: the tombstones of a member, in Kafka's order."""
    records.append(ConsumerTombstoneRecord(group_id, TOMBSTONE_CURRENT, member_id))
    records.append(ConsumerTombstoneRecord(group_id, TOMBSTONE_TARGET, member_id))
    records.append(ConsumerTombstoneRecord(group_id, TOMBSTONE_MEMBER, member_id))


def _session_timeout(member: ConsumerGroupMember) -> int | None:
    """A classic member's session timeout (its JoinGroup's); None: the group's."""
    return None if member.classic is None else member.classic.session_timeout_ms


def _classic_join_answer(member: ConsumerGroupMember, protocol_name: str) -> JoinGroupResponse:
    """A classic member's JoinGroup answer from the consumer group: its member id, its member epoch as the
    generation, the protocol it chose first."""
    return JoinGroupResponse(
        ErrorCode.NONE,
        member_id=member.member_id,
        generation_id=member.member_epoch,
        protocol_type=CLASSIC_PROTOCOL_TYPE,
        protocol_name=protocol_name,
    )
