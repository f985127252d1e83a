"""The classic group type: Kafka's classic consumer-group protocol over the pure
:class:`~coordinator.core.group.machine.GroupCoordinator` and its :class:`~coordinator.groups.runner.GroupRunner`.

Its own APIs are JoinGroup, SyncGroup, Heartbeat and LeaveGroup (kio in, machine request, kio out); a SyncGroup
v5+ without protocol type or name is INCONSISTENT_GROUP_PROTOCOL before anything else
(``KafkaApis.handleSyncGroupRequest``), and a group this broker does not coordinate
(:func:`~coordinator.groups.routing.other_coordinates`) is NOT_COORDINATOR without reaching the machine. Its part
of the shared APIs (:class:`~coordinator.groups.types.GroupType`) goes to the same machine, whose offsets
(:class:`~coordinator.core.group.offsets.OffsetManager`, ``machine.offsets``) hold every group's commits: a second
type's machine can be given the same manager. ``replicated=`` switches the machine to owning groups per ``__consumer_offsets`` partition (see
:class:`ClassicGroups`).

Single-broker mode (``facade=``): the requests go to :class:`~coordinator.core.groups.GroupCoordinators`, which
serves a consumer group's classic-protocol members through these APIs and converts groups between the types (Kafka
4's online migration, ``group.consumer.migration.policy``). Replicated mode, or without the facade: a group id
another type holds (:attr:`ClassicGroups.held_elsewhere`: a consumer group) is refused, as Kafka 4 answers classic
requests for a consumer group whose members are not classic-protocol members: JoinGroup
INCONSISTENT_GROUP_PROTOCOL (``throwIfClassicProtocolIsNotSupported``), SyncGroup, Heartbeat and each LeaveGroup
member UNKNOWN_MEMBER_ID (``throwIfMemberDoesNotUseClassicProtocol``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

from coordinator.api_keys import ApiKey
from coordinator.config import ReplicationConfig
from coordinator.context import RequestContext
from coordinator.core.group import api as g
from coordinator.core.group.errors import ErrorCode
from coordinator.core.group.machine import GroupCoordinator
from coordinator.core.group.records import Record
from coordinator.core.groups import GroupCoordinators
from coordinator.groups.codec import kio_error
from coordinator.groups.log import GroupLog
from coordinator.groups.routing import Routing, other_coordinates
from coordinator.groups.runner import GroupRunner, Token, now_ms
from coordinator.groups.store import TopicGroupStore
from coordinator.groups.types import Handler
from coordinator.ports import OFFSETS_TOPIC, ReplicatedLog
from coordinator.wire import ZERO_TD, make, nested, response_class
from harness.kernel.history import History

__all__ = ["ClassicGroups"]


class ClassicGroups:
    """The classic group type (see the module docstring); a :class:`~coordinator.groups.types.GroupType`."""

    name = "classic"

    def __init__(
        self,
        machine: GroupCoordinator,
        routing: Routing,
        history: History,
        group_log: GroupLog | None = None,
        *,
        offsets_partitions: int,
        broker_id: int = 0,
        clock: Callable[[], int] = now_ms,
        rejected: Counter[str] | None = None,
        replicated: ReplicatedLog | None = None,
        replication: ReplicationConfig | None = None,
        facade: GroupCoordinators | None = None,
    ) -> None:
        """``replicated`` (a :class:`~coordinator.ports.ReplicatedLog`) switches to replicated mode: the machine
        owns groups per ``__consumer_offsets`` partition (``offsets_partitions`` of them) and keeps its records in
        that topic (:class:`~coordinator.groups.store.TopicGroupStore`, acks and timeout from ``replication``);
        ``group_log`` is then unused and :meth:`load` registers the runner as the topic's leadership listener.
        Without it (the default) everything is as in the single-broker design.

        ``facade`` (single-broker mode only): both group types behind
        :class:`~coordinator.core.groups.GroupCoordinators` (whose classic machine is ``machine``), with the online
        migration between them. Every request of this type and of the shared APIs then goes to the facade, which
        routes it to the machine holding the group, and the runner runs the facade."""
        if facade is not None and (replicated is not None or facade.classic is not machine):
            raise ValueError("the group facade is single-broker mode's, over this type's machine")
        self.machine = machine
        self.facade = facade
        #: What takes this type's requests and the shared APIs: the facade, else the classic machine.
        self.api: GroupCoordinator | GroupCoordinators = facade if facade is not None else machine
        self.routing = routing
        self.replicated = replicated
        topic_store: TopicGroupStore | None = None
        if replicated is not None:
            machine.own_by_partition(offsets_partitions)
            topic_store = TopicGroupStore(replicated, offsets_partitions, replication or ReplicationConfig())
        #: Replicated mode: the ``__consumer_offsets`` store (another group type's runner writes to it too).
        self.topic_store = topic_store
        self.runner = GroupRunner(
            self.api,
            history,
            group_log,
            broker_id=broker_id,
            clock=clock,
            rejected=rejected,
            store=topic_store,
            offsets_partitions=offsets_partitions,
        )
        self.clock = clock
        #: True for a group id another group type holds (set by the broker's group APIs).
        self.held_elsewhere: Callable[[str], bool] = lambda _group_id: False

    def handlers(self) -> dict[int, Handler]:
        return {
            ApiKey.JOIN_GROUP: self.join_group,
            ApiKey.HEARTBEAT: self.heartbeat,
            ApiKey.LEAVE_GROUP: self.leave_group,
            ApiKey.SYNC_GROUP: self.sync_group,
        }

    # ------------------------------------------------------------------ the runner's life cycle

    async def load(
        self, also: Sequence[tuple[GroupRunner, Callable[[Record], bool]]] = ()
    ) -> tuple[int, int]:
        """Replay the group log into the machine (:meth:`GroupRunner.load`; ``also``: the runners of other group
        types sharing the log, each with the records it takes). Replicated mode: register the runner as the
        ``__consumer_offsets`` leadership listener instead (each partition this broker leads is then loaded as it
        is elected); returns (0, 0)."""
        if self.replicated is not None:
            self.replicated.add_leadership_listener(OFFSETS_TOPIC, self.runner)
            return 0, 0
        return await self.runner.load(also)

    @property
    def loading(self) -> bool:
        """True while the group log replays (replicated mode: while any offsets partition loads)."""
        return self.runner.loading or self.machine.loading

    # ------------------------------------------------------------------ the shared APIs (GroupType)

    def holds(self, group_id: str) -> bool:
        return self.machine.group(group_id) is not None

    def in_use(self, group_id: str) -> bool:
        """True if this type holds ``group_id`` in a state other than Empty or Dead (Kafka's
        ``isEmptyClassicGroup`` is false): a consumer-protocol member may not take it over."""
        group = self.machine.group(group_id)
        return group is not None and group.state not in (g.GroupState.EMPTY, g.GroupState.DEAD)

    def offset_commit(
        self, req: g.OffsetCommitRequest, convert: Callable[[g.OffsetCommitResponse], Any]
    ) -> Any:
        token = Token(convert, req.group_id, "OffsetCommit")
        return self.runner.call(
            token,
            (req.group_id,),
            "OffsetCommit",
            lambda: self.api.offset_commit(self.clock(), token, req),
        )

    def offset_fetch(self, req: g.OffsetFetchRequest) -> g.OffsetFetchResponse:
        r = self.api.offset_fetch(self.clock(), req)
        self.runner.maybe_served(req.group_id, "OffsetFetch", r)
        return r

    def describe_groups(self, group_ids: list[str]) -> list[g.DescribedGroup]:
        return self.api.describe_groups(self.clock(), g.DescribeGroupsRequest(group_ids)).groups

    def list_groups(self, states: list[str] | None) -> g.ListGroupsResponse:
        return self.api.list_groups(self.clock(), g.ListGroupsRequest(states_filter=states))

    def delete_groups(self, group_ids: list[str], convert: Callable[[g.DeleteGroupsResponse], Any]) -> Any:
        token = Token(convert)
        request = g.DeleteGroupsRequest(group_ids)
        return self.runner.call(
            token, group_ids, "DeleteGroups", lambda: self.api.delete_groups(self.clock(), token, request)
        )

    # ------------------------------------------------------------------ JoinGroup

    def join_group(self, ctx: RequestContext, req: Any) -> Any:
        cls = response_class(ApiKey.JOIN_GROUP, ctx.api_version)
        member_cls = nested(cls, "members")
        v = ctx.api_version

        def convert(r: g.JoinGroupResponse) -> Any:
            return make(
                cls,
                throttle_time=ZERO_TD,
                error_code=kio_error(r.error),
                generation_id=r.generation_id,
                protocol_type=r.protocol_type,
                protocol_name=r.protocol_name if (v >= 7 or r.protocol_name is not None) else "",
                leader=r.leader,
                skip_assignment=r.skip_assignment,
                member_id=r.member_id,
                members=tuple(
                    make(
                        member_cls,
                        member_id=m.member_id,
                        group_instance_id=m.group_instance_id,
                        metadata=m.metadata,
                    )
                    for m in r.members
                ),
            )

        if other_coordinates(self.routing, req.group_id):
            return convert(g.JoinGroupResponse(ErrorCode.NOT_COORDINATOR, member_id=req.member_id))
        if self.held_elsewhere(req.group_id):
            return convert(
                g.JoinGroupResponse(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, member_id=req.member_id)
            )
        token = Token(convert, req.group_id, "JoinGroup")
        mreq = g.JoinGroupRequest(
            group_id=req.group_id,
            member_id=req.member_id,
            session_timeout_ms=round(req.session_timeout.total_seconds() * 1000),
            protocol_type=req.protocol_type,
            protocols=[(p.name, p.metadata) for p in req.protocols],
            rebalance_timeout_ms=round(req.rebalance_timeout.total_seconds() * 1000) if v >= 1 else -1,
            api_version=v,
            group_instance_id=getattr(req, "group_instance_id", None),
            client_id=ctx.client_id or "",
            client_host=ctx.client_host,
            reason=getattr(req, "reason", None),
        )
        return self.runner.call(
            token, (req.group_id,), "JoinGroup", lambda: self.api.join_group(self.clock(), token, mreq)
        )

    # ------------------------------------------------------------------ SyncGroup

    def sync_group(self, ctx: RequestContext, req: Any) -> Any:
        cls = response_class(ApiKey.SYNC_GROUP, ctx.api_version)

        def convert(r: g.SyncGroupResponse) -> Any:
            return make(
                cls,
                throttle_time=ZERO_TD,
                error_code=kio_error(r.error),
                assignment=r.assignment,
                protocol_type=r.protocol_type,
                protocol_name=r.protocol_name,
            )

        if ctx.api_version >= 5 and (req.protocol_type is None or req.protocol_name is None):
            # KafkaApis.handleSyncGroupRequest (areMandatoryProtocolTypeAndNamePresent), before any other check.
            return convert(g.SyncGroupResponse(ErrorCode.INCONSISTENT_GROUP_PROTOCOL))
        if other_coordinates(self.routing, req.group_id):
            return convert(g.SyncGroupResponse(ErrorCode.NOT_COORDINATOR))
        if self.held_elsewhere(req.group_id):
            return convert(g.SyncGroupResponse(ErrorCode.UNKNOWN_MEMBER_ID))
        token = Token(convert, req.group_id, "SyncGroup")
        mreq = g.SyncGroupRequest(
            group_id=req.group_id,
            generation_id=req.generation_id,
            member_id=req.member_id,
            assignments=[(a.member_id, a.assignment) for a in req.assignments],
            group_instance_id=getattr(req, "group_instance_id", None),
            protocol_type=getattr(req, "protocol_type", None),
            protocol_name=getattr(req, "protocol_name", None),
        )
        return self.runner.call(
            token, (req.group_id,), "SyncGroup", lambda: self.api.sync_group(self.clock(), token, mreq)
        )

    # ------------------------------------------------------------------ Heartbeat

    def heartbeat(self, ctx: RequestContext, req: Any) -> Any:
        cls = response_class(ApiKey.HEARTBEAT, ctx.api_version)

        def convert(r: g.HeartbeatResponse) -> Any:
            if ctx.api_version == 0:
                return cls(error_code=kio_error(r.error))
            return cls(throttle_time=ZERO_TD, error_code=kio_error(r.error))

        if other_coordinates(self.routing, req.group_id):
            return convert(g.HeartbeatResponse(ErrorCode.NOT_COORDINATOR))
        if self.held_elsewhere(req.group_id):
            return convert(g.HeartbeatResponse(ErrorCode.UNKNOWN_MEMBER_ID))
        token = Token(convert, req.group_id, "Heartbeat")
        mreq = g.HeartbeatRequest(
            group_id=req.group_id,
            generation_id=req.generation_id,
            member_id=req.member_id,
            group_instance_id=getattr(req, "group_instance_id", None),
        )
        return self.runner.call(
            token, (req.group_id,), "Heartbeat", lambda: self.api.heartbeat(self.clock(), token, mreq)
        )

    # ------------------------------------------------------------------ LeaveGroup

    def leave_group(self, ctx: RequestContext, req: Any) -> Any:
        cls = response_class(ApiKey.LEAVE_GROUP, ctx.api_version)
        v = ctx.api_version

        def convert(r: g.LeaveGroupResponse) -> Any:
            if v < 3:
                error = r.error
                if error == ErrorCode.NONE and r.members:
                    error = r.members[0].error
                return make(cls, throttle_time=ZERO_TD, error_code=kio_error(error))
            member_cls = nested(cls, "members")
            return make(
                cls,
                throttle_time=ZERO_TD,
                error_code=kio_error(r.error),
                members=tuple(
                    make(
                        member_cls,
                        member_id=m.member_id,
                        group_instance_id=m.group_instance_id,
                        error_code=kio_error(m.error),
                    )
                    for m in r.members
                ),
            )

        if other_coordinates(self.routing, req.group_id):
            return convert(g.LeaveGroupResponse(ErrorCode.NOT_COORDINATOR))
        members: list[tuple[str, str | None]]
        if v < 3:
            members = [(req.member_id, None)]
            reason = None
        else:
            members = [(m.member_id, m.group_instance_id) for m in req.members]
            reason = next((m.reason for m in req.members if getattr(m, "reason", None)), None)
        if self.held_elsewhere(req.group_id):
            return convert(
                g.LeaveGroupResponse(
                    ErrorCode.NONE,
                    [g.LeaveGroupMemberResult(mid, iid, ErrorCode.UNKNOWN_MEMBER_ID) for mid, iid in members],
                )
            )
        token = Token(convert, req.group_id, "LeaveGroup")
        mreq = g.LeaveGroupRequest(group_id=req.group_id, members=members, reason=reason)
        return self.runner.call(
            token, (req.group_id,), "LeaveGroup", lambda: self.api.leave_group(self.clock(), token, mreq)
        )
