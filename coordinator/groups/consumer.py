"""The consumer group type: KIP-848's consumer group protocol (Kafka 4's groups of type ``consumer``) over the pure
``ConsumerGroupCoordinator`` (:mod:`coordinator.core.consumer`; :class:`ConsumerMachine` is what this shell asks of
it) and a :class:`~coordinator.groups.runner.GroupRunner` of its own (history ``impl`` ``"consumer"``).

Its own APIs are ConsumerGroupHeartbeat v0-1 and ConsumerGroupDescribe v0 (kio in, the version-neutral requests
of :mod:`coordinator.core.consumer.api`, the kio response of the request's version out); topics travel by id
(:class:`uuid.UUID`), resolved through :class:`StoreTopics`, the broker's topics as the machine's
:class:`~coordinator.core.consumer.api.TopicsImage`. Its part of the shared APIs
(:class:`~coordinator.groups.types.GroupType`: offsets, describe, list, delete) goes to the same machine, whose
offsets are the classic machine's (one :class:`~coordinator.core.group.offsets.OffsetManager`).

Contract
--------
* A group this broker does not coordinate (the routing) is NOT_COORDINATOR without reaching the machine; an empty
  group id reaches it (INVALID_REQUEST is the machine's answer, Kafka's request checks).
* Single-broker mode (the facade, :class:`~coordinator.core.groups.GroupCoordinators`): Kafka 4's online
  migration (``group.consumer.migration.policy``, broker flag ``--consumer-migration-policy``). A classic group in
  use is converted to a consumer group when a consumer-protocol member joins it and the policy allows the upgrade
  (else GROUP_ID_NOT_FOUND with Kafka's message); its classic members stay, served through JoinGroup, SyncGroup,
  Heartbeat and LeaveGroup, and the group converts back when the last consumer-protocol member leaves (policy
  allowing the downgrade). One runner runs the facade (the classic type's); a conversion is a ``group_converted``
  event.
* Replicated mode (no facade): a group id the classic type holds with members is not a consumer group: a
  ConsumerGroupHeartbeat for it is GROUP_ID_NOT_FOUND ("Cannot upgrade classic group <id> to consumer group
  because online upgrade is disabled."), as Kafka 4's ``getOrMaybeCreateConsumerGroup`` answers without an
  online-migration policy. An Empty classic group is taken over, as Kafka deletes an empty classic group when a
  consumer-protocol member joins (``maybeDeleteEmptyClassicGroup``): its offsets (shared) stay, the consumer type
  holds the id from then on (the shared APIs go to the type holding a group, the consumer type first), and the
  classic machine's empty record is shadowed.
* Every ConsumerGroupHeartbeat exchange is one ``group_request`` history event (``api``
  ``"ConsumerGroupHeartbeat"``, ``group``, ``member``, ``member_epoch``: the request's, ``epoch``: the
  response's, ``error``: Kafka's name, absent when NONE, and ``change`` from
  :func:`harness.kernel.heartbeats.carries_change`), written when the answer is made (also for NOT_COORDINATOR
  and a failed machine call, answered UNKNOWN_SERVER_ERROR).
* Records: the machine's ``Persist`` records go to the broker's one group log; on start the log is replayed once
  and each record goes to the machine that takes it (:meth:`ConsumerMachine.takes_record`), the rest to the
  classic machine, whose ``begin_loading`` comes first (it clears the shared offsets).
"""

from __future__ import annotations

import datetime
import logging
import uuid
from collections import Counter
from collections.abc import Callable, Iterable
from typing import Any, Protocol

from coordinator.api_keys import ApiKey
from coordinator.cluster import ClusterView
from coordinator.context import RequestContext
from coordinator.core.consumer import api as c
from coordinator.core.group import api as g
from coordinator.core.group.errors import ErrorCode
from coordinator.core.groups import GroupCoordinators
from coordinator.groups.codec import NO_AUTH_OPS, kio_error
from coordinator.groups.log import GroupLog
from coordinator.groups.routing import Routing, other_coordinates
from coordinator.groups.runner import CONSUMER_IMPL, GroupFailure, GroupRunner, Token, now_ms
from coordinator.groups.store import TopicGroupStore
from coordinator.groups.types import Handler
from coordinator.ports import OFFSETS_TOPIC
from coordinator.topics import TopicStore, replicated_topic_id
from coordinator.wire import ZERO_TD, make, nested, response_class
from harness.kernel.heartbeats import carries_change
from harness.kernel.history import History

