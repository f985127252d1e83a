# pyright: strict
"""Both group types of one broker behind one facade, with Kafka 4's online migration between them
(``group.consumer.migration.policy``, ``GroupMetadataManager``): :class:`GroupCoordinators` holds the classic
machine (:class:`~coordinator.core.group.machine.GroupCoordinator`) and the consumer protocol's machine
(:class:`~coordinator.core.consumer.machine.ConsumerGroupCoordinator`), which share the committed offsets, routes
every group API to the machine holding the group id and converts a group from one type to the other.

A group id is held by at most one machine (after :meth:`GroupCoordinators.finish_loading`). Routing, as Kafka 4's
``GroupMetadataManager``:

* JoinGroup / SyncGroup / Heartbeat / LeaveGroup of a consumer group go to its classic-member paths
  (``classicGroup*ToConsumerGroup``): a classic-protocol member may join a non-empty consumer group whatever the
  policy; a JoinGroup to an *Empty* consumer group deletes it (its tombstones, offsets kept) and creates a classic
  group (``maybeDeleteEmptyConsumerGroup``). A SyncGroup to an Empty consumer group is UNKNOWN_MEMBER_ID.
* ConsumerGroupHeartbeat of a classic group: an Empty classic group is taken over (``maybeDeleteEmptyClassicGroup``,
  any policy); a non-empty one is converted when the heartbeat is a join (epoch 0) and the policy allows the upgrade,
  the group's protocol type is ``consumer``, it is not over ``group.consumer.max.size`` and every member's
  subscription and assignment decode (``validateOnlineUpgrade`` / ``convertToConsumerGroup``); else the answer is
  GROUP_ID_NOT_FOUND with Kafka 4's message. If the heartbeat that causes the conversion fails, nothing is converted.
* The last consumer-protocol member of a consumer group leaving (a leave, a session or rebalance timeout) while
  classic members remain converts it back, when the policy allows the downgrade and the classic members fit in
  ``group.max.size`` (``validateOnlineDowngradeWithFencedMember`` / ``convertToClassicGroup``): the classic group is
  Stable at the consumer group's epoch with each member's target assignment, and rebalances at once. So does a
  classic static member joining without member id in place of the last consumer-protocol member, a static one of
  its instance id (``validateOnlineDowngradeWithReplacedMember``): it takes the replaced member's place and target,
  is answered at once, and the classic group rebalances only if its subscribed topics differ.
* OffsetCommit / OffsetFetch / DescribeGroups / DeleteGroups go to the holder (the classic machine when none holds
  the id); ListGroups lists both; timers go by their key's kind.

Records (what a restart replays, :meth:`GroupCoordinators.load`): the upgrade writes the classic group as Empty (in
place of Kafka's group-metadata tombstone; see the deviations), then the consumer group's records
(``createConsumerGroupRecords``), then the joining heartbeat's; the downgrade writes the consumer group's tombstones
(``createGroupTombstoneRecords``), then the classic group record. On replay the last writer wins: a consumer group
read from the log shadows a classic group of the same id, which is forgotten when loading ends (its offsets stay).

How a shell drives it: exactly as either machine (call with the coordinator time and an opaque token, apply the
effects in order: ``Persist`` before any later ``Respond``, ``SetTimer`` / ``CancelTimer``, ``Emit``), through the
methods below only: ``join_group``, ``sync_group``, ``heartbeat``, ``leave_group``, ``consumer_group_heartbeat``,
``consumer_group_describe``, ``offset_commit``, ``offset_fetch``, ``describe_groups``, ``list_groups``,
``delete_groups``, ``on_timer``, ``begin_loading`` / ``load`` / ``finish_loading``. ``holder(group_id)`` says which
type holds a group. A conversion is an ``Emit`` of kind ``group_converted`` (group, from_type, to_type, epoch: the
consumer group's epoch, members, reason). Build it as ``GroupCoordinators(GroupCoordinator(config,
offsets=shared), ConsumerGroupCoordinator(consumer_config, topics, offsets=shared))`` and drive it with one runner
(it has the runner's machine methods: ``on_timer``, ``begin_loading``, ``load``, ``finish_loading``): the type
checks a shell made between the two machines (an Empty classic group taken over, classic requests to a consumer
group refused, which machine replays a record) are the facade's now. The machines stay reachable as ``classic`` and
``consumer`` for what only one of them offers (``consumer_group_describe`` is here too; ``wedged`` /
``reset_group`` are the classic machine's).

Deviations from Kafka:

* The upgrade writes the classic group as an Empty group record where Kafka writes the group-metadata tombstone:
  herdlab's group tombstone (``GroupTombstoneRecord``) also deletes the group's offsets, which a conversion keeps.
  An Empty classic group taken over gets no record at all (its last one is Empty already). Replay gives the same
  groups (the consumer records that follow shadow it).
* The downgrade on a static replacement writes only the consumer group's tombstones and the classic group record
  (Kafka first writes the replacement's own records, which its tombstones then delete): replay gives the same.
* Single-broker mode only: the facade converts nothing in replicated mode (Kafka's conversions are ordinary
  records of the group's partition); with either machine replicated, the group types stay apart as before.
* A downgrade whose conversion fails (a member's subscription that does not decode) leaves the ordinary fence to
  happen (Kafka answers the leave GROUP_ID_NOT_FOUND and, for a timer, keeps the member).
* DescribeGroups of a consumer group with classic members is the consumer machine's answer for any consumer group
  (GROUP_ID_NOT_FOUND, not a classic group); Kafka 4's answer for such a group was not compared.
"""

