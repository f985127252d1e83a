"""The kio adapters of the group APIs: kio requests in, machine calls, kio responses out.

Contract
--------
* Each group API handler turns the kio request (any served version) into the machine's version-neutral
  request (:mod:`coordinator.group.api`), has the :class:`~coordinator.group_runner.GroupRunner` call the
  machine with a fresh :class:`~coordinator.group_runner.Token` that carries the conversion of the machine's
  response into a kio response of the request's version, and returns what the runner gives: the response, or a
  future of it for a parked JoinGroup / SyncGroup. Reads (OffsetFetch, DescribeGroups, ListGroups) ask the
  machine directly. Effects, timers, the group log and failures are the runner's business.
* Replicated mode (``replicated=``): the machine owns groups per ``__consumer_offsets`` partition
  this broker leads and answers COORDINATOR_LOAD_IN_PROGRESS / NOT_COORDINATOR itself (Kafka 3.7
  ``validateGroupStatus`` order); the ClusterView's hash is not consulted for that (FindCoordinator still asks
  the view, whose ``coordinator_id`` is then the partition's leader).
* Otherwise, with several brokers, a group this broker does not coordinate (see
  :class:`~coordinator.cluster.ClusterView`) gets NOT_COORDINATOR without reaching the machine, in
  Kafka 3.7's order (``GroupCoordinator.validateGroupStatus``): an empty group id is INVALID_GROUP_ID
  for JoinGroup / SyncGroup / Heartbeat / LeaveGroup wherever it is sent; unknown topics of an
  OffsetCommit stay UNKNOWN_TOPIC_OR_PARTITION. A SyncGroup v5+ without protocol type or name is
  INCONSISTENT_GROUP_PROTOCOL before anything else (``KafkaApis.handleSyncGroupRequest``).
* FindCoordinator is answered here from the :class:`~coordinator.cluster.ClusterView` (the machine does not
  model it).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any

from kio.schema.errors import ErrorCode as KioError

from coordinator.api_keys import ApiKey
from coordinator.cluster import ClusterView
from coordinator.config import ReplicationConfig
from coordinator.context import RequestContext
from coordinator.group import api as g
from coordinator.group.errors import ErrorCode
from coordinator.group.machine import GroupCoordinator
from coordinator.group_log import GroupLog
from coordinator.group_runner import GroupRunner, Token, now_ms
from coordinator.group_store import TopicGroupStore
from coordinator.ports import OFFSETS_TOPIC, ReplicatedLog
from coordinator.topics import TopicStore
from coordinator.wire import ZERO_TD, make, nested, response_class
from harness.kernel.history import History

__all__ = ["GROUP_VERSIONS", "GroupApis", "kio_error"]

#: API key -> (min, max) served by :class:`GroupApis`.
GROUP_VERSIONS: dict[int, tuple[int, int]] = {
    ApiKey.OFFSET_COMMIT: (2, 8),
    ApiKey.OFFSET_FETCH: (1, 8),
    ApiKey.FIND_COORDINATOR: (0, 4),
    ApiKey.JOIN_GROUP: (0, 9),
    ApiKey.HEARTBEAT: (0, 4),
    ApiKey.LEAVE_GROUP: (0, 5),
    ApiKey.SYNC_GROUP: (0, 5),
    ApiKey.DESCRIBE_GROUPS: (0, 6),
    ApiKey.LIST_GROUPS: (0, 5),
    ApiKey.DELETE_GROUPS: (0, 2),
}

_KIO_ERROR: dict[int, KioError] = {int(e): e for e in KioError}
_NO_AUTH_OPS = -(2**31)


def kio_error(error: int) -> KioError:
    """The kio enum member for a wire error code."""
    try:
        return _KIO_ERROR[int(error)]
    except KeyError:
        return KioError.unknown_server_error


class GroupApis:
    """Group APIs of the broker: kio adapters over a :class:`~coordinator.group_runner.GroupRunner`."""

    def __init__(
        self,
        machine: GroupCoordinator,
        cluster: ClusterView,
        store: TopicStore,
        history: History,
        group_log: GroupLog | None = None,
        *,
        broker_id: int = 0,
        clock: Callable[[], int] = now_ms,
        known_topic: Callable[[str], bool] | None = None,
        rejected: Counter[str] | None = None,
        replicated: ReplicatedLog | None = None,
        replication: ReplicationConfig | None = None,
    ) -> None:
        """``replicated`` (a :class:`~coordinator.ports.ReplicatedLog`) switches to replicated mode: the machine
        owns groups per ``__consumer_offsets`` partition (``cluster.offsets_partitions`` of them) and keeps its
        records in that topic (:class:`~coordinator.group_store.TopicGroupStore`, acks and timeout from
        ``replication``); ``group_log`` is then unused and :meth:`load` registers the runner as the topic's
        leadership listener. Without it (the default) everything is as in the single-broker design."""
        self.machine = machine
        self.cluster = cluster
        self.store = store
        self.replicated = replicated
        topic_store: TopicGroupStore | None = None
        if replicated is not None:
            machine.own_by_partition(cluster.offsets_partitions)
            topic_store = TopicGroupStore(
                replicated, cluster.offsets_partitions, replication or ReplicationConfig()
            )
        self.runner = GroupRunner(
            machine,
            history,
            group_log,
            broker_id=broker_id,
            clock=clock,
            rejected=rejected,
            store=topic_store,
            offsets_partitions=cluster.offsets_partitions,
        )
        self.clock = clock
        self.known_topic = known_topic or (lambda name: store.get(name) is not None)

    def handlers(self) -> dict[int, Callable[[RequestContext, Any], Any]]:
        return {
            ApiKey.OFFSET_COMMIT: self.offset_commit,
            ApiKey.OFFSET_FETCH: self.offset_fetch,
            ApiKey.FIND_COORDINATOR: self.find_coordinator,
            ApiKey.JOIN_GROUP: self.join_group,
            ApiKey.HEARTBEAT: self.heartbeat,
            ApiKey.LEAVE_GROUP: self.leave_group,
            ApiKey.SYNC_GROUP: self.sync_group,
            ApiKey.DESCRIBE_GROUPS: self.describe_groups,
            ApiKey.LIST_GROUPS: self.list_groups,
            ApiKey.DELETE_GROUPS: self.delete_groups,
        }

    # ------------------------------------------------------------------ the runner's life cycle

    async def load(self) -> tuple[int, int]:
        """Replay the group log into the machine (:meth:`GroupRunner.load`). Replicated mode: register the
        runner as the ``__consumer_offsets`` leadership listener instead (each partition this broker leads is
        then loaded as it is elected); returns (0, 0)."""
        if self.replicated is not None:
            self.replicated.add_leadership_listener(OFFSETS_TOPIC, self.runner)
            return 0, 0
        return await self.runner.load()

    @property
    def loading(self) -> bool:
        """True while the group log replays (replicated mode: while any offsets partition loads)."""
        return self.runner.loading or self.machine.loading

    def cancel_timers(self) -> None:
        self.runner.cancel_timers()

    @property
    def timer_count(self) -> int:
        return self.runner.timer_count

    # ------------------------------------------------------------------ helpers

    def _not_coordinator(self, group_id: str) -> bool:
        """Single-broker design only: the ClusterView's answer. In replicated mode the machine answers
        NOT_COORDINATOR from the offsets partitions it owns, so this is False."""
        return self.replicated is None and not self.cluster.is_coordinator(group_id)

    def _other_coordinates(self, group_id: str) -> bool:
        """NOT_COORDINATOR is the answer for a JoinGroup / SyncGroup / Heartbeat / LeaveGroup: Kafka 3.7's
        ``GroupCoordinator.validateGroupStatus`` checks, in order, INVALID_GROUP_ID (an empty id, which the
        machine answers), COORDINATOR_LOAD_IN_PROGRESS (only for a group whose offsets partition this broker is
        loading, i.e. one it coordinates: the machine answers that too) and NOT_COORDINATOR. So an empty id
        never gets NOT_COORDINATOR, and a group of another broker gets it even while this one loads."""
        return bool(group_id) and self._not_coordinator(group_id)

    # ------------------------------------------------------------------ FindCoordinator

    def find_coordinator(self, ctx: RequestContext, req: Any) -> Any:
        cls = response_class(ApiKey.FIND_COORDINATOR, ctx.api_version)
        if ctx.api_version >= 4:
            coord_cls = nested(cls, "coordinators")
            coords = []
            for key in req.coordinator_keys:
                error, node_id, host, port, message = self._coordinator_for(ctx, req.key_type, key)
                coords.append(
                    make(
                        coord_cls,
                        key=key,
                        node_id=node_id,
                        host=host,
                        port=port,
                        error_code=error,
                        error_message=message,
                    )
                )
            return make(cls, throttle_time=ZERO_TD, coordinators=tuple(coords))
        error, node_id, host, port, message = self._coordinator_for(ctx, getattr(req, "key_type", 0), req.key)
        return make(
            cls,
            throttle_time=ZERO_TD,
            error_code=error,
            error_message=message,
            node_id=node_id,
            host=host,
            port=port,
        )

    def _coordinator_for(
        self, ctx: RequestContext, key_type: int, key: str
    ) -> tuple[KioError, int, str, int, str | None]:
        if key_type != 0:
            return KioError.coordinator_not_available, -1, "", -1, "only group coordinators are served"
        node = self.cluster.node(self.cluster.coordinator_id(key), ctx.advertised_host, ctx.advertised_port)
        if node is None:
            return KioError.coordinator_not_available, -1, "", -1, "coordinator not live"
        return KioError.none, node.node_id, node.host, node.port, None

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

        if self._other_coordinates(req.group_id):
            return convert(g.JoinGroupResponse(ErrorCode.NOT_COORDINATOR, member_id=req.member_id))
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
            token, (req.group_id,), "JoinGroup", lambda: self.machine.join_group(self.clock(), token, mreq)
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
        if self._other_coordinates(req.group_id):
            return convert(g.SyncGroupResponse(ErrorCode.NOT_COORDINATOR))
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
            token, (req.group_id,), "SyncGroup", lambda: self.machine.sync_group(self.clock(), token, mreq)
        )

    # ------------------------------------------------------------------ Heartbeat

    def heartbeat(self, ctx: RequestContext, req: Any) -> Any:
        cls = response_class(ApiKey.HEARTBEAT, ctx.api_version)

        def convert(r: g.HeartbeatResponse) -> Any:
            if ctx.api_version == 0:
                return cls(error_code=kio_error(r.error))
            return cls(throttle_time=ZERO_TD, error_code=kio_error(r.error))

        if self._other_coordinates(req.group_id):
            return convert(g.HeartbeatResponse(ErrorCode.NOT_COORDINATOR))
        token = Token(convert, req.group_id, "Heartbeat")
        mreq = g.HeartbeatRequest(
            group_id=req.group_id,
            generation_id=req.generation_id,
            member_id=req.member_id,
            group_instance_id=getattr(req, "group_instance_id", None),
        )
        return self.runner.call(
            token, (req.group_id,), "Heartbeat", lambda: self.machine.heartbeat(self.clock(), token, mreq)
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

        if self._other_coordinates(req.group_id):
            return convert(g.LeaveGroupResponse(ErrorCode.NOT_COORDINATOR))
        members: list[tuple[str, str | None]]
        if v < 3:
            members = [(req.member_id, None)]
            reason = None
        else:
            members = [(m.member_id, m.group_instance_id) for m in req.members]
            reason = next((m.reason for m in req.members if getattr(m, "reason", None)), None)
        token = Token(convert, req.group_id, "LeaveGroup")
        mreq = g.LeaveGroupRequest(group_id=req.group_id, members=members, reason=reason)
        return self.runner.call(
            token, (req.group_id,), "LeaveGroup", lambda: self.machine.leave_group(self.clock(), token, mreq)
        )

    # ------------------------------------------------------------------ OffsetCommit

    def offset_commit(self, ctx: RequestContext, req: Any) -> Any:
        cls = response_class(ApiKey.OFFSET_COMMIT, ctx.api_version)
        topic_cls = nested(cls, "topics")
        part_cls = nested(topic_cls, "partitions")
        # Request order, with the shell's own answers for unknown topics / partitions.
        order: list[tuple[str, int]] = []
        errors: dict[tuple[str, int], ErrorCode] = {}
        offsets: list[g.OffsetCommitPartition] = []
        for t in req.topics:
            topic = self.store.get(t.name)
            for p in t.partitions:
                key = (t.name, p.partition_index)
                order.append(key)
                known = (topic is not None and topic.partition(p.partition_index) is not None) or (
                    topic is None and self.known_topic(t.name)
                )
                if not known:
                    errors[key] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                    continue
                offsets.append(
                    g.OffsetCommitPartition(
                        topic=t.name,
                        partition=p.partition_index,
                        offset=p.committed_offset,
                        metadata=p.committed_metadata,
                        leader_epoch=getattr(p, "committed_leader_epoch", -1),
                    )
                )

        def convert(r: g.OffsetCommitResponse | None) -> Any:
            results = dict(errors)
            if r is not None:
                for pr in r.partitions:
                    results[(pr.topic, pr.partition)] = pr.error
            by_topic: dict[str, list[Any]] = {}
            for name, part in order:
                by_topic.setdefault(name, []).append(
                    make(
                        part_cls,
                        partition_index=part,
                        error_code=kio_error(results.get((name, part), ErrorCode.NONE)),
                    )
                )
            return make(
                cls,
                throttle_time=ZERO_TD,
                topics=tuple(make(topic_cls, name=n, partitions=tuple(ps)) for n, ps in by_topic.items()),
            )

        if self._not_coordinator(req.group_id):  # "" is a valid group id for commits
            # KafkaApis answers unknown topics first; only the rest reaches the coordinator's checks.
            for key in order:
                errors.setdefault(key, ErrorCode.NOT_COORDINATOR)
            return convert(None)
        if not offsets:
            return convert(None)
        token = Token(convert, req.group_id, "OffsetCommit")
        mreq = g.OffsetCommitRequest(
            group_id=req.group_id,
            offsets=offsets,
            generation_id=req.generation_id_or_member_epoch,
            member_id=req.member_id,
            group_instance_id=getattr(req, "group_instance_id", None),
        )
        return self.runner.call(
            token,
            (req.group_id,),
            "OffsetCommit",
            lambda: self.machine.offset_commit(self.clock(), token, mreq),
        )

    # ------------------------------------------------------------------ OffsetFetch

    def _fetch_group(self, group_id: str, topics: Any, require_stable: bool) -> g.OffsetFetchResponse:
        if self._not_coordinator(group_id):
            return g.OffsetFetchResponse(ErrorCode.NOT_COORDINATOR)
        parts = None if topics is None else [(t.name, p) for t in topics for p in t.partition_indexes]
        r = self.machine.offset_fetch(
            self.clock(),
            g.OffsetFetchRequest(group_id=group_id, partitions=parts, require_stable=require_stable),
        )
        self.runner.maybe_served(group_id, "OffsetFetch", r)
        return r

    @staticmethod
    def _fetch_topics(topic_cls: type, r: g.OffsetFetchResponse, copy_error: bool) -> tuple[Any, ...]:
        part_cls = nested(topic_cls, "partitions")
        by_topic: dict[str, list[Any]] = {}
        for p in r.partitions:
            error = p.error
            if copy_error and r.error != ErrorCode.NONE:
                error = r.error
            by_topic.setdefault(p.topic, []).append(
                make(
                    part_cls,
                    partition_index=p.partition,
                    committed_offset=p.offset,
                    committed_leader_epoch=p.leader_epoch,
                    metadata=p.metadata,
                    error_code=kio_error(error),
                )
            )
        return tuple(make(topic_cls, name=n, partitions=tuple(ps)) for n, ps in by_topic.items())

    def offset_fetch(self, ctx: RequestContext, req: Any) -> Any:
        cls = response_class(ApiKey.OFFSET_FETCH, ctx.api_version)
        v = ctx.api_version
        require_stable = getattr(req, "require_stable", False)
        if v >= 8:
            group_cls = nested(cls, "groups")
            topic_cls = nested(group_cls, "topics")
            groups = []
            for rg in req.groups:
                r = self._fetch_group(rg.group_id, rg.topics, require_stable)
                groups.append(
                    make(
                        group_cls,
                        group_id=rg.group_id,
                        topics=self._fetch_topics(topic_cls, r, False),
                        error_code=kio_error(r.error),
                    )
                )
            return make(cls, throttle_time=ZERO_TD, groups=tuple(groups))
        topic_cls = nested(cls, "topics")
        r = self._fetch_group(req.group_id, req.topics, require_stable)
        if v == 1 and r.error != ErrorCode.NONE and not r.partitions and req.topics:
            # v0-1 have no top-level error: report it on every requested partition.
            r = g.OffsetFetchResponse(
                r.error,
                [
                    g.OffsetFetchPartition(t.name, p, -1, error=r.error)
                    for t in req.topics
                    for p in t.partition_indexes
                ],
            )
        return make(
            cls,
            throttle_time=ZERO_TD,
            error_code=kio_error(r.error),
            topics=self._fetch_topics(topic_cls, r, v < 2),
        )

    # ------------------------------------------------------------------ DescribeGroups / ListGroups

    def describe_groups(self, ctx: RequestContext, req: Any) -> Any:
        cls = response_class(ApiKey.DESCRIBE_GROUPS, ctx.api_version)
        group_cls = nested(cls, "groups")
        member_cls = nested(group_cls, "members")
        mine = [gid for gid in req.groups if not self._not_coordinator(gid)]
        described = {
            d.group_id: d
            for d in self.machine.describe_groups(self.clock(), g.DescribeGroupsRequest(mine)).groups
        }
        groups = []
        for gid in req.groups:
            d = described.get(gid)
            if d is None:
                d = g.DescribedGroup(gid, ErrorCode.NOT_COORDINATOR, "")
            groups.append(
                make(
                    group_cls,
                    error_code=kio_error(d.error),
                    error_message=None,
                    group_id=gid,
                    group_state=d.state,
                    protocol_type=d.protocol_type,
                    protocol_data=d.protocol,
                    authorized_operations=_NO_AUTH_OPS,
                    members=tuple(
                        make(
                            member_cls,
                            member_id=m.member_id,
                            group_instance_id=m.group_instance_id,
                            client_id=m.client_id,
                            client_host=m.client_host,
                            member_metadata=m.metadata,
                            member_assignment=m.assignment,
                        )
                        for m in d.members
                    ),
                )
            )
        return make(cls, throttle_time=ZERO_TD, groups=tuple(groups))

    def list_groups(self, ctx: RequestContext, req: Any) -> Any:
        cls = response_class(ApiKey.LIST_GROUPS, ctx.api_version)
        group_cls = nested(cls, "groups")
        types_filter = [t.lower() for t in getattr(req, "types_filter", ())]
        states: list[str] | None = list(getattr(req, "states_filter", ())) or None
        r = self.machine.list_groups(self.clock(), g.ListGroupsRequest(states_filter=states))
        listed = r.groups if not types_filter or "classic" in types_filter else []
        return make(
            cls,
            throttle_time=ZERO_TD,
            error_code=kio_error(r.error),
            groups=tuple(
                make(
                    group_cls,
                    group_id=x.group_id,
                    protocol_type=x.protocol_type,
                    group_state=x.state,
                    group_type="classic",
                )
                for x in listed
            ),
        )

    def delete_groups(self, ctx: RequestContext, req: Any) -> Any:
        cls = response_class(ApiKey.DELETE_GROUPS, ctx.api_version)
        result_cls = nested(cls, "results")
        names = list(req.groups_names)
        mine = [gid for gid in names if not self._not_coordinator(gid)]

        def convert(r: g.DeleteGroupsResponse | None) -> Any:
            errors = {d.group_id: d.error for d in r.results} if r is not None else {}
            return make(
                cls,
                throttle_time=ZERO_TD,
                results=tuple(
                    make(
                        result_cls,
                        group_id=gid,
                        error_code=kio_error(errors.get(gid, ErrorCode.NOT_COORDINATOR)),
                    )
                    for gid in names
                ),
            )

        if not mine:
            return convert(None)
        token = Token(convert)
        request = g.DeleteGroupsRequest(mine)
        return self.runner.call(
            token, mine, "DeleteGroups", lambda: self.machine.delete_groups(self.clock(), token, request)
        )