__all__ = [
    "CONSUMER_IMPL",
    "ConsumerGroups",
    "ClusterTopics",
    "ConsumerMachine",
    "StoreTopics",
    "decode_heartbeat",
    "encode_heartbeat",
    "heartbeat_event",
]

log = logging.getLogger("coordinator")

#: The history ``impl`` of the consumer protocol's events (the third design's implementation value).
#: Kafka's UUID ``ZERO_UUID``: kio reads an all-zero topic id as None.
_ZERO_UUID = uuid.UUID(int=0)


class ConsumerMachine(Protocol):
    """What the shell asks of the consumer protocol's pure machine (``ConsumerGroupCoordinator``)."""

    def heartbeat(self, now_ms: int, token: Any, req: c.ConsumerGroupHeartbeatRequest) -> list[g.Effect]: ...

    def on_timer(self, now_ms: int, key: Any) -> list[g.Effect]: ...

    def consumer_group_describe(self, group_ids: list[str]) -> list[c.DescribedConsumerGroup]: ...

    def holds(self, group_id: str) -> bool: ...

    def offset_commit(self, now_ms: int, token: Any, req: g.OffsetCommitRequest) -> list[g.Effect]: ...

    def offset_fetch(self, req: g.OffsetFetchRequest) -> g.OffsetFetchResponse: ...

    def describe_groups(self, group_ids: list[str]) -> list[g.DescribedGroup]: ...

    def list_groups(self, states: list[str] | None) -> g.ListGroupsResponse: ...

    def delete_groups(self, now_ms: int, token: Any, group_ids: list[str]) -> list[g.Effect]: ...

    def begin_loading(self, partition: int | None = None) -> list[g.Effect]: ...

    def own_by_partition(self, offsets_partitions: int) -> None:
        """Replicated mode: own groups per ``__consumer_offsets`` partition (before anything is loaded)."""
        ...

    def takes_record(self, record: object) -> bool:
        """While loading: True if ``record`` of the group log is this machine's to replay (its own record types,
        and the offsets of groups it holds at that point of the log); the rest is the classic machine's."""
        ...

    def load(self, record: Any) -> None: ...

    def finish_loading(self, now_ms: int, partition: int | None = None) -> list[g.Effect]: ...


class StoreTopics:
    """The broker's topics as the machine's :class:`~coordinator.core.consumer.api.TopicsImage`: live reads of the
    :class:`~coordinator.topics.TopicStore` (a topic created or grown is seen at the next call)."""

    def __init__(self, store: TopicStore) -> None:
        self.store = store

    def by_name(self, name: str) -> c.TopicMetadata | None:
        topic = self.store.get(name)
        return None if topic is None else c.TopicMetadata(topic.topic_id, topic.name, len(topic.partitions))

    def by_id(self, topic_id: uuid.UUID) -> c.TopicMetadata | None:
        topic = self.store.by_id(topic_id)
        return None if topic is None else c.TopicMetadata(topic.topic_id, topic.name, len(topic.partitions))

    def names(self) -> Iterable[str]:
        return [t.name for t in self.store]


class ClusterTopics:
    """Replicated mode's :class:`~coordinator.core.consumer.api.TopicsImage`: the topics the cluster view has
    partition states of (what Metadata answers, not only what this broker hosts), with the ids Metadata gives
    them (:func:`~coordinator.topics.replicated_topic_id`, or the local topic's)."""

    def __init__(self, cluster: ClusterView, store: TopicStore) -> None:
        self.cluster = cluster
        self.store = store

    def _meta(self, name: str) -> c.TopicMetadata | None:
        parts = self.cluster.topic_partitions(name)
        if not parts or name == OFFSETS_TOPIC:
            return None
        local = self.store.get(name)
        topic_id = local.topic_id if local is not None else replicated_topic_id(name)
        return c.TopicMetadata(topic_id, name, max(parts) + 1)

    def by_name(self, name: str) -> c.TopicMetadata | None:
        return self._meta(name)

    def by_id(self, topic_id: uuid.UUID) -> c.TopicMetadata | None:
        for name in self.cluster.topic_names():
            meta = self._meta(name)
            if meta is not None and meta.topic_id == topic_id:
                return meta
        return None

    def names(self) -> Iterable[str]:
        return [n for n in self.cluster.topic_names() if n != OFFSETS_TOPIC]