from __future__ import annotations

import logging
from typing import Any, cast

from coordinator.core.consumer.api import (
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
    DescribedConsumerGroup,
)
from coordinator.core.consumer.classic_members import (
    ConversionRefused,
    classic_group_from_consumer,
    consumer_group_from_classic,
    group_tombstone_records,
)
from coordinator.core.consumer.group import ConsumerGroup
from coordinator.core.consumer.machine import (
    REMOVED_STATIC_REPLACED,
    TIMER_CLASSIC_JOIN,
    TIMER_CLASSIC_SYNC,
    TIMER_REBALANCE,
    TIMER_SESSION,
    ConsumerGroupCoordinator,
)
from coordinator.core.consumer.member import ConsumerGroupMember
from coordinator.core.consumer.protocol import PROTOCOL_TYPE
from coordinator.core.group.api import (
    EMIT_MEMBER_REMOVED,
    DeletedGroup,
    DeleteGroupsRequest,
    DeleteGroupsResponse,
    DescribedGroup,
    DescribeGroupsRequest,
    DescribeGroupsResponse,
    Effect,
    Emit,
    GroupState,
    HeartbeatRequest,
    JoinGroupRequest,
    JoinGroupResponse,
    LeaveGroupRequest,
    ListGroupsRequest,
    ListGroupsResponse,
    OffsetCommitRequest,
    OffsetFetchRequest,
    OffsetFetchResponse,
    Persist,
    Respond,
    SyncGroupRequest,
    TimerKey,
)
from coordinator.core.group.errors import ErrorCode
from coordinator.core.group.group import Group
from coordinator.core.group.machine import GroupCoordinator
from coordinator.core.group.records import GroupMetadataRecord, Record

__all__ = ["CLASSIC", "CONSUMER", "EMIT_GROUP_CONVERTED", "GroupCoordinators"]

log = logging.getLogger("coordinator.groups")

#: Group types, as ListGroups names them.
CLASSIC = "classic"
CONSUMER = "consumer"

#: ``group_converted``: group, from_type, to_type, epoch (the consumer group's epoch), members, reason.
EMIT_GROUP_CONVERTED = "group_converted"

_CONSUMER_TIMERS = frozenset({TIMER_SESSION, TIMER_REBALANCE, TIMER_CLASSIC_JOIN, TIMER_CLASSIC_SYNC})


class _Inner:
    """The token of a machine's answer the facade merges (DescribeGroups, DeleteGroups over both types)."""


