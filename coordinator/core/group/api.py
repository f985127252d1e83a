# pyright: strict
"""Version-neutral requests, responses and effects of the pure group coordinator.

The shell (the asyncio broker, or a simulator) decodes a wire request of any version into one of the request
dataclasses below, calls the matching :class:`~coordinator.core.group.machine.GroupCoordinator` method, and applies the
returned **effects** in list order. Fields that a given wire version lacks are left at their defaults; the shell
maps responses back to the version it answers with (e.g. LeaveGroup v0-2 takes the single member's error as the
top-level error, OffsetFetch v0-1 copies a top-level error into every partition).

Effects
-------
* :class:`Respond` ``(token, response)``: deliver ``response`` to the request the shell tagged ``token``. Requests
  that may be parked (JoinGroup, SyncGroup) are answered later, by another call (another member's request or a
  timer), possibly together with other members' parked requests. Every token passed in is answered exactly once
  as long as the coordinator stays loaded; :meth:`GroupCoordinator.begin_loading` answers what is still parked.
* :class:`SetTimer` ``(key, deadline_ms)``: (re)arm the timer ``key``; replaces any timer with the same key. When
  it fires, call ``on_timer(now_ms, key)`` with ``now_ms >= deadline_ms``. A late or stale firing is harmless: the
  machine re-checks its own state and ignores a key it no longer cares about.
* :class:`CancelTimer` ``(key)``: drop the timer ``key`` if armed (a no-op otherwise).
* :class:`Persist` ``(record)``: append ``record`` (see :mod:`coordinator.core.group.records`) to the durable log.
  The machine treats it as **written synchronously and successfully**: the shell must finish the append before it
  delivers any :class:`Respond` that comes *after* the Persist in the same effect list (a SyncGroup answer after
  the group record, an OffsetCommit answer after its offsets). Write failures are not modelled.
* :class:`Emit` ``(kind, fields)``: a history event for the harness; ``kind`` is one of the ``EMIT_*`` constants,
  ``fields`` always name ``group``, and ``generation`` and ``member`` where they apply.

Timer keys are tuples: ``("heartbeat", group_id, member_id)``, ``("pending", group_id, member_id)``,
``("join", group_id)`` and ``("sync", group_id, generation_id)``.

Responses are plain dataclasses that the machine may share between calls (all heartbeat answers with the same
error are one object, a leader's member list may be referenced by several responses): treat them as read-only.
Requests are not kept after the call returns, except the byte strings of protocols and assignments.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Protocol

from coordinator.core.group.errors import ErrorCode
from coordinator.core.group.records import Record

__all__ = [
    "EMIT_COMMIT",
    "EMIT_COMMIT_REJECTED",
    "EMIT_GROUP_STATE",
    "EMIT_HEARTBEAT_ERROR",
    "EMIT_MEMBER_ADDED",
    "EMIT_MEMBER_REMOVED",
    "EMIT_REBALANCE_BEGIN",
    "EMIT_REBALANCE_END",
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
    "GroupState",
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
    "NO_GENERATION",
    "OffsetCommitPartition",
    "OffsetCommitPartitionResult",
    "OffsetCommitRequest",
    "OffsetCommitResponse",
    "OffsetFetchPartition",
    "OffsetFetchRequest",
    "OffsetFetchResponse",
    "Persist",
    "REMOVED_EXPIRED",
    "REMOVED_FENCED",
    "REMOVED_JOIN_TIMEOUT",
    "REMOVED_LEAVE",
    "REMOVED_RESET",
    "REMOVED_SYNC_TIMEOUT",
    "Respond",
    "Response",
    "SetTimer",
    "SyncGroupRequest",
    "SyncGroupResponse",
    "TIMER_HEARTBEAT",
    "TIMER_JOIN",
    "TIMER_PENDING",
    "TIMER_SYNC",
    "TimerKey",
]

#: Generation reported when there is none (Kafka ``GroupCoordinator.NoGeneration``).
NO_GENERATION = -1


class GroupState(StrEnum):
    """Group states; the values are the names DescribeGroups / ListGroups report (spec 2.4)."""

    EMPTY = "Empty"
    PREPARING_REBALANCE = "PreparingRebalance"
    COMPLETING_REBALANCE = "CompletingRebalance"
    STABLE = "Stable"
    DEAD = "Dead"


# --------------------------------------------------------------------------------------------------------------
# JoinGroup (11)


@dataclass(slots=True)
class JoinGroupRequest:
    """A JoinGroup of any version (v0-v9).

    * ``member_id`` is ``""`` on a first join.
    * ``api_version`` matters for: v0 (no rebalance timeout: the session timeout is used), v4+ (a dynamic member's
      first join gets MEMBER_ID_REQUIRED), v9+ (a static leader replaced in Stable gets ``skip_assignment``).
    * ``rebalance_timeout_ms``: the client's ``max.poll.interval.ms``; ignored for v0 (and when negative).
    * ``protocols``: ``(assignor name, subscription metadata)`` in the member's preference order.
    * ``reason`` (v8+) is only logged.
    """

    group_id: str
    member_id: str
    session_timeout_ms: int
    protocol_type: str
    protocols: list[tuple[str, bytes]]
    rebalance_timeout_ms: int = -1
    api_version: int = 7
    group_instance_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    reason: str | None = None


@dataclass(slots=True)
class JoinGroupMember:
    """One entry of the leader's member list: id, instance id and metadata of the selected protocol."""

    member_id: str
    group_instance_id: str | None
    metadata: bytes