def _ms(value: datetime.timedelta) -> int:
    return round(value.total_seconds() * 1000)


def decode_heartbeat(ctx: RequestContext, req: Any) -> c.ConsumerGroupHeartbeatRequest:
    """A kio ConsumerGroupHeartbeat request (v0 or v1) as the machine's request; ``None`` fields stay None (the
    wire's "unchanged"); an all-zero topic id is Kafka's ``ZERO_UUID``."""
    owned = req.topic_partitions
    return c.ConsumerGroupHeartbeatRequest(
        group_id=req.group_id,
        member_id=req.member_id,
        member_epoch=req.member_epoch,
        instance_id=req.instance_id,
        rack_id=req.rack_id,
        rebalance_timeout_ms=_ms(req.rebalance_timeout),
        subscribed_topic_names=None
        if req.subscribed_topic_names is None
        else tuple(req.subscribed_topic_names),
        subscribed_topic_regex=getattr(req, "subscribed_topic_regex", None),
        server_assignor=req.server_assignor,
        topic_partitions=None
        if owned is None
        else tuple(
            c.TopicPartitions(tp.topic_id or _ZERO_UUID, tuple(int(p) for p in tp.partitions)) for tp in owned
        ),
        api_version=ctx.api_version,
        client_id=ctx.client_id or "",
        client_host=ctx.client_host,
    )


def encode_heartbeat(api_version: int, r: c.ConsumerGroupHeartbeatResponse) -> Any:
    """The kio ConsumerGroupHeartbeat response of ``api_version`` for the machine's answer."""
    cls = response_class(ApiKey.CONSUMER_GROUP_HEARTBEAT, api_version)
    assignment = None
    if r.assignment is not None:
        assignment_cls = nested(cls, "assignment")
        tp_cls = nested(assignment_cls, "topic_partitions")
        assignment = assignment_cls(
            topic_partitions=tuple(
                tp_cls(topic_id=tp.topic_id, partitions=tp.partitions) for tp in r.assignment
            )
        )
    return make(
        cls,
        throttle_time=ZERO_TD,
        error_code=kio_error(r.error),
        error_message=r.error_message,
        member_id=r.member_id,
        member_epoch=r.member_epoch,
        heartbeat_interval=datetime.timedelta(milliseconds=r.heartbeat_interval_ms),
        assignment=assignment,
    )


def _error_name(code: int) -> str:
    try:
        return ErrorCode(code).name
    except ValueError:
        return str(code)


def heartbeat_event(
    req: c.ConsumerGroupHeartbeatRequest, r: c.ConsumerGroupHeartbeatResponse
) -> dict[str, Any]:
    """The fields of the ``group_request`` event of one exchange (see the module contract); ``member`` is the
    request's member id, or the one the answer gives a v0 member joining with none."""
    fields: dict[str, Any] = {
        "api": ApiKey.CONSUMER_GROUP_HEARTBEAT.title,
        "client": req.client_id,
        "group": req.group_id,
        "member": req.member_id or r.member_id,
        "member_epoch": req.member_epoch,
        "epoch": r.member_epoch,
        "change": carries_change(
            request_epoch=req.member_epoch,
            request_owned=req.topic_partitions is not None,
            response_error=int(r.error),
            response_epoch=r.member_epoch,
            response_assignment=r.assignment is not None,
        ),
    }
    if r.error != ErrorCode.NONE:
        fields["error"] = _error_name(r.error)
    return fields