class GroupCoordinators:
    """The classic and the consumer group machines of one broker, with the online migration between them (see the
    module docstring). Both machines must share one :class:`~coordinator.core.group.offsets.OffsetManager`; the
    migration policy is the consumer machine's configuration (``ConsumerGroupConfig.migration_policy``). The
    facade installs itself as the consumer machine's ``on_fence`` hook. Not thread-safe."""

    def __init__(
        self, classic: GroupCoordinator, consumer: ConsumerGroupCoordinator, *, emit_events: bool = True
    ) -> None:
        if classic.offsets is not consumer.offsets:
            raise ValueError("the two group machines must share their offsets")
        self.classic = classic
        self.consumer = consumer
        self._emit_events = emit_events
        consumer.on_fence = self._maybe_downgrade
        consumer.on_static_replace = self._maybe_downgrade_on_static_replacement

    # ============================================================================================ routing

    def holder(self, group_id: str) -> str | None:
        """``"consumer"``, ``"classic"`` or None: which type holds ``group_id``."""
        if self.consumer.holds(group_id):
            return CONSUMER
        if self.classic.group(group_id) is not None:
            return CLASSIC
        return None

    @property
    def _migrating(self) -> bool:
        return not (self.classic.replicated or self.consumer.replicated)

    # ============================================================================================ classic APIs

    def join_group(self, now_ms: int, token: Any, req: JoinGroupRequest) -> list[Effect]:
        """JoinGroup: a consumer group's classic-member path, or the classic machine (see the module docstring)."""
        group = self.consumer.group(req.group_id)
        if group is None:
            return self.classic.join_group(now_ms, token, req)
        cfg = self.classic.config
        if not cfg.min_session_timeout_ms <= req.session_timeout_ms <= cfg.max_session_timeout_ms:
            return [
                Respond(token, JoinGroupResponse(ErrorCode.INVALID_SESSION_TIMEOUT, member_id=req.member_id))
            ]
        if group.members:
            return self.consumer.classic_join_group(now_ms, token, req)
        out: list[Effect] = []
        if self._migrating and self.consumer.drop_empty_group(now_ms, req.group_id, out):
            out.extend(self.classic.join_group(now_ms, token, req))
            return out
        # Replicated mode: a group of another type (Kafka's answer when it does not convert).
        return [
            Respond(token, JoinGroupResponse(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, member_id=req.member_id))
        ]

    def sync_group(self, now_ms: int, token: Any, req: SyncGroupRequest) -> list[Effect]:
        if self.consumer.holds(req.group_id):
            return self.consumer.classic_sync_group(now_ms, token, req)
        return self.classic.sync_group(now_ms, token, req)

    def heartbeat(self, now_ms: int, token: Any, req: HeartbeatRequest) -> list[Effect]:
        if self.consumer.holds(req.group_id):
            return self.consumer.classic_heartbeat(now_ms, token, req)
        return self.classic.heartbeat(now_ms, token, req)

    def leave_group(self, now_ms: int, token: Any, req: LeaveGroupRequest) -> list[Effect]:
        if self.consumer.holds(req.group_id):
            return self.consumer.classic_leave_group(now_ms, token, req)
        return self.classic.leave_group(now_ms, token, req)

    # ============================================================================================ consumer APIs

    def consumer_group_heartbeat(
        self, now_ms: int, token: Any, req: ConsumerGroupHeartbeatRequest
    ) -> list[Effect]:
        """ConsumerGroupHeartbeat; the upgrade of a classic group happens here (see the module docstring)."""
        gid = req.group_id
        classic = self.classic.group(gid)
        if classic is None or self.consumer.holds(gid) or self.consumer.loading:
            return self.consumer.heartbeat(now_ms, token, req)
        invalid = self.consumer.invalid_heartbeat(req)
        if invalid is not None:
            return [Respond(token, invalid)]
        if classic.state in (GroupState.EMPTY, GroupState.DEAD):
            # Kafka ``maybeDeleteEmptyClassicGroup``: the empty classic group gives way, whatever the policy.
            effects = self.consumer.heartbeat(now_ms, token, req)
            if _heartbeat_error(effects) is ErrorCode.NONE:
                released: list[Effect] = []
                self.classic.release_group(now_ms, gid, released)
                effects[:0] = released
            return effects
        if req.member_epoch != 0 or not self._migrating:
            return [Respond(token, _not_found(f"Group {gid} is not a consumer group."))]
        refusal = self._upgrade_refusal(classic)
        if refusal is not None:
            log.info("group=%s %s", gid, refusal)
            return [Respond(token, _not_found(refusal))]
        try:
            converted, records = consumer_group_from_classic(classic, self.consumer.topics, now_ms)
        except ConversionRefused as e:
            log.info("group=%s %s", gid, e)
            return [Respond(token, _not_found(str(e)))]
        conversion: list[Effect] = []
        converted_members = len(converted.members)
        self.consumer.adopt_group(now_ms, converted, records, conversion)
        effects = self.consumer.heartbeat(now_ms, token, req)
        if _heartbeat_error(effects) is not ErrorCode.NONE:
            self.consumer.abandon_group(gid)
            return effects
        out: list[Effect] = []
        self.classic.release_group(now_ms, gid, out)
        # In place of Kafka's group-metadata tombstone: the classic group as Empty (the offsets stay).
        out.append(
            Persist(
                GroupMetadataRecord(gid, classic.generation_id, classic.protocol_type, None, None, now_ms, ())
            )
        )
        out.extend(conversion)
        self._emit(
            out,
            {
                "group": gid,
                "from_type": CLASSIC,
                "to_type": CONSUMER,
                "epoch": classic.generation_id,
                "members": converted_members,
                "reason": f"a consumer-protocol member joined (client {req.client_id})",
            },
        )
        log.info(
            "group=%s generation=%d classic group upgraded to a consumer group with %d classic members",
            gid,
            classic.generation_id,
            converted_members,
        )
        out.extend(effects)
        return out

    def _upgrade_refusal(self, group: Group) -> str | None:
        """Kafka 4 ``validateOnlineUpgrade``'s message, None if the upgrade is allowed."""
        gid = group.group_id
        if not self.consumer.config.upgrade_enabled:
            return f"Cannot upgrade classic group {gid} to consumer group because online upgrade is disabled."
        if group.protocol_type != PROTOCOL_TYPE:
            return (
                f"Cannot upgrade classic group {gid} to consumer group because the group does not use the consumer "
                "embedded protocol."
            )
        if len(group.members) > self.consumer.config.max_size:
            return (
                f"Cannot upgrade classic group {gid} to consumer group because the group size exceeds the consumer "
                "group maximum size."
            )
        return None

    def _maybe_downgrade(
        self, now_ms: int, group: ConsumerGroup, member: ConsumerGroupMember, reason: str, out: list[Effect]
    ) -> bool:
        """The consumer machine's ``on_fence`` hook: Kafka ``validateOnlineDowngradeWithFencedMember`` and
        ``convertToClassicGroup`` (see the module docstring). True when the group was converted."""
        gid = group.group_id
        if (
            not self._migrating
            or not group.all_members_use_classic_protocol_except([member.member_id])
            or len(group.members) <= 1
        ):
            return False
        if not self.consumer.config.downgrade_enabled:
            log.info("group=%s cannot downgrade to a classic group: the online downgrade is disabled", gid)
            return False
        if len(group.members) - 1 > self.classic.config.max_size:
            log.info("group=%s cannot downgrade to a classic group: more members than group.max.size", gid)
            return False
        try:
            classic = classic_group_from_consumer(group, [member.member_id], self.consumer.topics, now_ms)
        except ConversionRefused as e:
            log.warning("group=%s %s", gid, e)
            return False
        out.extend(Persist(record) for record in group_tombstone_records(group))
        self.consumer.release_group(gid, out)
        if self._emit_events:
            out.append(
                Emit(
                    EMIT_MEMBER_REMOVED,
                    {
                        "group": gid,
                        "member": member.member_id,
                        "epoch": group.group_epoch,
                        "member_epoch": member.member_epoch,
                        "instance_id": member.instance_id,
                        "reason": reason,
                    },
                )
            )
        self._emit(
            out,
            {
                "group": gid,
                "from_type": CONSUMER,
                "to_type": CLASSIC,
                "epoch": group.group_epoch,
                "members": len(classic.members),
                "reason": f"the last consumer-protocol member {member.member_id} left ({reason})",
            },
        )
        log.info(
            "group=%s epoch=%d consumer group downgraded to a classic group with %d members",
            gid,
            group.group_epoch,
            len(classic.members),
        )
        self.classic.adopt_group(
            now_ms, classic, out, f"Downgrade group {gid} from consumer to classic for member leaving."
        )
        return True

    def _maybe_downgrade_on_static_replacement(
        self,
        now_ms: int,
        group: ConsumerGroup,
        replaced: ConsumerGroupMember,
        joining: ConsumerGroupMember,
        subscription_changed: bool,
        out: list[Effect],
    ) -> bool:
        """The consumer machine's ``on_static_replace`` hook: Kafka ``validateOnlineDowngradeWithReplacedMember`` and
        ``convertToClassicGroup`` with a joining member, which takes the replaced member's place and target; the
        classic group rebalances only if the joining member's subscription differs. True when converted."""
        gid = group.group_id
        if not self._migrating or not self.consumer.config.downgrade_enabled:
            return False
        if len(group.members) > self.classic.config.max_size:
            return False
        try:
            classic = classic_group_from_consumer(
                group, [replaced.member_id], self.consumer.topics, now_ms, joining=joining
            )
        except ConversionRefused as e:
            log.warning("group=%s %s", gid, e)
            return False
        out.extend(Persist(record) for record in group_tombstone_records(group))
        self.consumer.release_group(gid, out)
        if self._emit_events:
            out.append(
                Emit(
                    EMIT_MEMBER_REMOVED,
                    {
                        "group": gid,
                        "member": replaced.member_id,
                        "epoch": group.group_epoch,
                        "member_epoch": replaced.member_epoch,
                        "instance_id": replaced.instance_id,
                        "reason": REMOVED_STATIC_REPLACED,
                    },
                )
            )
        self._emit(
            out,
            {
                "group": gid,
                "from_type": CONSUMER,
                "to_type": CLASSIC,
                "epoch": group.group_epoch,
                "members": len(classic.members),
                "reason": f"classic member {joining.member_id} replaced static member {replaced.member_id}",
            },
        )
        log.info(
            "group=%s epoch=%d consumer group downgraded to a classic group: classic member %s replaced the last "
            "consumer-protocol member %s (instance %s)",
            gid,
            group.group_epoch,
            joining.member_id,
            replaced.member_id,
            joining.instance_id,
        )
        self.classic.adopt_group(
            now_ms,
            classic,
            out,
            f"Downgrade group {gid} from consumer to classic for static member replacement with different "
            "subscription.",
            rebalance=subscription_changed,
        )
        return True

    def consumer_group_describe(self, group_ids: list[str]) -> list[DescribedConsumerGroup]:
        return self.consumer.consumer_group_describe(group_ids)

    # ============================================================================================ shared APIs

    def offset_commit(self, now_ms: int, token: Any, req: OffsetCommitRequest) -> list[Effect]:
        if self.consumer.holds(req.group_id):
            return self.consumer.offset_commit(now_ms, token, req)
        return self.classic.offset_commit(now_ms, token, req)

    def offset_fetch(self, now_ms: int, req: OffsetFetchRequest) -> OffsetFetchResponse:
        if self.consumer.holds(req.group_id):
            return self.consumer.offset_fetch(req)
        return self.classic.offset_fetch(now_ms, req)

    def describe_groups(self, now_ms: int, req: DescribeGroupsRequest) -> DescribeGroupsResponse:
        """One description per id, in request order, each by the machine holding it."""
        mine = [g for g in req.groups if self.consumer.holds(g)]
        described: dict[str, DescribedGroup] = {d.group_id: d for d in self.consumer.describe_groups(mine)}
        rest = [g for g in req.groups if g not in described]
        if rest:
            for d in self.classic.describe_groups(now_ms, DescribeGroupsRequest(rest)).groups:
                described[d.group_id] = d
        return DescribeGroupsResponse([described[g] for g in req.groups])

    def list_groups(self, now_ms: int, req: ListGroupsRequest) -> ListGroupsResponse:
        """Both types' groups (a classic group shadowed by a consumer group of its id is left out)."""
        classic = self.classic.list_groups(now_ms, req)
        consumer = self.consumer.list_groups(req.states_filter)
        error = classic.error if classic.error is not ErrorCode.NONE else consumer.error
        groups = [g for g in classic.groups if not self.consumer.holds(g.group_id)] + consumer.groups
        return ListGroupsResponse(error, groups)

    def delete_groups(self, now_ms: int, token: Any, req: DeleteGroupsRequest) -> list[Effect]:
        """DeleteGroups over both types: each id by its holder, one answer in request order (last)."""
        out: list[Effect] = []
        results: dict[str, DeletedGroup] = {}
        mine = [g for g in req.groups if self.consumer.holds(g)]
        rest = [g for g in req.groups if g not in mine]
        if mine:
            out.extend(self._merge(self.consumer.delete_groups(now_ms, _Inner(), mine), results))
        if rest:
            out.extend(
                self._merge(self.classic.delete_groups(now_ms, _Inner(), DeleteGroupsRequest(rest)), results)
            )
        out.append(Respond(token, DeleteGroupsResponse([results[g] for g in req.groups])))
        return out

    @staticmethod
    def _merge(effects: list[Effect], results: dict[str, DeletedGroup]) -> list[Effect]:
        kept: list[Effect] = []
        for effect in effects:
            if isinstance(effect, Respond) and isinstance(effect.token, _Inner):
                response = effect.response
                assert isinstance(response, DeleteGroupsResponse)
                for result in response.results:
                    results.setdefault(result.group_id, result)
            else:
                kept.append(effect)
        return kept

    # ============================================================================================ timers, loading

    def on_timer(self, now_ms: int, key: TimerKey) -> list[Effect]:
        """A timer of either machine fired (by its key's kind)."""
        if key and key[0] in _CONSUMER_TIMERS:
            return self.consumer.on_timer(now_ms, key)
        return self.classic.on_timer(now_ms, key)

    def begin_loading(self, partition: int | None = None) -> list[Effect]:
        """Single broker: both machines forget everything and load (``partition`` must be None: the facade is the
        single-broker mode's; the signature is the shell's runner's)."""
        _single_broker(partition)
        out = self.classic.begin_loading()
        out.extend(self.consumer.begin_loading())
        return out

    def load(self, record: object) -> None:
        """Replay one record (log order) into the machine it belongs to: consumer records, and offsets or
        deletions of a group the consumer machine holds at this point, go to it; the rest to the classic
        machine (``TypeError`` for what is no group record)."""
        if self.consumer.takes_record(record):
            self.consumer.load(record)
        else:
            self.classic.load(cast(Record, record))

    def finish_loading(self, now_ms: int, partition: int | None = None) -> list[Effect]:
        """End loading: a classic group shadowed by a consumer group of the same id (the log's last word on the id)
        is forgotten, its offsets kept; then both machines finish (timers for every member)."""
        _single_broker(partition)
        for gid in self.classic.group_ids():
            if self.consumer.holds(gid):
                self.classic.forget_group(gid)
        out = self.classic.finish_loading(now_ms)
        out.extend(self.consumer.finish_loading(now_ms))
        return out

    def _emit(self, out: list[Effect], fields: dict[str, Any]) -> None:
        if self._emit_events:
            out.append(Emit(EMIT_GROUP_CONVERTED, fields))


def _single_broker(partition: int | None) -> None:
    if partition is not None:
        raise ValueError("the group facade loads in single-broker mode only (partition None)")


def _not_found(message: str) -> ConsumerGroupHeartbeatResponse:
    return ConsumerGroupHeartbeatResponse(ErrorCode.GROUP_ID_NOT_FOUND, message)


def _heartbeat_error(effects: list[Effect]) -> ErrorCode:
    for effect in effects:
        if isinstance(effect, Respond) and isinstance(effect.response, ConsumerGroupHeartbeatResponse):
            return effect.response.error
    return ErrorCode.UNKNOWN_SERVER_ERROR