@dataclass(slots=True)
class JoinGroupResponse:
    """JoinGroup answer. On error: ``generation_id == -1``, no protocol, ``leader == ""``, no members, and
    ``member_id`` is the id the client should use next (the new id with MEMBER_ID_REQUIRED, else ``""`` or the id
    it sent). ``members`` is non-empty only for the leader (or a v9+ static leader with ``skip_assignment``)."""

    error: ErrorCode
    member_id: str = ""
    generation_id: int = NO_GENERATION
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader: str = ""
    skip_assignment: bool = False
    members: list[JoinGroupMember] = field(default_factory=list[JoinGroupMember])


# --------------------------------------------------------------------------------------------------------------
# SyncGroup (14)


@dataclass(slots=True)
class SyncGroupRequest:
    """A SyncGroup of any version. ``assignments`` is ``[(member_id, assignment bytes)]``, sent by the leader
    only. ``protocol_type`` / ``protocol_name`` (v5+) are checked against the group's when not ``None``."""

    group_id: str
    generation_id: int
    member_id: str
    assignments: list[tuple[str, bytes]] = field(default_factory=list[tuple[str, bytes]])
    group_instance_id: str | None = None
    protocol_type: str | None = None
    protocol_name: str | None = None


@dataclass(slots=True)
class SyncGroupResponse:
    """SyncGroup answer: the member's own assignment (``b""`` on error)."""

    error: ErrorCode
    assignment: bytes = b""
    protocol_type: str | None = None
    protocol_name: str | None = None


# --------------------------------------------------------------------------------------------------------------
# Heartbeat (12)


@dataclass(slots=True)
class HeartbeatRequest:
    group_id: str
    generation_id: int
    member_id: str
    group_instance_id: str | None = None


@dataclass(slots=True)
class HeartbeatResponse:
    error: ErrorCode


# --------------------------------------------------------------------------------------------------------------
# LeaveGroup (13)


@dataclass(slots=True)
class LeaveGroupRequest:
    """Batch form (v3+). A v0-2 request is ``members=[(member_id, None)]``. A member entry with ``member_id == ""``
    and an instance id removes that static member (admin-style removal)."""

    group_id: str
    members: list[tuple[str, str | None]]
    reason: str | None = None


@dataclass(slots=True)
class LeaveGroupMemberResult:
    member_id: str
    group_instance_id: str | None
    error: ErrorCode


@dataclass(slots=True)
class LeaveGroupResponse:
    """Top-level ``error`` (group-level problems) plus one result per requested member, in request order (empty
    when the top-level error is set)."""

    error: ErrorCode
    members: list[LeaveGroupMemberResult] = field(default_factory=list[LeaveGroupMemberResult])


# --------------------------------------------------------------------------------------------------------------
# OffsetCommit (8) / OffsetFetch (9)


@dataclass(slots=True)
class OffsetCommitPartition:
    topic: str
    partition: int
    offset: int
    metadata: str | None = ""
    leader_epoch: int = -1


@dataclass(slots=True)
class OffsetCommitRequest:
    """An OffsetCommit of any version. ``generation_id == -1`` with ``member_id == ""`` is a simple (admin /
    manually assigned consumer) commit. The shell answers partitions of topics it does not know with
    UNKNOWN_TOPIC_OR_PARTITION itself and passes only the rest (as Kafka's ``KafkaApis`` does). For a consumer
    group (v9+) ``generation_id`` is the member epoch; ``api_version`` (None: not given) lets the consumer machine
    refuse a consumer-protocol member's commit below v9 as Kafka does; the classic machine ignores it."""

    group_id: str
    offsets: list[OffsetCommitPartition]
    generation_id: int = -1
    member_id: str = ""
    group_instance_id: str | None = None
    api_version: int | None = None