class ConsumerGroups:
    """The consumer group type (see the module docstring); a :class:`~coordinator.groups.types.GroupType`.

    ``topics``: the image the machine reads (ConsumerGroupDescribe names topic ids with it).
    ``classic_in_use(group_id)``: the classic type holds the group in a state other than Empty (a heartbeat for
    it is then GROUP_ID_NOT_FOUND, see the contract); ``classic_holds(group_id)``: it holds the group at all
    (ConsumerGroupDescribe answers such a group "Group <id> is not a consumer group.", as Kafka 4.1.1)."""

    name = "consumer"

    def __init__(
        self,
        machine: ConsumerMachine,
        topics: c.TopicsImage,
        routing: Routing,
        history: History,
        group_log: GroupLog | None = None,
        *,
        classic_in_use: Callable[[str], bool] = lambda _gid: False,
        classic_holds: Callable[[str], bool] = lambda _gid: False,
        offsets_partitions: int = 50,
        broker_id: int = 0,
        clock: Callable[[], int] = now_ms,
        rejected: Counter[str] | None = None,
        store: TopicGroupStore | None = None,
        facade: GroupCoordinators | None = None,
        runner: GroupRunner | None = None,
    ) -> None:
        """``store``: replicated mode (the machine then owns groups per offsets partition, as the classic machine;
        the classic type's runner loads and unloads both machines' partitions, see
        :attr:`GroupRunner.co_runners`).

        ``facade`` and ``runner`` (single-broker mode, together): ConsumerGroupHeartbeat goes to the facade of both
        group types (:class:`~coordinator.core.groups.GroupCoordinators`, whose consumer machine is ``machine``),
        which converts a classic group when the first consumer-protocol member joins, run by ``runner`` (the
        classic type's, which runs the facade: one runner, one group log); ``classic_in_use`` is then not asked and
        the shared APIs are the classic type's (over the facade too)."""
        if (facade is None) != (runner is None) or (facade is not None and facade.consumer is not machine):
            raise ValueError("the group facade comes with its runner, over this type's machine")
        if store is not None:
            machine.own_by_partition(offsets_partitions)
        self.machine = machine
        self.topics = topics
        self.routing = routing
        self.history = history
        self.classic_in_use = classic_in_use
        self.classic_holds = classic_holds
        self.broker_id = broker_id
        self.clock = clock
        self.facade = facade
        self.runner = runner or GroupRunner(
            machine,
            history,
            group_log,
            broker_id=broker_id,
            clock=clock,
            rejected=rejected,
            offsets_partitions=offsets_partitions,
            impl=CONSUMER_IMPL,
            store=store,
        )

    def handlers(self) -> dict[int, Handler]:
        return {
            ApiKey.CONSUMER_GROUP_HEARTBEAT: self.heartbeat,
            ApiKey.CONSUMER_GROUP_DESCRIBE: self.describe,
        }

    # ------------------------------------------------------------------ the shared APIs (GroupType)

    def holds(self, group_id: str) -> bool:
        return self.machine.holds(group_id)

    def offset_commit(
        self, req: g.OffsetCommitRequest, convert: Callable[[g.OffsetCommitResponse], Any]
    ) -> Any:
        token = Token(convert, req.group_id, "OffsetCommit")
        return self.runner.call(
            token,
            (req.group_id,),
            "OffsetCommit",
            lambda: self.machine.offset_commit(self.clock(), token, req),
        )

    def offset_fetch(self, req: g.OffsetFetchRequest) -> g.OffsetFetchResponse:
        return self.machine.offset_fetch(req)

    def describe_groups(self, group_ids: list[str]) -> list[g.DescribedGroup]:
        return self.machine.describe_groups(group_ids)

    def list_groups(self, states: list[str] | None) -> g.ListGroupsResponse:
        return self.machine.list_groups(states)

    def delete_groups(self, group_ids: list[str], convert: Callable[[g.DeleteGroupsResponse], Any]) -> Any:
        token = Token(convert)
        return self.runner.call(
            token,
            group_ids,
            "DeleteGroups",
            lambda: self.machine.delete_groups(self.clock(), token, group_ids),
        )

    # ------------------------------------------------------------------ ConsumerGroupHeartbeat

    def heartbeat(self, ctx: RequestContext, req: Any) -> Any:
        mreq = decode_heartbeat(ctx, req)

        def convert(r: c.ConsumerGroupHeartbeatResponse) -> Any:
            self._record(mreq, r)
            return encode_heartbeat(ctx.api_version, r)

        if other_coordinates(self.routing, mreq.group_id):
            return convert(c.ConsumerGroupHeartbeatResponse(ErrorCode.NOT_COORDINATOR))
        facade = self.facade
        if facade is None and not self.machine.holds(mreq.group_id) and self.classic_in_use(mreq.group_id):
            return convert(
                c.ConsumerGroupHeartbeatResponse(
                    ErrorCode.GROUP_ID_NOT_FOUND,
                    f"Cannot upgrade classic group {mreq.group_id} to consumer group because online upgrade is "
                    "disabled.",
                )
            )
        token = Token(convert, mreq.group_id, "ConsumerGroupHeartbeat")
        try:
            return self.runner.call(
                token,
                (mreq.group_id,),
                "ConsumerGroupHeartbeat",
                lambda: (
                    facade.consumer_group_heartbeat(self.clock(), token, mreq)
                    if facade is not None
                    else self.machine.heartbeat(self.clock(), token, mreq)
                ),
            )
        except GroupFailure:  # loud already (the runner logged it); the exchange is still one event
            return convert(c.ConsumerGroupHeartbeatResponse(ErrorCode.UNKNOWN_SERVER_ERROR))

    def _record(self, req: c.ConsumerGroupHeartbeatRequest, r: c.ConsumerGroupHeartbeatResponse) -> None:
        try:
            self.history.emit(
                "group_request", impl=CONSUMER_IMPL, broker_id=self.broker_id, **heartbeat_event(req, r)
            )
        except Exception:  # an event that cannot be written never fails the request
            log.exception("cannot record a ConsumerGroupHeartbeat event")

    # ------------------------------------------------------------------ ConsumerGroupDescribe

    def describe(self, ctx: RequestContext, req: Any) -> Any:
        cls = response_class(ApiKey.CONSUMER_GROUP_DESCRIBE, ctx.api_version)
        group_cls = nested(cls, "groups")
        member_cls = nested(group_cls, "members")
        assignment_cls = nested(member_cls, "assignment")
        tp_cls = nested(assignment_cls, "topic_partitions")
        ids = list(req.group_ids)
        mine = [gid for gid in ids if not other_coordinates(self.routing, gid)]
        classic = [gid for gid in mine if not self.machine.holds(gid) and self.classic_holds(gid)]
        asked = [gid for gid in mine if gid not in classic]
        described = {d.group_id: d for d in self.machine.consumer_group_describe(asked)} if asked else {}
        for gid in classic:
            described[gid] = c.DescribedConsumerGroup(
                gid, ErrorCode.GROUP_ID_NOT_FOUND, f"Group {gid} is not a consumer group."
            )

        def name_of(topic_id: uuid.UUID) -> str:
            meta = self.topics.by_id(topic_id)
            return "" if meta is None else meta.name

        def assignment(parts: tuple[c.TopicPartitions, ...]) -> Any:
            return assignment_cls(
                topic_partitions=tuple(
                    tp_cls(topic_id=tp.topic_id, topic_name=name_of(tp.topic_id), partitions=tp.partitions)
                    for tp in parts
                )
            )

        groups = []
        for gid in ids:
            d = described.get(gid) or c.DescribedConsumerGroup(gid, ErrorCode.NOT_COORDINATOR)
            groups.append(
                make(
                    group_cls,
                    error_code=kio_error(d.error),
                    error_message=d.error_message,
                    group_id=gid,
                    group_state=d.state,
                    group_epoch=d.group_epoch,
                    assignment_epoch=d.assignment_epoch,
                    assignor_name=d.assignor_name,
                    authorized_operations=NO_AUTH_OPS,
                    members=tuple(
                        make(
                            member_cls,
                            member_id=m.member_id,
                            instance_id=m.instance_id,
                            rack_id=m.rack_id,
                            member_epoch=m.member_epoch,
                            client_id=m.client_id,
                            client_host=m.client_host,
                            subscribed_topic_names=m.subscribed_topic_names,
                            subscribed_topic_regex=m.subscribed_topic_regex,
                            assignment=assignment(m.assignment),
                            target_assignment=assignment(m.target_assignment),
                        )
                        for m in d.members
                    ),
                )
            )
        return make(cls, throttle_time=ZERO_TD, groups=tuple(groups))

    # ------------------------------------------------------------------ life cycle

    @property
    def loading(self) -> bool:
        return self.runner.loading or bool(getattr(self.machine, "loading", False))
