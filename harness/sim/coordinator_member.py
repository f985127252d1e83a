"""A simulated kafka-python 3.0.12 consumer as herdlab's kafka-python member drives it, in virtual time.

Contract
--------
:class:`SimConsumer` sends the requests the real member sends, in the same order (kafka-python 3.0.12
``kafka/coordinator/base.py``, ``consumer.py``, ``heartbeat.py``; herdlab's
``harness/members/clients/kafka_python.py``), each costing ``kafka_client_s`` on the client before it leaves:

1. start: ``ready``; Metadata (the client's bootstrap); ``started``; Metadata (``consumer.topics()`` after
   subscribing); then metadata refreshes every ``metadata.max.age.ms`` after the last one;
2. join (``ensure_active_group``): FindCoordinator while the coordinator is unknown; before the first
   JoinGroup of a rebalance the listener's ``on_partitions_revoked`` (commit of what was processed on the
   revoked partitions with OffsetCommit, waited for; ``rebalance_begin`` and ``revoked`` events) or, after
   the member lost its generation, ``on_partitions_lost``; JoinGroup v7 (a first join gets
   MEMBER_ID_REQUIRED and joins again with the id it got); SyncGroup, sent after the member's work on the
   JoinGroup answer on the shared client cores (``kafka_join_answer_s`` plus ``kafka_join_answer_per_member_s``
   per live member per client core; the leader's booking adds ``kafka_assign_per_member_s`` plus
   ``kafka_assign_per_member_per_core_s`` per live member per client core, per member in
   the answer). The leader's SyncGroup carries the assignment of kafka-python's own assignor class for the
   chosen protocol, computed on the member metadata the broker returned; the leader then refreshes
   metadata. Errors as kafka-python handles them
   (REBALANCE_IN_PROGRESS, UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION: join again); the join runs on
   kafka-python's IO thread while the main thread awaits it in ``poll(timeout_ms=200)`` windows with
   gaps between them (:class:`harness.sim.kafka_python30.PollGaps`; mean ``kafka_poll_gap_per_member_s``
   times the live members per client core, drawn with ``kafka_poll_gap_cv``): a join task that ends between two windows (its
   SyncGroup answered, or an error answered) is found done by the next poll, which starts a new one
   (``join_group_async`` replaces a done task whatever its result, with no backoff) when kafka-python's IO
   thread runs it, late by a drawn time (``kafka_rejoin_late_*``), and that poll's window starts there
   (a whole window: kafka-python's IO thread gets what is left of the main thread's poll timer, so the
   model's window is longer by the main thread's part of the lateness): JoinGroup and SyncGroup again, in
   the same generation for a follower; an error answered inside a window is retried at once (after
   ``retry_backoff_ms`` for the retriable ones that are not rejoins, NOT_COORDINATOR included; the whole
   backoff, where kafka-python cuts it at the window's end);
3. the assignment applied (``member_apply_s``): ``assigned`` and ``rebalance_end``; OffsetFetch for the
   assigned partitions without a position (kafka-python keeps the position of a partition it is
   assigned again), ``auto.offset.reset`` earliest when none is committed;
4. Heartbeat every ``heartbeat.interval.ms`` after the last one was sent (each sent late by a drawn time,
   ``kafka_heartbeat_late_*``: the IO thread's wake-up), from the end of a join until the
   next one starts; REBALANCE_IN_PROGRESS makes the member join again, UNKNOWN_MEMBER_ID /
   ILLEGAL_GENERATION reset its generation (its partitions are then lost) and join again: the heartbeat
   only sets kafka-python's flags, and the main thread acts at its next check of them: at that heartbeat's
   deadline if its check there (late by ``kafka_main_check_late_*``) comes after the answer, else when its
   ``poll(timeout_ms=200)`` window ends (windows follow each other; a record for its partitions, or its
   Fetch answered empty, ends one early), or with no partition at the end of the ``retry_backoff_ms`` sleep
   it begins after that check; a stop it notices when the window ends;
5. records of its partitions as they arrive (:class:`TopicFeed`), one ``record`` event each; an
   interval commit (OffsetCommit, not waited for) every ``auto.commit.interval.ms``, at a poll window's end;
   its metadata refreshes go on the connection its Fetch is parked on: while it has partitions a refresh is
   sent when that Fetch is answered (its partitions' next record, or ``fetch.max.wait.ms``), the next one
   timed from its answer; the start-up's second Metadata waits ``retry.backoff.ms``; a SyncGroup answer's work
   (``kafka_sync_client_s``, ``kafka_first_sync_client_s`` the first time) is done on the shared client
   cores (first come first served, or ahead of the join-answer work waiting there:
   ``kafka_sync_answer_priority``) before the heartbeat timer restarts;
6. clean stop: commit (waited for), the listener's revoke, LeaveGroup after the close's hand-offs
   (``kafka_close_leave_*``), ``stopped``; crash: nothing more.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from greenlet import getcurrent

from coordinator.core.group import api as g
from coordinator.core.group.errors import ErrorCode
from harness.kernel.history import History
from harness.members.recorder import CommitPolicy, MemberConfig, MemberRecorder
from harness.scenario.model import Scenario
from harness.sim.clock import NS_PER_S, Event, Task, VirtualScheduler, next_tick
from harness.sim.coordinator_broker import Reply, SimBroker
from harness.sim.cpu import ClientCpu
from harness.sim.kafka_python30 import RETRY_BACKOFF_S, ThreadTiming, flag_seen_ns
from harness.sim.model import DelayModel
from harness.sim.workload import SimTopic

__all__ = ["FeedOwner", "SimConsumer", "TopicFeed"]

#: kafka-python's ``fetch_max_wait_ms`` default (``consumer/group.py``): how long the broker parks a Fetch
#: with nothing to return.
FETCH_MAX_WAIT_MS = 500
#: The JoinGroup version kafka-python 3.0.12 sends (``max_version=7``).
JOIN_VERSION = 7
PROTOCOL_TYPE = "consumer"
#: Errors after which kafka-python joins again at once.
_REJOIN = (ErrorCode.REBALANCE_IN_PROGRESS, ErrorCode.UNKNOWN_MEMBER_ID, ErrorCode.ILLEGAL_GENERATION)


def _backs_off(err: ErrorCode) -> bool:
    """Whether kafka-python 3.0.12 sleeps ``retry_backoff_ms`` before joining again after a JoinGroup or
    SyncGroup error it awaited inside a window: not after a rejoin error or MEMBER_ID_REQUIRED
    (``join_group_async`` retries those at once), after every other (RetriableError, NOT_COORDINATOR and
    COORDINATOR_NOT_AVAILABLE included)."""
    return err not in _REJOIN and err != ErrorCode.MEMBER_ID_REQUIRED


def _assignor(name: str) -> Any:
    """kafka-python's own assignor class for a Kafka assignor name (eager ones)."""
    from kafka.coordinator.assignors.range import RangePartitionAssignor
    from kafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor

    classes: dict[str, Any] = {"range": RangePartitionAssignor, "roundrobin": RoundRobinPartitionAssignor}
    if name not in classes:
        raise ValueError(
            f"the simulator's coordinator members support the assignors {sorted(classes)}, not {name!r}"
        )
    return classes[name]