@dataclass(slots=True)
class OffsetCommitPartitionResult:
    topic: str
    partition: int
    error: ErrorCode


@dataclass(slots=True)
class OffsetCommitResponse:
    """One result per requested partition, in request order (a request-level error is repeated per partition)."""

    partitions: list[OffsetCommitPartitionResult]


@dataclass(slots=True)
class OffsetFetchRequest:
    """``partitions is None`` means every partition the group has offsets for (v2+). ``member_id`` /
    ``member_epoch`` (v9+, a consumer-protocol member's; None and -1 when not sent) are checked by the consumer
    machine (STALE_MEMBER_EPOCH, UNKNOWN_MEMBER_ID); the classic machine ignores them."""

    group_id: str
    partitions: list[tuple[str, int]] | None = None
    require_stable: bool = False
    member_id: str | None = None
    member_epoch: int = -1


@dataclass(slots=True)
class OffsetFetchPartition:
    """A committed offset; ``offset == -1`` and ``metadata == ""`` when none is stored."""

    topic: str
    partition: int
    offset: int
    leader_epoch: int = -1
    metadata: str = ""
    error: ErrorCode = ErrorCode.NONE


@dataclass(slots=True)
class OffsetFetchResponse:
    error: ErrorCode
    partitions: list[OffsetFetchPartition] = field(default_factory=list[OffsetFetchPartition])


# --------------------------------------------------------------------------------------------------------------
# DescribeGroups (15) / ListGroups (16)


@dataclass(slots=True)
class DescribeGroupsRequest:
    groups: list[str]


@dataclass(slots=True)
class DescribedMember:
    """``metadata`` (selected protocol) and ``assignment`` are filled only while the group is Stable."""

    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    metadata: bytes = b""
    assignment: bytes = b""


@dataclass(slots=True)
class DescribedGroup:
    """An unknown group is described as ``state="Dead"``, no members, ``error == NONE``. ``protocol`` is the
    selected protocol in Stable, else ``""``. ``error_message`` (DescribeGroups v6+) is set only by the consumer
    machine, for a group that is not a classic group (Kafka 4: GROUP_ID_NOT_FOUND, state ``Dead``)."""

    group_id: str
    error: ErrorCode
    state: str
    protocol_type: str = ""
    protocol: str = ""
    members: list[DescribedMember] = field(default_factory=list[DescribedMember])
    #: DescribeGroups v6's ``error_message`` (Kafka 4: "Group <id> is not a classic group." for a consumer group).
    error_message: str | None = None


@dataclass(slots=True)
class DescribeGroupsResponse:
    groups: list[DescribedGroup]


@dataclass(slots=True)
class ListGroupsRequest:
    """``states_filter`` (v4+): state names as in :class:`GroupState`; empty or ``None`` lists every group."""

    states_filter: list[str] | None = None


@dataclass(slots=True)
class ListedGroup:
    """``group_type`` (ListGroups v5+): ``classic`` for the classic machine's groups, ``consumer`` for KIP-848's."""

    group_id: str
    protocol_type: str
    state: str
    group_type: str = "classic"


@dataclass(slots=True)
class ListGroupsResponse:
    """While loading, ``error`` is COORDINATOR_LOAD_IN_PROGRESS and the groups loaded so far are still listed."""

    error: ErrorCode
    groups: list[ListedGroup] = field(default_factory=list[ListedGroup])


# --------------------------------------------------------------------------------------------------------------
# DeleteGroups (42)


@dataclass(slots=True)
class DeleteGroupsRequest:
    groups: list[str]


@dataclass(slots=True)
class DeletedGroup:
    """NONE (deleted), GROUP_ID_NOT_FOUND (unknown), NON_EMPTY_GROUP (has members) or
    COORDINATOR_LOAD_IN_PROGRESS."""

    group_id: str
    error: ErrorCode


@dataclass(slots=True)
class DeleteGroupsResponse:
    """One result per requested group, in request order."""

    results: list[DeletedGroup]


class OtherGroupTypeResponse(Protocol):
    """The answer of another group type's machine that travels in the same :class:`Respond` effect (the consumer
    machine's ``ConsumerGroupHeartbeatResponse``, :mod:`coordinator.core.consumer.api`, which imports this
    package and so cannot be named here)."""

    error: ErrorCode


Response = (
    JoinGroupResponse
    | SyncGroupResponse
    | HeartbeatResponse
    | LeaveGroupResponse
    | OffsetCommitResponse
    | OffsetFetchResponse
    | DescribeGroupsResponse
    | ListGroupsResponse
    | DeleteGroupsResponse
    | OtherGroupTypeResponse
)

