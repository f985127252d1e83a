"""A simulated KIP-848 consumer (``group.protocol=consumer``) as librdkafka runs it, in virtual time.

Contract
--------
:class:`SimKip848Member` sends the requests librdkafka's consumer-protocol path sends (``src/rdkafka_cgrp.c``:
``rd_kafka_cgrp_consumer_serve``, ``rd_kafka_cgrp_consumer_group_heartbeat``, the ConsumerGroupHeartbeat answer's
handler, ``rd_kafka_cgrp_handle_assignment_cooperative``, ``rd_kafka_cgrp_consumer_assignment_done``,
``rd_kafka_cgrp_consumer_leave``) as herdlab's librdkafka member drives it
(``harness/members/clients/librdkafka.py``: ``on_revoke`` commits the revoked partitions synchronously before
they go; ``on_assign`` / ``on_revoke`` write ``assigned`` / ``revoked`` incrementally):

1. start: ``ready``; Metadata (the client's bootstrap); ``started``; FindCoordinator; then the join: a full
   ConsumerGroupHeartbeat (member epoch 0, its own member id, ``max.poll.interval.ms`` as the rebalance
   timeout, the topic as its subscription, the server assignor it asks for, owned partitions empty);
2. heartbeats: at most one in flight; the next leaves ``heartbeat_interval_ms`` (the broker's answer) after the
   last one left, or at once when the member expedites it (an answer arriving after that time sends it on
   arrival); a heartbeat carries only the member id and epoch, but while an assignment waits for its
   acknowledgement (librdkafka's ``WAIT_ACK``) every heartbeat carries it as the owned partitions;
3. an answer's assignment that differs from the one being reconciled (else from the acknowledged one) becomes
   the next target; it is reconciled when no other waits for its acknowledgement: the partitions no longer
   assigned are revoked first (``on_revoke``: OffsetCommit of what was processed on them, waited for, with the
   member epoch; ``rebalance_begin`` and ``revoked``), then the new ones assigned (``on_assign``, even with
   none when something was revoked: ``assigned``, ``rebalance_end``), then OffsetFetch of the new partitions
   (``auto.offset.reset`` earliest), and the heartbeat carrying the acknowledgement is sent at once
   (librdkafka expedites it); the answer to that heartbeat completes the acknowledgement;
4. records of its partitions as they arrive (:class:`~harness.sim.coordinator_member.TopicFeed`), one
   ``record`` event each; an asynchronous OffsetCommit of what was processed every ``auto.commit.interval.ms``;
5. FENCED_MEMBER_EPOCH or UNKNOWN_MEMBER_ID: every partition lost (``revoked`` lost), epoch 0, a full
   heartbeat at once; any other error: the next heartbeat at the interval;
6. clean stop: OffsetCommit (waited for), ``on_revoke`` of every partition, the leave heartbeat (epoch -1,
   waited for), ``stopped``; crash: nothing more (the broker expires the member after its session timeout).

Only the physical delays cost virtual time: each request travels ``network_one_way_s`` each way and waits
its turn on the broker's loop (``broker_service_s``); the client's own work (callbacks, the assignment's
application) takes none.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

from greenlet import getcurrent

from coordinator.core.consumer.api import (
    JOIN_EPOCH,
    LEAVE_EPOCH,
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
    TopicPartitions,
)
from coordinator.core.group import api as g
from coordinator.core.group.errors import ErrorCode
from harness.kernel.history import History
from harness.members.recorder import CommitPolicy, MemberConfig, MemberRecorder
from harness.sim.clock import Event, VirtualScheduler
from harness.sim.coordinator_broker import CONSUMER_HEARTBEAT, Reply, SimShell
from harness.sim.coordinator_member import TopicFeed

__all__ = ["HeartbeatCall", "SimKip848Member"]

#: Errors after which librdkafka abandons its partitions and joins again (``rd_kafka_cgrp_consumer_fenced``).
_FENCED = (ErrorCode.FENCED_MEMBER_EPOCH, ErrorCode.UNKNOWN_MEMBER_ID)
#: OffsetCommit / OffsetFetch versions a consumer-protocol member sends (member epochs: v9).
OFFSET_VERSION = 9

#: What the member asks of its broker for one heartbeat: the machine call that serves it.
HeartbeatCall = Callable[[ConsumerGroupHeartbeatRequest], Callable[[int, Reply], list[g.Effect]]]


class SimKip848Member:
    """One simulated consumer-protocol member (see the module contract)."""

    def __init__(
        self,
        name: str,
        sched: VirtualScheduler,
        broker: SimShell,
        heartbeat_call: HeartbeatCall,
        machine: Any,
        feed: TopicFeed,
        history: History,
        config: MemberConfig,
        *,
        member_id: str,
        topic_id: uuid.UUID,
        rebalance_timeout_ms: int,
        server_assignor: str | None,
        on_stopped: Callable[[str], object] | None = None,
    ) -> None:
        self.name = name
        self.sched = sched
        self.broker = broker
        self._heartbeat_call = heartbeat_call
        self.machine = machine  # the consumer machine: offset_commit / offset_fetch
        self.feed = feed
        self.topic = feed.topic
        self.topic_id = topic_id
        self.group = config.group
        self.config = config
        self.rec = MemberRecorder(config, history)
        self.policy = CommitPolicy(
            config.auto_commit_interval_s, enabled=config.auto_commit, now=sched.now_s()
        )
        self._next_commit_s = sched.now_s() + config.auto_commit_interval_s
        self.rebalance_timeout_ms = rebalance_timeout_ms
        self.server_assignor = server_assignor
        self.member_id = member_id
        self.epoch = JOIN_EPOCH
        self.ready_ns: int | None = None
        self._on_stopped = on_stopped
        #: partitions the application owns (after its callbacks), and their positions
        self.assignment: list[int] = []
        self.positions: dict[int, int] = {}
        #: librdkafka's current (acknowledged) assignment, the target being reconciled or acknowledged
        #: (``WAIT_ACK`` while set), and the next target received meanwhile
        self._acked: frozenset[int] = frozenset()
        self._target: frozenset[int] | None = None
        self._next: frozenset[int] | None = None
        self._reconciling = False
        self._full = True  # the next heartbeat is a full one (the join)
        self.interval_ns = 0  # the broker's heartbeat interval (from its first answer)
        self._in_flight = False
        self._last_sent_ns: int | None = None
        self._expedite = True
        self._timer_token = 0
        self._armed_at: int | None = None
        self.heartbeating = False
        self.alive = True
        self.stopping = False
        self._wake = Event(sched)

    # -- control (called on the loop or by the group) ---------------------------------------------------
    def wake(self) -> None:
        """A record for one of its partitions arrived (the feed)."""
        self._wake.set()

    def stop(self) -> None:
        """A clean stop: commit, revoke, leave, ``stopped`` (virtual time later)."""
        self.stopping = True
        self._wake.set()

    def crash(self) -> None:
        """SIGKILL: nothing more from this member."""
        self.alive = False
        self.heartbeating = False
        self.feed.release(self.assignment, self)

    # -- requests ---------------------------------------------------------------------------------------
    def _call(self, api: str, call: Callable[[int, Reply], list[g.Effect]], **fields: Any) -> Any:
        """One request, waited for (from the member's task)."""
        sched, glet = self.sched, getcurrent()
        self.broker.send(api, self.name, call, lambda resp: sched.resume(glet, resp), **fields)
        return sched.block()

    def _shell_answer(self, response: Any) -> Callable[[int, Reply], list[g.Effect]]:
        """A request the broker's shell answers itself (Metadata, FindCoordinator)."""
        return lambda _now, reply: [g.Respond(reply, response)]  # type: ignore[arg-type]

    # -- the member's task ------------------------------------------------------------------------------
    def run(self) -> None:
        self.ready_ns = self.sched.now_ns
        self.rec.ready()
        self._call("Metadata", self._shell_answer(self.topic.partitions))  # the client's bootstrap
        self.rec.started(effective=dict(self.config.properties))
        self._call("FindCoordinator", self._shell_answer(None))
        self.heartbeating = True
        self._serve()  # the join, at once
        while self.alive and not self.stopping:
            self._wake.clear()
            if self._reconciling:
                self._reconcile()
                continue
            self._consume()
            now = self.sched.now_s()
            if self.policy.due(now):
                self._next_commit_s = now + self.config.auto_commit_interval_s
                self._commit_async()
            if self.stopping or self._reconciling:
                continue
            # poll(): returns on a record, a new target or a stop, else when the next commit is due (at
            # least a microsecond on: the clock's rounding may wake it a hair before the float deadline)
            self._wake.wait(max(1e-6, self._next_commit_s - now) if self.policy.enabled else None)
        if self.alive:
            self._close()

    def _consume(self) -> None:
        topic, rec, policy = self.topic, self.rec, self.policy
        for p in self.assignment:
            start = self.positions.get(p)
            if start is None:
                continue
            offsets = topic.fetch(p, start)
            for off in offsets:
                rec.records += 1
                rec.emit("record", topic=topic.name, partition=p, offset=off, seq=topic.seq(p, off))
                policy.processed(p, off)
            if offsets:
                self.positions[p] = offsets.stop

    # -- reconciliation (the member's task) -------------------------------------------------------------
    def _reconcile(self) -> None:
        """librdkafka's cooperative handling of a new target: revoke, then assign, then acknowledge at once."""
        target = self._target
        assert target is not None
        owned = set(self.assignment)
        revoke = sorted(owned - target)
        add = sorted(target - owned)
        self.rec.joined(self.epoch, self.member_id)
        if revoke:
            self._revoke(revoke, lost=False)
            if self._target is not target:  # fenced while its commit was in flight: that reset everything
                return
        if revoke or add:
            self.rec.assigned(add)  # on_assign, with nothing new after a revoke
            self.assignment = sorted((owned - set(revoke)) | set(add))
            self.feed.own(add, self)
            if add:
                self._offset_fetch(add)
        self._reconciling = False
        if self.alive and not self.stopping:
            self._expedite = True  # rd_kafka_cgrp_consumer_assignment_done: the acknowledgement at once
            self._serve()

    def _revoke(self, partitions: list[int], lost: bool) -> None:
        if not lost:
            pending = self.policy.pending(partitions)
            if pending:
                self._commit_sync(pending)
        self.rec.revoked(partitions, lost=lost)
        self.policy.forget(partitions)
        self.feed.release(partitions, self)
        kept = set(partitions)
        self.assignment = [p for p in self.assignment if p not in kept]
        for p in partitions:
            self.positions.pop(p, None)

    # -- heartbeats (callbacks on the loop: librdkafka's main thread) ----------------------------------
    def _serve(self) -> None:
        """``rd_kafka_cgrp_consumer_serve``: send the next heartbeat when it is due and none is in flight, else
        arm the timer for when it is due."""
        if not (self.alive and self.heartbeating) or self._in_flight:
            return
        now = self.sched.now_ns
        due = now if self._expedite or self._last_sent_ns is None else self._last_sent_ns + self.interval_ns
        if due <= now:
            self._send_heartbeat()
        elif self._armed_at != due:
            self._timer_token += 1
            self._armed_at = due
            self.sched.call_at(due, self._timer, self._timer_token)

    def _timer(self, token: int) -> None:
        if token == self._timer_token:
            self._armed_at = None
            self._serve()

    def _wire(self, partitions: frozenset[int]) -> tuple[TopicPartitions, ...]:
        return (TopicPartitions(self.topic_id, tuple(sorted(partitions))),) if partitions else ()

    def _send_heartbeat(self) -> None:
        full = self._full
        ack = self._target is not None and not self._reconciling
        owned = self._target if ack else (self._acked if full else None)
        req = ConsumerGroupHeartbeatRequest(
            group_id=self.group,
            member_id=self.member_id,
            member_epoch=max(self.epoch, JOIN_EPOCH),
            rebalance_timeout_ms=self.rebalance_timeout_ms if full else -1,
            subscribed_topic_names=(self.topic.name,) if full else None,
            server_assignor=self.server_assignor if full else None,
            topic_partitions=None if owned is None else self._wire(owned),
            api_version=1,
            client_id=self.name,
            client_host="/127.0.0.1",
        )
        self._in_flight = True
        self._expedite = False
        self._last_sent_ns = self.sched.now_ns
        self._timer_token += 1  # a timer armed before is stale
        self._armed_at = None
        target = self._target if ack else None
        self.broker.send(
            CONSUMER_HEARTBEAT,
            self.name,
            self._heartbeat_call(req),
            lambda resp: self._answer(resp, target, full),
        )

    def _answer(self, resp: ConsumerGroupHeartbeatResponse, acked: frozenset[int] | None, full: bool) -> None:
        """The heartbeat's answer (librdkafka ``rd_kafka_cgrp_handle_ConsumerGroupHeartbeat``)."""
        self._in_flight = False
        if not (self.alive and self.heartbeating):
            return
        if resp.error != ErrorCode.NONE:
            if resp.error in _FENCED:
                self._fenced()
            self._serve()
            return
        if full:
            self._full = False
        self.epoch = resp.member_epoch
        if resp.heartbeat_interval_ms > 0:
            self.interval_ns = resp.heartbeat_interval_ms * 1_000_000
        if resp.assignment is not None:
            parts = frozenset(
                p for tp in resp.assignment if tp.topic_id == self.topic_id for p in tp.partitions
            )
            reference = self._target if self._target is not None else self._acked
            self._next = parts if parts != reference else None
        if acked is not None and self._target == acked and not self._reconciling:
            self._acked, self._target = acked, None  # the acknowledgement answered: WAIT_ACK ends
        if self._next is not None and self._target is None and not self._reconciling:
            self._target, self._next = self._next, None
            self._reconciling = True
            self._wake.set()
        self._serve()

    def _fenced(self) -> None:
        """Fenced or unknown: every partition lost, a full join at once (librdkafka keeps its member id)."""
        if self.assignment:
            self._revoke(list(self.assignment), lost=True)
        self.epoch = JOIN_EPOCH
        self._acked, self._target, self._next = frozenset(), None, None
        self._reconciling = False
        self._full = True
        self._expedite = True

    # -- offsets ----------------------------------------------------------------------------------------
    def _offset_fetch(self, partitions: list[int]) -> None:
        machine, topic = self.machine, self.topic.name
        req = g.OffsetFetchRequest(
            self.group, [(topic, p) for p in partitions], member_id=self.member_id, member_epoch=self.epoch
        )
        resp: g.OffsetFetchResponse = self._call(
            "OffsetFetch", lambda _now, reply: [g.Respond(reply, machine.offset_fetch(req))]
        )
        if resp.error != ErrorCode.NONE:
            for p in partitions:
                self.positions.setdefault(p, 0)
            return
        for part in resp.partitions:
            if part.partition in self.assignment:
                self.positions[part.partition] = max(0, part.offset)  # auto.offset.reset earliest

    def _commit_request(self, pending: dict[int, int]) -> Callable[[int, Reply], list[g.Effect]]:
        machine = self.machine
        req = g.OffsetCommitRequest(
            group_id=self.group,
            offsets=[g.OffsetCommitPartition(self.topic.name, p, o) for p, o in pending.items()],
            generation_id=self.epoch,
            member_id=self.member_id,
            api_version=OFFSET_VERSION,
        )
        return lambda now, reply: machine.offset_commit(now, reply, req)

    def _commit_sync(self, pending: dict[int, int]) -> None:
        self._record_commit(pending, self._call("OffsetCommit", self._commit_request(pending)))

    def _commit_async(self) -> None:
        pending = self.policy.pending()
        if pending and self.epoch > 0:
            self.broker.send(
                "OffsetCommit",
                self.name,
                self._commit_request(pending),
                lambda resp: self._record_commit(pending, resp),
            )

    def _record_commit(self, pending: dict[int, int], resp: g.OffsetCommitResponse) -> None:
        if not self.alive:
            return
        errors = {r.partition: r.error for r in resp.partitions}
        ok: dict[int, int] = {}
        for p, o in pending.items():
            err = errors.get(p, ErrorCode.NONE)
            if err == ErrorCode.NONE:
                ok[p] = o
                self.rec.commit_result(p, o)
            else:
                self.rec.commit_result(p, o, error=err.name, code=int(err))
        self.policy.done(ok)

    # -- clean stop -------------------------------------------------------------------------------------
    def _close(self) -> None:
        t0 = self.sched.now_ns
        pending = self.policy.pending()
        if pending and self.epoch > 0:
            self._commit_sync(pending)
        if self.assignment:
            self._revoke(list(self.assignment), lost=False)
        self.heartbeating = False
        self._timer_token += 1
        if self.epoch > 0:
            req = ConsumerGroupHeartbeatRequest(
                group_id=self.group,
                member_id=self.member_id,
                member_epoch=LEAVE_EPOCH,
                api_version=1,
                client_id=self.name,
                client_host="/127.0.0.1",
            )
            self._call(CONSUMER_HEARTBEAT, self._heartbeat_call(req))
        self.epoch = JOIN_EPOCH
        self.alive = False
        self.rec.stopped(clean=True, close_ms=(self.sched.now_ns - t0) / 1e6)
        if self._on_stopped is not None:
            self._on_stopped(self.name)
