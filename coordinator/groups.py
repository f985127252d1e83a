"""The asyncio shell around the pure :class:`~coordinator.group.machine.GroupCoordinator`.

Contract
--------
* Each group API handler turns the kio request (any served version) into the machine's
  version-neutral request, calls the machine with the current time and a fresh token, applies the
  returned effects in order, and answers with a kio response of the request's version:

  - :class:`~coordinator.group.api.Respond` for the handler's own token during the same call gives
    the response directly (Heartbeat, most errors); otherwise the handler returns a future that a
    later Respond completes (a parked JoinGroup or SyncGroup);
  - ``SetTimer`` / ``CancelTimer`` keep one asyncio timer per key; a timer fires
    ``on_timer(now_ms, key)`` with ``now_ms >= deadline``. Re-arming a timer to a later deadline
    (every heartbeat) only records the new deadline: the armed handle re-arms itself when it fires
    early, so a heartbeat costs no timer-heap work;
  - ``Persist`` records go to the :class:`~coordinator.group_log.GroupLog` (if any), written before
    any later Respond of the same effect list is delivered;
  - ``Emit`` events go to the history with ``impl="coordinator"`` and the broker id; group state
    transitions also get one INFO log line naming group, generation and members.

* **Failures are loud, never a wedge.** Every machine call (a request or a timer) runs through
  :meth:`GroupShell.run`: if the machine raises, if applying an effect fails (a group-log write, a
  timer), or if afterwards a group is in PreparingRebalance without an armed join timer, the shell
  logs the error with its traceback, counts it (``group_failure`` in the broker's ``rejected``
  counters), and resets the group (:meth:`~coordinator.group.machine.GroupCoordinator.reset_group`):
  every parked JoinGroup / SyncGroup of it is answered (UNKNOWN_MEMBER_ID, or UNKNOWN_SERVER_ERROR
  when its answer was lost in the failure), its timers go, and it continues Empty with its offsets,
  so members simply join again. The request that hit the failure is answered UNKNOWN_SERVER_ERROR.
  A response that cannot be converted fails only that request; an event that cannot be written to
  the history is logged.
* Time is wall-clock milliseconds (record timestamps are meaningful across restarts).
* With several brokers, a group this broker does not coordinate (see
  :class:`~coordinator.cluster.ClusterView`) gets NOT_COORDINATOR without reaching the machine, in
  Kafka 3.7's order (``GroupCoordinator.validateGroupStatus``): an empty group id is INVALID_GROUP_ID
  for JoinGroup / SyncGroup / Heartbeat / LeaveGroup wherever it is sent; unknown topics of an
  OffsetCommit stay UNKNOWN_TOPIC_OR_PARTITION. A SyncGroup v5+ without protocol type or name is
  INCONSISTENT_GROUP_PROTOCOL before anything else (``KafkaApis.handleSyncGroupRequest``).
* Loading: :meth:`GroupShell.load` replays the group log into the machine between
  ``begin_loading`` and ``finish_loading``, yielding to the event loop between chunks, so requests
  arriving meanwhile are answered by the machine (COORDINATOR_LOAD_IN_PROGRESS).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from kio.schema.errors import ErrorCode as KioError

from coordinator.cluster import ClusterView
from coordinator.context import RequestContext
from coordinator.group import api as g
from coordinator.group.errors import ErrorCode
from coordinator.group.machine import GroupCoordinator
from coordinator.group.records import Record
from coordinator.group_log import GroupLog
from coordinator.topics import TopicStore
from coordinator.wire import ZERO_TD, make, nested, response_class
from harness.kernel.history import History

__all__ = ["GROUP_VERSIONS", "GroupFailure", "GroupShell"]

log = logging.getLogger("coordinator")

#: API key -> (min, max) served by :class:`GroupShell`.
GROUP_VERSIONS: dict[int, tuple[int, int]] = {
    8: (2, 8),  # OffsetCommit
    9: (1, 8),  # OffsetFetch
    10: (0, 4),  # FindCoordinator
    11: (0, 9),  # JoinGroup
    12: (0, 4),  # Heartbeat
    13: (0, 5),  # LeaveGroup
    14: (0, 5),  # SyncGroup
    15: (0, 6),  # DescribeGroups
    16: (0, 5),  # ListGroups
    42: (0, 2),  # DeleteGroups
}

_KIO_ERROR: dict[int, KioError] = {int(e): e for e in KioError}
_NO_AUTH_OPS = -(2**31)
_LOAD_CHUNK = 2000


def kio_error(error: int) -> KioError:
    """The kio enum member for a wire error code."""
    try:
        return _KIO_ERROR[int(error)]
    except KeyError:
        return KioError.unknown_server_error


def now_ms() -> int:
    return time.time_ns() // 1_000_000


class GroupFailure(RuntimeError):
    """A machine call or the application of its effects failed for a group; the group was reset."""


class _Token:
    """Tags one request in the machine; carries where its answer goes."""

    __slots__ = ("convert", "error", "fut", "response")

    def __init__(self, convert: Callable[[Any], Any]) -> None:
        self.convert = convert
        self.fut: asyncio.Future[Any] | None = None
        self.response: Any = None
        #: Set when ``convert`` failed for an answer given during the call itself.
        self.error: BaseException | None = None


class _Timer:
    __slots__ = ("deadline_ms", "fires_ms", "handle")

    def __init__(self, deadline_ms: int, fires_ms: int, handle: asyncio.TimerHandle) -> None:
        self.deadline_ms = deadline_ms
        self.fires_ms = fires_ms
        self.handle = handle


class GroupShell:
    """Group APIs of the broker: adapters, effect application, timers, durable log."""

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
    ) -> None:
        self.machine = machine
        self.cluster = cluster
        self.store = store
        self.history = history
        self.group_log = group_log
        self.broker_id = broker_id
        self.clock = clock
        self.known_topic = known_topic or (lambda name: store.get(name) is not None)
        #: Counters by reason; a group failure counts as ``group_failure`` (the broker reports them).
        self.rejected: Counter[str] = rejected if rejected is not None else Counter()
        self._timers: dict[Any, _Timer] = {}
        #: Parked requests (JoinGroup / SyncGroup) by group, so that a failed group answers all of them.
        self._waiting: dict[str, set[_Token]] = {}
        self._loop: asyncio.AbstractEventLoop | None = None
        self.loading = False

    def handlers(self) -> dict[int, Callable[[RequestContext, Any], Any]]:
        return {
            8: self.offset_commit,
            9: self.offset_fetch,
            10: self.find_coordinator,
            11: self.join_group,
            12: self.heartbeat,
            13: self.leave_group,
            14: self.sync_group,
            15: self.describe_groups,
            16: self.list_groups,
            42: self.delete_groups,
        }

    # ------------------------------------------------------------------ effects

    def _call(
        self, token: _Token, group_ids: Sequence[str], what: str, call: Callable[[], list[g.Effect]]
    ) -> Any:
        """Run a machine request for ``group_ids`` (see :meth:`run`); the handler's answer: the response, or a
        future of it when the request is parked. Raises :class:`GroupFailure` (the request is then answered
        UNKNOWN_SERVER_ERROR by the server) or the response conversion's error."""
        self.run(group_ids, what, call)
        if token.error is not None:
            raise token.error
        if token.response is not None:
            return token.response
        fut = asyncio.get_running_loop().create_future()
        token.fut = fut
        if group_ids:
            waiting = self._waiting.setdefault(group_ids[0], set())
            waiting.add(token)
            fut.add_done_callback(lambda _f: waiting.discard(token))
        return fut

    def run(self, group_ids: Sequence[str], what: str, call: Callable[[], list[g.Effect]]) -> None:
        """Call the machine and apply its effects; afterwards no group of ``group_ids`` may be wedged
        (:meth:`GroupCoordinator.wedged`, or PreparingRebalance without an armed join timer).

        Any exception -- in the machine, in applying an effect, or a wedged group -- is a loud failure: an ERROR
        log line with the traceback, the ``group_failure`` counter, and every group of ``group_ids`` is reset
        (:meth:`GroupCoordinator.reset_group`: parked requests answered, members rejoin). Then
        :class:`GroupFailure` is raised.
        """
        try:
            self.apply(call())
            for group_id in group_ids:
                why = self._wedged(group_id)
                if why is not None:
                    raise GroupFailure(f"group {group_id} is wedged after {what}: {why}")
        except Exception as e:
            self._fail(group_ids, what, e)
            raise GroupFailure(f"{what} failed for group(s) {list(group_ids)}: {e}") from e

    def _wedged(self, group_id: str) -> str | None:
        why = self.machine.wedged(group_id)
        if why is not None:
            return why
        group = self.machine.group(group_id)
        if (
            group is not None
            and group.state is g.GroupState.PREPARING_REBALANCE
            and group.join_key not in self._timers
        ):
            return "PreparingRebalance without an armed join timer"
        return None

    def _fail(self, group_ids: Sequence[str], what: str, error: BaseException) -> None:
        self.rejected["group_failure"] += 1
        log.error("group(s) %s: %s failed; resetting: %s", list(group_ids), what, error, exc_info=error)
        for group_id in group_ids:
            for key in [k for k in self._timers if len(k) > 1 and k[1] == group_id]:
                self._timers.pop(key).handle.cancel()
            try:
                effects = self.machine.reset_group(self.clock(), group_id, f"{what} failed: {error}")
            except Exception:
                log.critical("group=%s cannot be reset; dropping it from memory", group_id, exc_info=True)
                self.machine.drop_group(group_id)
            else:
                try:
                    self.apply(effects)  # its one Persist comes last: a failed write loses only that
                except Exception:
                    log.error(
                        "group=%s was reset, but its empty state was not written", group_id, exc_info=True
                    )
            for key in [k for k in self._timers if len(k) > 1 and k[1] == group_id]:
                self._timers.pop(key).handle.cancel()
            for token in list(self._waiting.pop(group_id, ())):
                if token.fut is not None and not token.fut.done():
                    token.fut.set_exception(GroupFailure(f"group {group_id}: {what} failed"))

    def apply(self, effects: Iterable[g.Effect]) -> None:
        """Apply machine effects in order (see the module docstring). A failing Persist or timer effect raises
        (the caller resets the group); a response that cannot be converted fails that request only; a history
        event that cannot be written is logged."""
        pending: list[Record] = []
        for effect in effects:
            if isinstance(effect, g.Respond):
                if pending:
                    self._persist(pending)
                    pending = []
                self._respond(effect.token, effect.response)
            elif isinstance(effect, g.SetTimer):
                self._set_timer(effect.key, effect.deadline_ms)
            elif isinstance(effect, g.CancelTimer):
                t = self._timers.pop(effect.key, None)
                if t is not None:
                    t.handle.cancel()
            elif isinstance(effect, g.Persist):
                pending.append(effect.record)
            elif isinstance(effect, g.Emit):
                try:
                    self._emit(effect)
                except Exception:
                    log.exception("cannot record group event %s", effect.kind)
        if pending:
            self._persist(pending)

    def _persist(self, records: list[Record]) -> None:
        if self.group_log is not None:
            self.group_log.append(records)

    @staticmethod
    def _respond(token: Any, response: Any) -> None:
        if not isinstance(token, _Token):
            return
        try:
            converted = token.convert(response)
        except Exception as e:
            log.exception("cannot convert the answer %r", response)
            if token.fut is None:
                token.error = e
            elif not token.fut.done():
                token.fut.set_exception(e)
            return
        if token.fut is None:
            token.response = converted
        elif not token.fut.done():
            token.fut.set_result(converted)

    def _emit(self, effect: g.Emit) -> None:
        fields = effect.fields
        self.history.emit(effect.kind, impl="coordinator", broker_id=self.broker_id, **fields)
        if effect.kind == g.EMIT_GROUP_STATE:
            log.info(
                "group=%s generation=%s state %s -> %s members=%s [%s]",
                fields.get("group"),
                fields.get("generation"),
                fields.get("from_state"),
                fields.get("to_state"),
                fields.get("members"),
                ",".join(self._member_ids(fields.get("group"))),
            )
        elif effect.kind == g.EMIT_MEMBER_REMOVED:
            log.info(
                "group=%s generation=%s member=%s removed (%s)",
                fields.get("group"),
                fields.get("generation"),
                fields.get("member"),
                fields.get("reason"),
            )
        elif effect.kind in (g.EMIT_REBALANCE_BEGIN, g.EMIT_REBALANCE_END, g.EMIT_MEMBER_ADDED):
            log.debug("%s %s", effect.kind, fields)

    def _member_ids(self, group: Any) -> list[str]:
        if not isinstance(group, str):
            return []
        try:
            described = self.machine.describe_groups(self.clock(), g.DescribeGroupsRequest([group]))
        except Exception:  # a log line must never break the broker
            return []
        return [m.member_id for d in described.groups for m in d.members]

    # ------------------------------------------------------------------ timers

    def _set_timer(self, key: Any, deadline_ms: int) -> None:
        t = self._timers.get(key)
        if t is not None:
            if t.fires_ms <= deadline_ms:
                t.deadline_ms = deadline_ms  # the handle fires first and re-arms itself
                return
            t.handle.cancel()
        self._arm(key, deadline_ms)

    def _arm(self, key: Any, deadline_ms: int) -> None:
        loop = self._loop or asyncio.get_running_loop()
        self._loop = loop
        delay = max(0.0, (deadline_ms - self.clock()) / 1000.0)
        handle = loop.call_later(delay, self._fire, key)
        self._timers[key] = _Timer(deadline_ms, deadline_ms, handle)

    def _fire(self, key: Any) -> None:
        t = self._timers.get(key)
        if t is None:
            return
        now = self.clock()
        if t.deadline_ms > now + 1:  # re-armed to a later deadline since this handle was set
            self._arm(key, t.deadline_ms)
            return
        del self._timers[key]
        group_id = key[1] if len(key) > 1 and isinstance(key[1], str) else None
        due = max(now, t.deadline_ms)
        with contextlib.suppress(GroupFailure):  # loud already (see run); the group was reset
            self.run(
                (group_id,) if group_id is not None else (),
                f"timer {key}",
                lambda: self.machine.on_timer(due, key),
            )

    def cancel_timers(self) -> None:
        for t in self._timers.values():
            t.handle.cancel()
        self._timers.clear()

    @property
    def timer_count(self) -> int:
        return len(self._timers)

    # ------------------------------------------------------------------ loading

    async def load(self) -> tuple[int, int]:
        """Replay the group log into the machine; ``(records loaded, records skipped)``.

        A line that does not decode (see :class:`~coordinator.group_log.GroupLog`) or a record the machine
        rejects is skipped with a warning naming its line; everything else is loaded. If reading the log
        itself fails, the error propagates, and the groups loaded until then are served (Kafka's
        ``loadGroupsAndOffsets`` logs the error and owns the partition all the same): loading always ends.
        """
        self.loading = True
        self.apply(self.machine.begin_loading())
        count = skipped = 0
        try:
            if self.group_log is not None:
                for lineno, record in self.group_log.replay_lines():
                    try:
                        self.machine.load(record)
                    except Exception as e:
                        skipped += 1
                        log.warning(
                            "group log %s line %d skipped: %s (%s: %s)",
                            self.group_log.path,
                            lineno,
                            record,
                            type(e).__name__,
                            e,
                        )
                        continue
                    count += 1
                    if count % _LOAD_CHUNK == 0:
                        await asyncio.sleep(0)
                skipped += self.group_log.skipped
        finally:
            self.apply(self.machine.finish_loading(self.clock()))
            self.loading = False
        return count, skipped

    # ------------------------------------------------------------------ helpers

    def _not_coordinator(self, group_id: str) -> bool:
        return not self.cluster.is_coordinator(group_id)

    def _other_coordinates(self, group_id: str) -> bool:
        """NOT_COORDINATOR is the answer for a JoinGroup / SyncGroup / Heartbeat / LeaveGroup: Kafka 3.7's
        ``GroupCoordinator.validateGroupStatus`` checks, in order, INVALID_GROUP_ID (an empty id, which the
        machine answers), COORDINATOR_LOAD_IN_PROGRESS (only for a group whose offsets partition this broker is
        loading, i.e. one it coordinates: the machine answers that too) and NOT_COORDINATOR. So an empty id
        never gets NOT_COORDINATOR, and a group of another broker gets it even while this one loads."""
        return bool(group_id) and not self.cluster.is_coordinator(group_id)

    # ------------------------------------------------------------------ FindCoordinator

    def find_coordinator(self, ctx: RequestContext, req: Any) -> Any:
        cls = response_class(10, ctx.api_version)
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
        cls = response_class(11, ctx.api_version)
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
        token = _Token(convert)
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
        return self._call(
            token, (req.group_id,), "JoinGroup", lambda: self.machine.join_group(self.clock(), token, mreq)
        )

    # ------------------------------------------------------------------ SyncGroup

    def sync_group(self, ctx: RequestContext, req: Any) -> Any:
        cls = response_class(14, ctx.api_version)

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
        token = _Token(convert)
        mreq = g.SyncGroupRequest(
            group_id=req.group_id,
            generation_id=req.generation_id,
            member_id=req.member_id,
            assignments=[(a.member_id, a.assignment) for a in req.assignments],
            group_instance_id=getattr(req, "group_instance_id", None),
            protocol_type=getattr(req, "protocol_type", None),
            protocol_name=getattr(req, "protocol_name", None),
        )
        return self._call(
            token, (req.group_id,), "SyncGroup", lambda: self.machine.sync_group(self.clock(), token, mreq)
        )

    # ------------------------------------------------------------------ Heartbeat

    def heartbeat(self, ctx: RequestContext, req: Any) -> Any:
        cls = response_class(12, ctx.api_version)

        def convert(r: g.HeartbeatResponse) -> Any:
            if ctx.api_version == 0:
                return cls(error_code=kio_error(r.error))
            return cls(throttle_time=ZERO_TD, error_code=kio_error(r.error))

        if self._other_coordinates(req.group_id):
            return convert(g.HeartbeatResponse(ErrorCode.NOT_COORDINATOR))
        token = _Token(convert)
        mreq = g.HeartbeatRequest(
            group_id=req.group_id,
            generation_id=req.generation_id,
            member_id=req.member_id,
            group_instance_id=getattr(req, "group_instance_id", None),
        )
        return self._call(
            token, (req.group_id,), "Heartbeat", lambda: self.machine.heartbeat(self.clock(), token, mreq)
        )

    # ------------------------------------------------------------------ LeaveGroup

    def leave_group(self, ctx: RequestContext, req: Any) -> Any:
        cls = response_class(13, ctx.api_version)
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
        if v < 3:
            members = [(req.member_id, None)]
            reason = None
        else:
            members = [(m.member_id, m.group_instance_id) for m in req.members]
            reason = next((m.reason for m in req.members if getattr(m, "reason", None)), None)
        token = _Token(convert)
        mreq = g.LeaveGroupRequest(group_id=req.group_id, members=members, reason=reason)
        return self._call(
            token, (req.group_id,), "LeaveGroup", lambda: self.machine.leave_group(self.clock(), token, mreq)
        )

    # ------------------------------------------------------------------ OffsetCommit

    def offset_commit(self, ctx: RequestContext, req: Any) -> Any:
        cls = response_class(8, ctx.api_version)
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
        token = _Token(convert)
        mreq = g.OffsetCommitRequest(
            group_id=req.group_id,
            offsets=offsets,
            generation_id=req.generation_id_or_member_epoch,
            member_id=req.member_id,
            group_instance_id=getattr(req, "group_instance_id", None),
        )
        return self._call(
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
        return self.machine.offset_fetch(
            self.clock(),
            g.OffsetFetchRequest(group_id=group_id, partitions=parts, require_stable=require_stable),
        )

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
        cls = response_class(9, ctx.api_version)
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
        cls = response_class(15, ctx.api_version)
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
        cls = response_class(16, ctx.api_version)
        group_cls = nested(cls, "groups")
        types_filter = [t.lower() for t in getattr(req, "types_filter", ())]
        states = list(getattr(req, "states_filter", ())) or None
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
        cls = response_class(42, ctx.api_version)
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
        token = _Token(convert)
        request = g.DeleteGroupsRequest(mine)
        return self._call(
            token, mine, "DeleteGroups", lambda: self.machine.delete_groups(self.clock(), token, request)
        )