# --------------------------------------------------------------------------------------------------------------
# Effects

TimerKey = tuple[Hashable, ...]

TIMER_HEARTBEAT = "heartbeat"  #: ("heartbeat", group_id, member_id): session expiry of a member
TIMER_PENDING = "pending"  #: ("pending", group_id, member_id): expiry of a MEMBER_ID_REQUIRED pending member
TIMER_JOIN = "join"  #: ("join", group_id): the join barrier (DelayedJoin / InitialDelayedJoin)
TIMER_SYNC = "sync"  #: ("sync", group_id, generation_id): the pending-sync timeout (DelayedSync)


@dataclass(slots=True, frozen=True)
class Respond:
    """Deliver ``response`` to the request tagged ``token``."""

    token: Any
    response: Response


@dataclass(slots=True, frozen=True)
class SetTimer:
    """Arm (or re-arm, replacing) the timer ``key`` to fire at ``deadline_ms`` (coordinator time)."""

    key: TimerKey
    deadline_ms: int


@dataclass(slots=True, frozen=True)
class CancelTimer:
    """Disarm the timer ``key``; a no-op if it is not armed."""

    key: TimerKey


@dataclass(slots=True, frozen=True)
class Persist:
    """Append ``record`` to the durable log.

    ``write`` is None (single-broker mode, and the fire-and-forget writes of replicated mode: tombstones, the
    group record of an empty group): the append must be complete before any later :class:`Respond` of the same
    call is delivered; in replicated mode the shell may append it asynchronously and only logs a failure.

    ``write`` is an id (replicated mode's two-phase writes: a commit's offsets, a SyncGroup's group record): every
    Persist of one effect list with the same id is one batch, appended together; the shell reports its outcome
    with :meth:`~coordinator.core.group.machine.GroupCoordinator.persisted` (``write``, the append's error code). The
    machine answers the request behind it and makes the records visible only then."""

    record: Record
    write: int | None = None


#: ``group_state``: group, from_state, to_state, generation, members (count).
EMIT_GROUP_STATE = "group_state"
#: ``rebalance_begin``: group, generation (the old one), members, reason. Emitted on every transition into
#: PreparingRebalance (a rebalance restarted from CompletingRebalance emits a second one without an end).
EMIT_REBALANCE_BEGIN = "rebalance_begin"
#: ``rebalance_end``: group, generation (the new one), members, leader, protocol. Emitted when the group reaches
#: Stable (the leader's SyncGroup) or Empty (the join barrier completed without members; leader/protocol None).
EMIT_REBALANCE_END = "rebalance_end"
#: ``member_added``: group, generation, member, instance_id, client_id, client_host; plus ``replaces`` (the old
#: member id) when a static member is replaced. Pending (MEMBER_ID_REQUIRED) members are not members yet.
EMIT_MEMBER_ADDED = "member_added"
#: ``member_removed``: group, generation, member, instance_id, reason (one of the ``REMOVED_*`` values, or
#: ``"group_max_size"`` when a JoinGroup is refused with GROUP_MAX_SIZE_REACHED and the member dropped).
EMIT_MEMBER_REMOVED = "member_removed"
#: ``commit``: group, member, generation, topic, partition, offset.
EMIT_COMMIT = "commit"
#: ``commit_rejected``: as ``commit`` plus error (the error name).
EMIT_COMMIT_REJECTED = "commit_rejected"
#: ``heartbeat_error``: group, member, generation (the one the member sent), error (the error name).
EMIT_HEARTBEAT_ERROR = "heartbeat_error"

REMOVED_LEAVE = "leave"  #: LeaveGroup (including admin removal by instance id)
REMOVED_EXPIRED = "expired"  #: session (or new-member join) timeout
REMOVED_JOIN_TIMEOUT = "join_timeout"  #: dynamic member that did not rejoin before the join barrier completed
REMOVED_SYNC_TIMEOUT = "sync_timeout"  #: member that did not send SyncGroup within the rebalance timeout
REMOVED_FENCED = "fenced"  #: old member id of a static member replaced by a new incarnation
REMOVED_RESET = "reset"  #: the group was reset after an internal error (``GroupCoordinator.reset_group``)


@dataclass(slots=True, frozen=True)
class Emit:
    """A history event for the harness: ``kind`` is an ``EMIT_*`` constant, ``fields`` its payload."""

    kind: str
    fields: dict[str, Any]


Effect = Respond | SetTimer | CancelTimer | Persist | Emit
