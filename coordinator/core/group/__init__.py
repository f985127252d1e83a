# pyright: strict
"""Kafka's classic GroupCoordinator (spec PART 2) as a pure state machine: no sockets, threads or clocks.

How a shell drives it
---------------------
1. Create one :class:`GroupCoordinator` (``GroupCoordinator(GroupConfig(...))``). If a durable log exists, replay
   it: ``begin_loading()``, ``load(record)`` for every record in log order (decode with
   :func:`decode_record`), then ``finish_loading(now_ms)``, applying the effects each returns.
2. For every group request, decode it into the version-neutral request dataclass, pick an opaque ``token`` that
   identifies the request (e.g. ``(connection, correlation_id)``) and call the method with the current
   coordinator time in ms::

       effects = coordinator.join_group(now_ms, token, JoinGroupRequest(...))

   ``offset_fetch``, ``describe_groups`` and ``list_groups`` are reads and return the response directly.
3. Apply the returned effects **in order**:

   * :class:`Persist` -- append ``encode_record(effect.record)`` to the durable log; the append must be complete
     before any later :class:`Respond` of the same list is delivered (the machine assumes the write succeeded);
   * :class:`Respond` -- encode ``effect.response`` for the version of the request behind ``effect.token`` and
     send it. A JoinGroup/SyncGroup may be answered in a later call (another member's request or a timer);
   * :class:`SetTimer` -- (re)arm a timer for ``effect.key`` at ``effect.deadline_ms``, replacing one with the same
     key; :class:`CancelTimer` -- drop it;
   * :class:`Emit` -- write a history event (``effect.kind``, ``effect.fields``).
4. When a timer fires, call ``on_timer(now_ms, key)`` and apply its effects the same way. Stale firings are
   harmless.

The shell answers what the machine does not model: FindCoordinator (``harness.kernel.javacompat.partition_for``),
NOT_COORDINATOR for groups another broker owns (single-broker mode), authorization, UNKNOWN_TOPIC_OR_PARTITION for
commits to unknown topics, and version-specific response shapes.

Replicated mode: ``own_by_partition(n)`` once, then per ``__consumer_offsets`` partition ``p`` this
broker leads: ``begin_loading(p)``, ``load(record)`` for each of its committed records, ``finish_loading(now_ms,
p)``; when it resigns ``unload(p, now_ms)``. Persist effects with a ``write`` id are appended as one batch and
their outcome reported with ``persisted(write, error, now_ms, leader_epoch)``; the machine answers NOT_COORDINATOR
/ COORDINATOR_LOAD_IN_PROGRESS from its own ownership (:mod:`~coordinator.core.group.ownership`).

Modules: :mod:`~coordinator.core.group.api` (requests, responses, effects), :mod:`~coordinator.core.group.errors`,
:mod:`~coordinator.core.group.config`, :mod:`~coordinator.core.group.records` (durable records),
:mod:`~coordinator.core.group.machine` (the coordinator), which delegates to
:mod:`~coordinator.core.group.offsets` (the committed offsets of every group type: storage, commit, fetch; the
group validates through :class:`~coordinator.core.group.offsets.OffsetGroup`), :mod:`~coordinator.core.group.admin`
(describe, list, delete groups), :mod:`~coordinator.core.group.durability` (loading, unloading and writes of
single-broker or replicated mode, as one of two strategies), :mod:`~coordinator.core.group.loading` (replay of the
group log, the group record), :mod:`~coordinator.core.group.group` and :mod:`~coordinator.core.group.member`
(internal state).
"""

from coordinator.core.group.api import (
    EMIT_COMMIT,
    EMIT_COMMIT_REJECTED,
    EMIT_GROUP_STATE,
    EMIT_HEARTBEAT_ERROR,
    EMIT_MEMBER_ADDED,
    EMIT_MEMBER_REMOVED,
    EMIT_REBALANCE_BEGIN,
    EMIT_REBALANCE_END,
    NO_GENERATION,
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
    DeletedGroup,
    DeleteGroupsRequest,
    DeleteGroupsResponse,
    DescribedGroup,
    DescribedMember,
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
    ListedGroup,
    ListGroupsRequest,
    ListGroupsResponse,
    OffsetCommitPartition,
    OffsetCommitPartitionResult,
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetFetchPartition,
    OffsetFetchRequest,
    OffsetFetchResponse,
    Persist,
    Respond,
    Response,
    SetTimer,
    SyncGroupRequest,
    SyncGroupResponse,
    TimerKey,
)
from coordinator.core.group.config import NEW_MEMBER_JOIN_TIMEOUT_MS, GroupConfig
from coordinator.core.group.errors import ErrorCode
from coordinator.core.group.machine import REMOVED_GROUP_MAX_SIZE, GroupCoordinator
from coordinator.core.group.records import (
    GroupMetadataRecord,
    GroupTombstoneRecord,
    MemberRecord,
    OffsetCommitRecord,
    Record,
    decode_record,
    encode_record,
    record_from_dict,
)

__all__ = [
    "EMIT_COMMIT",
    "EMIT_COMMIT_REJECTED",
    "EMIT_GROUP_STATE",
    "EMIT_HEARTBEAT_ERROR",
    "EMIT_MEMBER_ADDED",
    "EMIT_MEMBER_REMOVED",
    "EMIT_REBALANCE_BEGIN",
    "EMIT_REBALANCE_END",
    "NEW_MEMBER_JOIN_TIMEOUT_MS",
    "NO_GENERATION",
    "REMOVED_EXPIRED",
    "REMOVED_FENCED",
    "REMOVED_GROUP_MAX_SIZE",
    "REMOVED_JOIN_TIMEOUT",
    "REMOVED_LEAVE",
    "REMOVED_RESET",
    "REMOVED_SYNC_TIMEOUT",
    "TIMER_HEARTBEAT",
    "TIMER_JOIN",
    "TIMER_PENDING",
    "TIMER_SYNC",
    "CancelTimer",
    "DeleteGroupsRequest",
    "DeleteGroupsResponse",
    "DeletedGroup",
    "DescribeGroupsRequest",
    "DescribeGroupsResponse",
    "DescribedGroup",
    "DescribedMember",
    "Effect",
    "Emit",
    "ErrorCode",
    "GroupConfig",
    "GroupCoordinator",
    "GroupMetadataRecord",
    "GroupState",
    "GroupTombstoneRecord",
    "HeartbeatRequest",
    "HeartbeatResponse",
    "JoinGroupMember",
    "JoinGroupRequest",
    "JoinGroupResponse",
    "LeaveGroupMemberResult",
    "LeaveGroupRequest",
    "LeaveGroupResponse",
    "ListGroupsRequest",
    "ListGroupsResponse",
    "ListedGroup",
    "MemberRecord",
    "OffsetCommitPartition",
    "OffsetCommitPartitionResult",
    "OffsetCommitRecord",
    "OffsetCommitRequest",
    "OffsetCommitResponse",
    "OffsetFetchPartition",
    "OffsetFetchRequest",
    "OffsetFetchResponse",
    "Persist",
    "Record",
    "Respond",
    "Response",
    "SetTimer",
    "SyncGroupRequest",
    "SyncGroupResponse",
    "TimerKey",
    "decode_record",
    "encode_record",
    "record_from_dict",
]