class _Cluster:
    """What an assignor asks of kafka-python's ClusterMetadata: a topic's partitions."""

    def __init__(self, topic: SimTopic) -> None:
        self.topic = topic

    def partitions_for_topic(self, name: str) -> set[int] | None:
        return set(range(self.topic.partitions)) if name == self.topic.name else None


class _Member:
    """A JoinGroup member entry as kafka-python's assignors read it (metadata decoded)."""

    __slots__ = ("group_instance_id", "member_id", "metadata")

    def __init__(self, member_id: str, group_instance_id: str | None, metadata: Any) -> None:
        self.member_id = member_id
        self.group_instance_id = group_instance_id
        self.metadata = metadata


class FeedOwner(Protocol):
    """A member the feed tells of records on its partitions."""

    def wake(self) -> None: ...


class TopicFeed:
    """Tells the owner of a partition when records arrive on it: one task waits on the topic for every
    member (see :mod:`harness.sim.coordinator`). The producer writes record ``seq`` to partition
    ``seq % partitions`` (:mod:`harness.sim.workload`), so the next partition to grow is known; a full
    scan covers anything else."""

    def __init__(self, sched: VirtualScheduler, topic: SimTopic) -> None:
        self.sched = sched
        self.topic = topic
        self.owners: dict[int, FeedOwner] = {}
        self._known: list[int] = []
        self._cursor = 0
        self._task: Task | None = None

    def start(self) -> None:
        self._known = [self.topic.end(p) for p in range(self.topic.partitions)]
        self._task = self.sched.spawn(self._loop, name="topic feed")

    def stop(self) -> None:
        task, self._task = self._task, None
        if task is not None and not task.done:
            from greenlet import GreenletExit

            task.glet.parent = getcurrent()
            task.glet.throw(GreenletExit)

    def own(self, partitions: list[int], member: FeedOwner) -> None:
        for p in partitions:
            self.owners[p] = member

    def release(self, partitions: list[int], member: FeedOwner) -> None:
        for p in partitions:
            if self.owners.get(p) is member:
                del self.owners[p]

    def _loop(self) -> None:
        while True:
            self.topic.wait_data(None)  # type: ignore[arg-type]  # (Event.wait: None = no timeout)
            self._scan()

    def _scan(self) -> None:
        topic, known = self.topic, self._known
        n = topic.partitions
        while len(known) < n:
            known.append(0)
        found = False
        p = self._cursor % n
        while topic.end(p) > known[p]:
            known[p] = topic.end(p)
            self._notify(p)
            found = True
            p = (p + 1) % n
        self._cursor = p
        if not found:
            for q in range(n):
                if topic.end(q) > known[q]:
                    known[q] = topic.end(q)
                    self._notify(q)

    def _notify(self, p: int) -> None:
        owner = self.owners.get(p)
        if owner is not None:
            owner.wake()


class SimConsumer:
    """One simulated kafka-python member (see the module contract)."""

    def __init__(
        self,
        name: str,
        sched: VirtualScheduler,
        delays: DelayModel,
        scenario: Scenario,
        broker: SimBroker,
        feed: TopicFeed,
        history: History,
        cpu: ClientCpu,
        live_members: Callable[[], int],
        on_stopped: Callable[[str], object] | None = None,
    ) -> None:
        c = scenario.group.coordinator
        if c.client != "kafka-python":
            raise ValueError(f"the simulator models kafka-python members, not {c.client!r}")
        if c.static_membership:
            raise ValueError("the simulator models dynamic members only (static_membership is set)")
        props = c.member_properties(scenario.group.assignor)
        self.name = name
        self.sched = sched
        self.delays = delays
        self.broker = broker
        self.feed = feed
        self.cpu = cpu
        self.topic = feed.topic
        self.group = scenario.group.id
        self.config = MemberConfig(
            bootstrap="sim", group=self.group, topic=scenario.topic.name, name=name, properties=props
        )
        self.rec = MemberRecorder(self.config, history)
        self.policy = CommitPolicy(
            self.config.auto_commit_interval_s, enabled=self.config.auto_commit, now=sched.now_s()
        )
        self._next_commit_s = sched.now_s() + self.config.auto_commit_interval_s
        self.session_ms = int(props["session.timeout.ms"])
        self.heartbeat_s = int(props["heartbeat.interval.ms"]) / 1000
        self.rebalance_ms = int(props["max.poll.interval.ms"])
        self.metadata_age_s = int(props["metadata.max.age.ms"]) / 1000  # a shorthand: always given
        self.fetch_wait_ns = round(int(props.get("fetch.max.wait.ms", FETCH_MAX_WAIT_MS)) / 1000 * NS_PER_S)
        self.assignor = _assignor(self.config.assignor)
        self._metadata = self.assignor.metadata({self.config.topic}).encode()
        self.ready_ns: int | None = None
        self._on_stopped = on_stopped
        self._live_members = live_members  # the group's members now (the run queue the gaps scale with)
        self.threads = ThreadTiming(delays, cpu, live_members)  # when kafka-python's threads run
        # kafka-python's group state
        self.member_id = ""
        self.generation = -1
        self.coordinator_known = False
        self.rejoin_needed = True
        self._rejoining = False
        self.assignment: list[int] = []
        self.positions: dict[int, int] = {}
        self.alive = True
        self.stopping = False
        self._wake = Event(sched)
        #: the main thread's poll: windows of poll_timeout_ms chained from _poll_anchor_ns (a record
        #: ends one early and the next starts); a needed rejoin is seen when the window ends
        self.poll_ns = round(self.config.poll_timeout_ms / 1000 * NS_PER_S)
        self._poll_anchor_ns = sched.now_ns
        self._synced = False  # a first SyncGroup answer handled
        #: the member's Fetch, parked at the broker since _fetch_sent_ns (re-sent as each record comes
        #: back, or after fetch.max.wait.ms); a metadata refresh waiting behind it (its epoch)
        self._fetch_sent_ns = sched.now_ns
        self._md_parked: int | None = None
        self._hb_epoch = 0
        #: when the next heartbeat is due (kafka-python's ``time_to_next_heartbeat`` reaches 0): the main
        #: thread's poll wait ends there too (``_poll_once`` caps it at ``time_to_next_poll``)
        self._hb_deadline_ns = sched.now_ns
        self._md_epoch = 0

    # -- control (called on the loop or by the group) ---------------------------------------------------
    def wake(self) -> None:
        """A record for one of its partitions came back: the parked Fetch is answered (and re-sent)."""
        self._fetch_sent_ns = self.sched.now_ns
        self._wake.set()
        if self._md_parked is not None:
            epoch, self._md_parked = self._md_parked, None
            self._send_metadata(epoch)

    def stop(self) -> None:
        """A clean stop: the member commits, revokes, leaves and writes ``stopped`` (virtual time later).
        The real member's loop sees its stop flag between polls: when the poll window in progress ends."""
        self.stopping = True
        self._wake_at_poll_end()

    def crash(self) -> None:
        """SIGKILL: nothing more from this member (the group ends its task)."""
        self.alive = False
        self._hb_epoch += 1
        self._md_epoch += 1
        self.feed.release(self.assignment, self)

    # -- requests ---------------------------------------------------------------------------------------
    def _call(
        self,
        api: str,
        call: Callable[[int, Reply], list[g.Effect]],
        then: Callable[[], object] | None = None,
        **fields: Any,
    ) -> Any:
        """One request, waited for (from the member's task); ``then`` is issued right after it."""
        sched = self.sched
        glet = getcurrent()
        self.broker.send(api, self.name, call, lambda resp: sched.resume(glet, resp), **fields)
        if then is not None:
            then()
        return sched.block()

    def _send(
        self, api: str, call: Callable[[int, Reply], list[g.Effect]], reply: Reply, **fields: Any
    ) -> None:
        """One request not waited for (heartbeats, async commits, metadata refreshes)."""
        self.broker.send(api, self.name, call, reply, **fields)

    def _metadata_request(self) -> Callable[[int, Reply], list[g.Effect]]:
        broker = self.broker
        return lambda _now, reply: broker.respond(reply, broker.topic.partitions)

    # -- the member's task ------------------------------------------------------------------------------
    def run(self) -> None:
        self.ready_ns = self.sched.now_ns
        self.rec.ready()
        self._call("Metadata", self._metadata_request())  # the client's bootstrap
        answered = self.sched.now_s()
        self.rec.started(effective=dict(self.config.properties))
        # consumer.topics() once subscribed: a metadata update waits retry.backoff.ms after the last
        # refresh (kafka-python 3.0.12 cluster.py ttl(): _last_refresh_ms + retry_backoff_ms)
        self.sched.sleep(max(0.0, answered + RETRY_BACKOFF_S - self.sched.now_s()))
        self._call("Metadata", self._metadata_request())
        self._schedule_metadata()
        while self.alive and not self.stopping:
            self._wake.clear()
            if self.rejoin_needed:
                self._join()
                continue
            missing = [p for p in self.assignment if p not in self.positions]
            if missing:
                self._offset_fetch(missing)
            self._consume()
            now = self.sched.now_s()
            if self.policy.due(now):
                self._next_commit_s = now + self.config.auto_commit_interval_s
                self._commit_async()
            if self.stopping or self.rejoin_needed:
                continue
            # poll(timeout_ms): returns on a record (TopicFeed wakes the member) or when the window
            # ends; interval commits are due only at a window's end, like a needed rejoin
            now_ns = self.sched.now_ns
            self._poll_anchor_ns = now_ns
            due_ns = round(self._next_commit_s * NS_PER_S)
            end_ns = now_ns + max(1, -(-(due_ns - now_ns) // self.poll_ns)) * self.poll_ns
            self._wake.wait((end_ns - now_ns) / NS_PER_S)
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

    # -- join -------------------------------------------------------------------------------------------
    def _join(self) -> None:
        if not self._rejoining:
            self._prepare()
            self._rejoining = True
            self._hb_epoch += 1  # heartbeats off for the join's round trips
        polls = self.threads.poll_gaps(self.sched, self.poll_ns)
        try:
            while self.alive:
                if not self.coordinator_known:
                    self._find_coordinator()
                    continue
                join, backoff = self._join_group()
                assignment: list[int] | None = None
                if join is not None:
                    assignment, backoff = self._sync_group(join)
                missed = polls.gap_end(self.sched.now_ns)
                if missed is not None:
                    # the join task ended, done or failed, while the main thread was between two polls:
                    # the next poll finds it done and starts a new one (kafka-python 3.0.12
                    # join_group_async replaces a task that is_done, whatever its result; no backoff)
                    # when kafka-python's IO thread runs that poll's join; that poll's window starts there
                    pickup_ns = missed + round(self.threads.rejoin_late_s() * NS_PER_S)
                    polls.restart(pickup_ns)  # before the wait: the old chain draws no more gaps
                    self.sched.sleep((pickup_ns - self.sched.now_ns) / NS_PER_S)
                    continue
                if assignment is None:
                    if backoff:  # a retriable error picked up inside a window: the whole backoff
                        self.sched.sleep(RETRY_BACKOFF_S)  # (kafka-python cuts it at the window's end)
                    continue
                self._complete(assignment)
                return
        finally:
            polls.stop()

    def _prepare(self) -> None:
        """kafka-python's ``_on_join_prepare``: the listener's revoke (commit first) or lost."""
        ps = sorted(self.assignment)
        if self.generation < 0 and ps:
            self.rec.revoked(ps, lost=True)
        else:
            pending = self.policy.pending(ps)
            if pending:
                self._commit_sync(pending)
            self.rec.revoked(ps, lost=False)
        self.policy.forget(ps)
        self.feed.release(ps, self)
        self.assignment = []

    def _find_coordinator(self) -> None:
        self._call("FindCoordinator", self._metadata_request())
        self.coordinator_known = True

    def _join_group(self) -> tuple[g.JoinGroupResponse | None, bool]:
        """JoinGroup and its answer's side effects: (the answer, or None on an error; whether kafka-python
        backs off ``retry_backoff_ms`` before the next attempt when it picks the error up in a window)."""
        machine = self.broker.machine
        req = g.JoinGroupRequest(
            group_id=self.group,
            member_id=self.member_id,
            session_timeout_ms=self.session_ms,
            protocol_type=PROTOCOL_TYPE,
            protocols=[(self.assignor.name, self._metadata)],
            rebalance_timeout_ms=self.rebalance_ms,
            api_version=JOIN_VERSION,
            client_id=self.name,
            client_host="/127.0.0.1",
        )
        resp: g.JoinGroupResponse = self._call(
            "JoinGroup", lambda now, reply: machine.join_group(now, reply, req), group=self.group,
            member=self.member_id,
        )  # fmt: skip
        err = resp.error
        if err == ErrorCode.NONE:
            self.generation = resp.generation_id
            self.member_id = resp.member_id
            return resp, False
        if err == ErrorCode.MEMBER_ID_REQUIRED:
            self.member_id = resp.member_id
        elif err == ErrorCode.UNKNOWN_MEMBER_ID:
            self._reset_generation("")
        elif err in (ErrorCode.NOT_COORDINATOR, ErrorCode.COORDINATOR_NOT_AVAILABLE):
            self.coordinator_known = False
        return None, _backs_off(err)

    def _sync_group(self, join: g.JoinGroupResponse) -> tuple[list[int] | None, bool]:
        """The answer's work, SyncGroup and its answer's side effects: (the member's partitions, or None on
        an error; whether kafka-python backs off before the next attempt, as :meth:`_join_group`)."""
        assignments: list[tuple[str, bytes]] = []
        leader = join.leader == join.member_id
        # the answer's work (and the leader's assignment) on the shared cores, then the SyncGroup
        d = self.delays
        work = d.kafka_join_answer_s + d.kafka_join_answer_per_member_s * d.per_core(self._live_members())
        if leader:
            per_member = d.kafka_assign_per_member_s
            per_member += d.kafka_assign_per_member_per_core_s * d.per_core(self._live_members())
            work += per_member * len(join.members)
        if work > 0:
            self.cpu.work(work)
        if leader:
            assignments = self._assign(join)
        machine = self.broker.machine
        req = g.SyncGroupRequest(
            group_id=self.group,
            generation_id=self.generation,
            member_id=self.member_id,
            assignments=assignments,
            protocol_type=PROTOCOL_TYPE,
            protocol_name=join.protocol_name,
        )
        # the leader: _perform_assignment's cluster.request_update(), sent by the refresh loop at once
        epoch = self._md_epoch
        then = (lambda: self._refresh_metadata(epoch)) if leader else None
        resp: g.SyncGroupResponse = self._call(
            "SyncGroup", lambda now, reply: machine.sync_group(now, reply, req), then, group=self.group,
            member=self.member_id, generation=self.generation, assignments=len(assignments),
        )  # fmt: skip
        err = resp.error
        if err == ErrorCode.NONE:
            from kafka.coordinator.assignors.abstract import ConsumerProtocolAssignment  # pyright: ignore[reportAttributeAccessIssue]

            decoded = ConsumerProtocolAssignment.decode(resp.assignment)
            return sorted(tp.partition for tp in decoded.partitions() if tp.topic == self.config.topic), False
        self.rejoin_needed = True
        if err == ErrorCode.UNKNOWN_MEMBER_ID:
            self._reset_generation("")
        elif err == ErrorCode.ILLEGAL_GENERATION:
            self._reset_generation(self.member_id)
        elif err in (ErrorCode.NOT_COORDINATOR, ErrorCode.COORDINATOR_NOT_AVAILABLE):
            self.coordinator_known = False
        return None, _backs_off(err)

    def _assign(self, join: g.JoinGroupResponse) -> list[tuple[str, bytes]]:
        from kafka.coordinator.assignors.abstract import ConsumerProtocolSubscription  # pyright: ignore[reportAttributeAccessIssue]

        members = [
            _Member(m.member_id, m.group_instance_id, ConsumerProtocolSubscription.decode(m.metadata))
            for m in join.members
        ]
        out = self.assignor.assign(_Cluster(self.topic), members)
        return [(member_id, a.encode()) for member_id, a in out.items()]

    def _complete(self, partitions: list[int]) -> None:
        work, priority = self.threads.sync_answer_work(first=not self._synced)
        self.cpu.work(work, priority=priority)  # the answer handled on the machine's shared cores
        self._synced = True
        self._rejoining = False
        self.rejoin_needed = False
        self._enable_heartbeat()
        self.sched.sleep(self.delays.member_apply_s)
        self.rec.joined(self.generation, self.member_id)
        self.rec.assigned(partitions)
        self.assignment = partitions
        kept = set(partitions)
        self.positions = {p: o for p, o in self.positions.items() if p in kept}
        self.feed.own(partitions, self)
        self._fetch_sent_ns = self.sched.now_ns  # its first Fetch of the assignment

    def _reset_generation(self, member_id: str) -> None:
        self.generation = -1
        self.member_id = member_id
        self.rejoin_needed = True

    # -- offsets ----------------------------------------------------------------------------------------
    def _offset_fetch(self, partitions: list[int]) -> None:
        machine, broker = self.broker.machine, self.broker
        req = g.OffsetFetchRequest(self.group, [(self.config.topic, p) for p in partitions])
        resp: g.OffsetFetchResponse = self._call(
            "OffsetFetch", lambda now, reply: broker.respond(reply, machine.offset_fetch(now, req))
        )
        if resp.error != ErrorCode.NONE:
            return
        for part in resp.partitions:
            if part.partition in self.assignment:
                self.positions[part.partition] = max(0, part.offset)  # auto.offset.reset earliest

    def _commit_request(self, pending: dict[int, int]) -> Callable[[int, Reply], list[g.Effect]]:
        machine = self.broker.machine
        req = g.OffsetCommitRequest(
            group_id=self.group,
            offsets=[g.OffsetCommitPartition(self.config.topic, p, o) for p, o in pending.items()],
            generation_id=self.generation,
            member_id=self.member_id,
        )
        return lambda now, reply: machine.offset_commit(now, reply, req)

    def _commit_sync(self, pending: dict[int, int]) -> None:
        self._record_commit(pending, self._call("OffsetCommit", self._commit_request(pending)))

    def _commit_async(self) -> None:
        pending = self.policy.pending()
        if pending and self.generation >= 0:
            self._send(
                "OffsetCommit", self._commit_request(pending), lambda resp: self._record_commit(pending, resp)
            )

    def _record_commit(self, pending: dict[int, int], resp: g.OffsetCommitResponse) -> None:
        if not self.alive:
            return
        errors = {r.partition: r.error for r in resp.partitions}
        ok = {p: o for p, o in pending.items() if errors.get(p, ErrorCode.NONE) == ErrorCode.NONE}
        for p, o in pending.items():
            err = errors.get(p, ErrorCode.NONE)
            if err == ErrorCode.NONE:
                self.rec.commit_result(p, o)
            else:
                self.rec.commit_result(p, o, error=err.name, code=int(err))
        self.policy.done(ok)

    # -- heartbeats (callbacks on the loop: kafka-python's heartbeat coroutine) -------------------------
    def _enable_heartbeat(self) -> None:
        self._hb_epoch += 1
        self._hb_deadline_ns = self.sched.now_ns + round(self.heartbeat_s * NS_PER_S)
        self.sched.call_at(self._hb_deadline_ns, self._heartbeat, self._hb_epoch)

    def _heartbeat(self, epoch: int) -> None:
        if epoch != self._hb_epoch or not self.alive:
            return
        machine = self.broker.machine
        req = g.HeartbeatRequest(self.group, self.generation, self.member_id)
        sent = self.sched.now_ns
        self._send(
            "Heartbeat",
            lambda now, reply: machine.heartbeat(now, reply, req),
            lambda resp: self._heartbeat_answer(epoch, sent, resp),
        )

    def _heartbeat_answer(self, epoch: int, sent_ns: int, resp: g.HeartbeatResponse) -> None:
        if epoch != self._hb_epoch or not self.alive:
            return
        err = resp.error
        deadline_ns = self._hb_deadline_ns  # this heartbeat's: the main thread's check there
        self._hb_deadline_ns = sent_ns + round(self.heartbeat_s * NS_PER_S)
        nxt = self._hb_deadline_ns + round(self.threads.heartbeat_late_s() * NS_PER_S)
        if err in (ErrorCode.NONE, ErrorCode.REBALANCE_IN_PROGRESS):
            self.sched.call_at(nxt, self._heartbeat, epoch)
            if err == ErrorCode.REBALANCE_IN_PROGRESS:
                # request_rejoin() only sets a flag (base.py:931): the main thread acts on it at its
                # next check (_wake_for_flag)
                self.rejoin_needed = True
                self._wake_for_flag(deadline_ns, sent_ns)
        elif err == ErrorCode.ILLEGAL_GENERATION:
            self._reset_generation(self.member_id)
            self._wake_for_flag(deadline_ns, sent_ns)
        elif err == ErrorCode.UNKNOWN_MEMBER_ID:
            self._reset_generation("")
            self._wake_for_flag(deadline_ns, sent_ns)
        else:
            if err in (ErrorCode.NOT_COORDINATOR, ErrorCode.COORDINATOR_NOT_AVAILABLE):
                self.coordinator_known = False
            self._hb_deadline_ns = self.sched.now_ns + round(RETRY_BACKOFF_S * NS_PER_S)
            self.sched.call_at(self._hb_deadline_ns, self._heartbeat, epoch)

    def _wake_for_flag(self, deadline_ns: int, sent_ns: int) -> None:
        """A heartbeat's answer set a flag (rejoin, a reset generation): wake the main thread when it acts
        on it (:func:`~harness.sim.kafka_python30.flag_seen_ns`; its check at this heartbeat's deadline is
        late by a drawn time)."""
        now = self.sched.now_ns
        at = flag_seen_ns(
            check_ns=deadline_ns + round(self.threads.main_check_late_s() * NS_PER_S),
            sent_ns=sent_ns,
            now_ns=now,
            poll_end_ns=self._poll_end_ns(now),
            fetch=(self._fetch_sent_ns, self.fetch_wait_ns) if self.assignment else None,
        )
        self.sched.call_at(at, self._wake.set)

    def _poll_end_ns(self, now_ns: int) -> int:
        """When the main thread's current poll window ends (windows chain from the anchor)."""
        return next_tick(self._poll_anchor_ns, now_ns, self.poll_ns)

    def _wake_at_poll_end(self) -> None:
        """Wake the main thread when its current poll window ends."""
        self.sched.call_at(self._poll_end_ns(self.sched.now_ns), self._wake.set)

    # -- metadata refresh loop (kafka-python's cluster refresh coroutine) --------------------------------
    def _schedule_metadata(self) -> None:
        self._md_epoch += 1
        self.sched.call_later(self.metadata_age_s, self._refresh_metadata, self._md_epoch)

    def _refresh_metadata(self, epoch: int) -> None:
        """A refresh is due. kafka-python sends Metadata to the least loaded node, with one broker the
        connection its Fetch is parked on (``net/manager.py`` least_loaded_node), and the broker reads
        a connection's next request only once it answered the last (as Kafka does): while the member
        fetches, the refresh goes when its Fetch is answered, at its partitions' next record or when
        the Fetch's ``fetch.max.wait.ms`` runs out; the next refresh is timed from its answer."""
        if epoch != self._md_epoch or not self.alive:
            return
        if self.assignment and self.fetch_wait_ns > 0:
            self._md_parked = epoch
            answered = next_tick(self._fetch_sent_ns, self.sched.now_ns, self.fetch_wait_ns)
            self.sched.call_at(answered, self._fetch_expired, epoch)
            return
        self._send_metadata(epoch)

    def _fetch_expired(self, epoch: int) -> None:
        """The parked Fetch's wait ran out: answered empty, re-sent after whatever waited behind it."""
        if self._md_parked == epoch:
            self._md_parked = None
            self._fetch_sent_ns = self.sched.now_ns
            self._send_metadata(epoch)

    def _send_metadata(self, epoch: int) -> None:
        if epoch != self._md_epoch or not self.alive:
            return
        self._md_epoch += 1  # the refresh restarts the age
        nxt = self._md_epoch
        self.broker.send(
            "Metadata",
            self.name,
            self._metadata_request(),
            lambda _resp: self.sched.call_later(self.metadata_age_s, self._refresh_metadata, nxt),
        )

    # -- clean stop -------------------------------------------------------------------------------------
    def _close(self) -> None:
        t0 = self.sched.now_ns
        pending = self.policy.pending()
        if pending and self.generation >= 0:
            self._commit_sync(pending)
        ps = sorted(self.assignment)
        self.rec.revoked(ps, lost=False)
        self.policy.forget(ps)
        self.feed.release(ps, self)
        self.assignment = []
        self._hb_epoch += 1
        self._md_epoch += 1
        leave_after = self.threads.close_leave_s()
        if leave_after > 0:  # the close's hand-offs to kafka-python's IO thread (the model's field)
            self.sched.sleep(leave_after)
        if self.member_id and self.generation >= 0 and self.coordinator_known:
            machine = self.broker.machine
            req = g.LeaveGroupRequest(self.group, [(self.member_id, None)])
            self._call(
                "LeaveGroup", lambda now, reply: machine.leave_group(now, reply, req), group=self.group
            )
        self.generation, self.member_id = -1, ""
        self.alive = False
        self.rec.stopped(clean=True, close_ms=(self.sched.now_ns - t0) / 1e6)
        if self._on_stopped is not None:
            self._on_stopped(self.name)
