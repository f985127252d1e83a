# pyright: strict
"""The synced rebalance of one member and its attempts, against a :class:`legacy_zk.zkport.ZkPort`.

Contract (spec 1.8, 1.9, 1.11)
------------------------------
:meth:`Rebalancer.synced_rebalance` makes up to ``rebalance.max.retries`` attempts. The caller holds
the member's rebalance lock (0.8's ``rebalanceLock``); nothing here takes it. Each attempt
(:meth:`Rebalancer.attempt`):

1. reads the brokers, its own registration, the brokers again (``getCluster``, ``TopicCount``,
   ``getAllBrokersInCluster``); no broker: subscribe to ``/brokers/ids`` and end ``no_brokers``;
2. stops fetching and commits (``hooks.close_fetchers``), deletes every owner znode it holds;
3. reads the group (:meth:`legacy_zk.reads.GroupReader.read_view`) and plans on it
   (:func:`legacy_zk.plan.plan_rebalance`); with ``takeover.delay.ms`` and partitions of vanished
   owners to take, waits that long, then re-reads the group and plans again;
4. reads the start offsets (:func:`legacy_zk.offsets.fetch_start_offsets`: ZooKeeper, or the offset
   manager, or both with dual commit, as ``offsets.storage`` / ``dual.commit.enabled`` say) and writes
   one ``offset_fetch`` event per partition (what each store held, the offset chosen; ``dual`` is the
   effective value: false with zookeeper storage, where 0.8.2.2 ignores ``dual.commit.enabled``); a
   shutdown while waiting for the offset manager ends the attempt ``shutdown``; an answer that leaves
   out a partition ends it ``error`` (0.8.2.2's ``requestInfo(topicAndPartition)`` threw);
5. creates the owner znodes (ephemeral, data = the thread id). A ``NodeExists`` whose data is not
   this thread's is a conflict: every claim of this attempt is deleted again and the attempt ends
   ``conflict``; ``NodeExists`` with our own data is a create that succeeded before a connection
   loss (``recovered``);
6. on success records the ownership in the registry, checkpoints the start offsets and starts the
   fetcher on them; when it owns partitions, the fetcher's leader finder (``hooks.find_leaders``) reads
   the brokers from ZooKeeper once more, off the rebalance thread, as 0.8.2.2's
   ``ConsumerFetcherManager.startConnections`` made its ``LeaderFinderThread`` do.

A ZooKeeper, assignor or payload error ends the attempt with ``error`` (``shutdown`` when the member
is closing). After a failed attempt: stop fetching and commit, wait ``rebalance.backoff.ms``, retry.
After the last failed attempt the member gives up (registered, owning nothing). Every step writes
the history events of 0.8's log lines (``rebalance_begin``/``_end``, ``release``, ``revoked``,
``conflict``, ``claim``, ``assigned``, ``takeover_wait``/``_reread``) with the same kinds and fields
as before this module existed; the attempt's outcome is an :class:`legacy_zk.states.AttemptOutcome`
whose ``value`` is written. The state of the synced rebalance is :attr:`Rebalancer.state`
(:class:`legacy_zk.states.RebalanceState`, transitions checked).

No threads, sockets or sleeps of its own: time comes from ``clock``, waits from ``hooks.wait``.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable, Iterable, Mapping, MutableMapping
from typing import Any, Protocol

from legacy_zk import offset_rules, paths
from legacy_zk.assignors import AssignmentError, View
from legacy_zk.ids import ThreadId, TopicPartition
from legacy_zk.offsets import Emit, OffsetFetchIncomplete, OffsetManagerPort, OffsetStore, fetch_start_offsets
from legacy_zk.plan import RebalancePlan, plan_rebalance
from legacy_zk.reads import Broker, GroupReader
from legacy_zk.registry import OwnedPartition, Registry
from legacy_zk.states import REBALANCE_TRANSITIONS, AttemptOutcome, RebalanceState, StateMachine
from legacy_zk.zkport import KazooException, NodeExistsError, NoNodeError, ZkPort

log = logging.getLogger("legacy_zk")


class AttemptHooks(Protocol):
    """What an attempt needs from its member besides ZooKeeper."""

    def shutting_down(self) -> bool:
        """True once the member is closing."""
        ...

    def wait(self, seconds: float) -> bool:
        """Wait up to ``seconds``; True when it ended because the member is closing."""
        ...

    def close_fetchers(self) -> None:
        """``closeFetchersForQueues``: stop fetching (drop what is queued), commit (auto commit)."""
        ...

    def start_fetching(self, offsets: Mapping[TopicPartition, int]) -> None:
        """Fetch the newly owned partitions from these offsets (-1: ``auto.offset.reset``)."""
        ...

    def watch_brokers(self) -> None:
        """Subscribe to the children of ``/brokers/ids`` (exists + getChildren, with watches)."""
        ...

    def find_leaders(self, read_brokers: Callable[[], object]) -> None:
        """Start the fetcher's leader finder on its own thread: it calls ``read_brokers``
        (``getAllBrokersInCluster``) once, off the rebalance thread (0.8.2.2's
        ``ConsumerFetcherManager.LeaderFinderThread``, started by ``startConnections`` for the new
        partitions: it reads the brokers from ZooKeeper before asking them for the leaders)."""
        ...

    def assignment_changed(self, what: str, partitions: list[TopicPartition]) -> None:
        """Tell the application (``assigned`` or ``gave_up``)."""
        ...


def tp_list(tps: Iterable[TopicPartition]) -> list[list[Any]]:
    """Partitions as the history writes them: ``[[topic, partition], ...]`` sorted."""
    return [[tp.topic, tp.partition] for tp in sorted(tps)]


def tp_text(tps: Iterable[TopicPartition]) -> str:
    """Partitions for a log line: ``t-0,t-1`` or ``(none)``."""
    return ",".join(f"{tp.topic}-{tp.partition}" for tp in sorted(tps)) or "(none)"


def emit_each(emit: Emit, kind: str, tps: Iterable[TopicPartition], **fields: Any) -> None:
    """``assigned`` / ``revoked``: one event per partition (topic, partition), as both member kinds
    record them, each carrying the whole list too (``all``)."""
    ordered = sorted(tps)
    listed = tp_list(ordered)
    for tp in ordered:
        emit(kind, topic=tp.topic, partition=tp.partition, all=listed, **fields)


class Rebalancer:
    """The synced rebalance of member ``member_id`` (module contract)."""

    def __init__(
        self,
        *,
        zk: ZkPort,
        group: str,
        member_id: str,
        strategy: str,
        topics: Mapping[str, int],
        max_retries: int,
        backoff_ms: int,
        takeover_delay_ms: int,
        reader: GroupReader,
        registry: Registry,
        offsets: OffsetStore,
        hooks: AttemptHooks,
        emit: Emit,
        stats: MutableMapping[str, int],
        clock: Callable[[], float] = time.monotonic,
        offsets_storage: str = "zookeeper",
        dual_commit: bool = False,
        offset_manager: OffsetManagerPort | None = None,
        offsets_backoff_ms: int = 1000,
    ) -> None:
        """``offsets_storage``, ``dual_commit``, ``offsets_backoff_ms``: ``offsets.storage``,
        ``dual.commit.enabled``, ``offsets.channel.backoff.ms``; ``offset_manager``: the broker side
        (required with kafka storage)."""
        self.zk = zk
        self.offsets_storage = offsets_storage
        self.dual_commit = dual_commit
        self.offset_manager = offset_manager
        self.offsets_backoff_ms = offsets_backoff_ms
        self.group = group
        self.member_id = member_id
        self.strategy = strategy
        self.topics = dict(topics)
        self.max_retries = max_retries
        self.backoff_ms = backoff_ms
        self.takeover_delay_ms = takeover_delay_ms
        self.reader = reader
        self.registry = registry
        self.offsets = offsets
        self.hooks = hooks
        self._emit = emit
        self.stats = stats
        self.clock = clock
        self.state: StateMachine[RebalanceState] = StateMachine(
            f"rebalance of {member_id}", RebalanceState.IDLE, REBALANCE_TRANSITIONS
        )
        if max_retries < 1:
            raise ValueError(f"rebalance.max.retries must be >= 1, got {max_retries}")
        #: how the last finished synced rebalance ended: SETTLED, GAVE_UP, or None (none finished)
        self.finished: RebalanceState | None = None
        self.seq = 0
        #: the view of the last successful attempt (for the takeover delay)
        self.previous_view: View | None = None
        #: the brokers read by the last attempt (the fetcher's default bootstrap servers)
        self.brokers: list[Broker] = []

    @property
    def gave_up(self) -> bool:
        """True from the moment a synced rebalance gives up until one succeeds (a rebalance in
        flight after giving up does not clear it: only its success does)."""
        return self.finished is RebalanceState.GAVE_UP

    def _tag(self, rid: int | None = None, attempt: int | None = None) -> str:
        s = f"group={self.group} member={self.member_id}"
        if rid is not None:
            s += f" rebalance={rid}"
        if attempt is not None:
            s += f" attempt={attempt}"
        return s

    # -- the synced rebalance -------------------------------------------------------------------
    def synced_rebalance(self, reasons: list[str]) -> bool:
        """Up to ``max_retries`` attempts with backoff; False = gave up or shutting down (spec 1.8).

        The caller holds the rebalance lock.
        """
        if self.hooks.shutting_down():
            return False
        self.seq += 1
        rid = self.seq
        self.stats["rebalances"] += 1
        retries = self.max_retries
        for attempt in range(retries):
            if self.hooks.shutting_down():
                if self.state.state is RebalanceState.BACKING_OFF:
                    self.state.transition(RebalanceState.STOPPED)
                return False
            self.state.transition(RebalanceState.REBALANCING)
            log.info("%s: begin rebalancing (%s)", self._tag(rid, attempt), ",".join(reasons))
            self._emit("rebalance_begin", rebalance=rid, attempt=attempt, reason=",".join(reasons))
            self.stats["attempts"] += 1
            t0 = self.clock()
            detail = ""
            try:
                outcome = self.attempt(rid, attempt)
            except BaseException as e:
                if not isinstance(e, Exception):  # a killed greenlet, an interrupt: not an outcome
                    self.state.transition(RebalanceState.IDLE)
                    raise
                outcome, detail = self._error_outcome(e, rid, attempt)  # 0.8 catches Throwable here
            if outcome is AttemptOutcome.ERROR and self.hooks.shutting_down():
                outcome = AttemptOutcome.SHUTDOWN  # closing ended a request that waited for ZooKeeper
            last = outcome.failed and attempt == retries - 1
            if outcome.failed:
                self.stats["failed_attempts"] += 1
            self._emit(
                "rebalance_end",
                rebalance=rid,
                attempt=attempt,
                outcome=outcome.value,
                duration_ms=round((self.clock() - t0) * 1000.0, 3),
                gave_up=last,
                owned=tp_list(self.registry.owned()),
                **({"detail": detail} if detail else {}),
            )
            if outcome.succeeded:
                self.state.transition(RebalanceState.SETTLED)
                self.finished = RebalanceState.SETTLED
                return True
            if outcome is AttemptOutcome.SHUTDOWN:
                self.state.transition(RebalanceState.STOPPED)
                return False
            log.info("%s: rebalancing attempt failed (%s)", self._tag(rid, attempt), outcome.value)
            self.state.transition(RebalanceState.BACKING_OFF)
            self.hooks.close_fetchers()
            self.hooks.wait(self.backoff_ms / 1000.0)
        # every attempt failed (0.8 backed off after the last one too): give up
        self.state.transition(RebalanceState.GAVE_UP)
        self.finished = RebalanceState.GAVE_UP
        self.stats["gave_up"] += 1
        log.error(
            "%s: can't rebalance after %d retries; registered but owning nothing until the next change",
            self._tag(rid),
            retries,
        )
        self.hooks.assignment_changed("gave_up", [])
        return False

    def _error_outcome(self, e: Exception, rid: int, attempt: int) -> tuple[AttemptOutcome, str]:
        """An exception out of an attempt: ``error`` with its detail (0.8 caught Throwable here)."""
        detail = f"{e.__class__.__name__}: {e}"
        if isinstance(e, (KazooException, AssignmentError, paths.MalformedZnode, OffsetFetchIncomplete)):
            log.info("%s: exception during rebalance: %s", self._tag(rid, attempt), detail)
        else:
            log.warning("%s: unexpected error during rebalance", self._tag(rid, attempt), exc_info=True)
        return AttemptOutcome.ERROR, detail

    # -- one attempt ----------------------------------------------------------------------------
    def attempt(self, rid: int, attempt: int) -> AttemptOutcome:
        """One attempt (spec 1.9, module contract)."""
        self.brokers = self.reader.read_cluster()  # getCluster(zkClient) in syncedRebalance
        self.reader.read_registration(self.member_id, own=True)  # TopicCount.constructTopicCount(me)
        self.brokers = self.reader.read_cluster()  # getAllBrokersInCluster
        if not self.brokers:
            log.warning("%s: no brokers found when trying to rebalance", self._tag(rid, attempt))
            # subscribeChildChanges(BrokerIdsPath): exists + getChildren, every time (ZkClient's
            # listener set keeps one listener); the exists watch fires when /brokers/ids is created
            self.hooks.watch_brokers()
            return AttemptOutcome.NO_BROKERS
        owned_before = self.registry.owned()
        self.hooks.close_fetchers()
        self._release_ownership(rid, attempt)
        view = self.reader.read_view()
        plan = plan_rebalance(view, self.member_id, self.strategy, owned_before, self.previous_view)
        self._warn_idle_threads(plan, rid, attempt)
        if plan.takeover and self.takeover_delay_ms > 0:
            self._emit(
                "takeover_wait",
                rebalance=rid,
                attempt=attempt,
                partitions=tp_list(plan.takeover),
                delay_ms=self.takeover_delay_ms,
            )
            log.info(
                "%s: waiting %d ms before taking over %s from vanished owners",
                self._tag(rid, attempt),
                self.takeover_delay_ms,
                tp_text(plan.takeover),
            )
            if self.hooks.wait(self.takeover_delay_ms / 1000.0):
                return AttemptOutcome.SHUTDOWN
            # the group may have changed while we waited: claim on a fresh view, not the old one
            waited_for = plan.takeover
            view = self.reader.read_view()
            plan = plan_rebalance(view, self.member_id, self.strategy, owned_before, self.previous_view)
            self._emit(
                "takeover_reread",
                rebalance=rid,
                attempt=attempt,
                consumers=len(view.consumers),
                claim=tp_list(plan.claim),
                takeover=tp_list(plan.takeover),
                waited_for=tp_list(waited_for),
            )
        offsets = fetch_start_offsets(
            zk=self.zk,
            group=self.group,
            partitions=sorted(plan.claim),
            malformed=self.reader.malformed,
            storage=self.offsets_storage,
            dual=offset_rules.effective_dual(self.offsets_storage, self.dual_commit),
            manager=self.offset_manager,
            shutting_down=self.hooks.shutting_down,
            wait=self.hooks.wait,
            backoff_ms=self.offsets_backoff_ms,
            tag=lambda: self._tag(rid, attempt),
        )
        if offsets is None or self.hooks.shutting_down():
            return AttemptOutcome.SHUTDOWN
        for tp in sorted(offsets):
            got = offsets[tp]
            self._emit(
                "offset_fetch",
                rebalance=rid,
                attempt=attempt,
                topic=tp.topic,
                partition=tp.partition,
                storage=self.offsets_storage,
                dual=offset_rules.effective_dual(self.offsets_storage, self.dual_commit),
                zookeeper_offset=got.zookeeper_offset,
                kafka_offset=got.kafka_offset,
                offset=got.offset,
            )
        if not self._reflect_ownership(plan, rid, attempt):
            return AttemptOutcome.CONFLICT
        self.registry.replace(
            {
                tp: OwnedPartition(tid, offsets[tp].offset, offsets[tp].zookeeper_version)
                for tp, tid in plan.claim.items()
            }
        )
        self.offsets.checkpoint((tp, got.offset) for tp, got in offsets.items())
        self.previous_view = view
        owned = sorted(plan.claim)
        log.info("%s: selected partitions %s", self._tag(rid, attempt), tp_text(owned))
        emit_each(
            self._emit,
            "assigned",
            owned,
            rebalance=rid,
            attempt=attempt,
            threads={str(tp): str(t) for tp, t in plan.claim.items()},
            gained=tp_list(plan.gained),
            lost=tp_list(plan.lost),
            consumers=len(view.consumers),
        )
        self.hooks.start_fetching({tp: got.offset for tp, got in offsets.items()})
        if owned:
            self.hooks.find_leaders(self.reader.read_cluster)
        self.hooks.assignment_changed("assigned", owned)
        return AttemptOutcome.OK

    def _warn_idle_threads(self, plan: RebalancePlan, rid: int, attempt: int) -> None:
        busy = set(plan.claim.values())
        for topic, streams in self.topics.items():
            for n in range(streams):
                if ThreadId(self.member_id, n) not in busy:
                    log.debug(
                        "%s: no broker partitions consumed by consumer thread %s-%d for topic %s",
                        self._tag(rid, attempt),
                        self.member_id,
                        n,
                        topic,
                    )

    # -- ownership ------------------------------------------------------------------------------
    def _release_ownership(self, rid: int, attempt: int) -> None:
        """``releasePartitionOwnership``: delete every owner znode held, then clear the registry."""
        owned = sorted(self.registry.owned())
        if not owned:
            return
        log.info("%s: releasing partition ownership %s", self._tag(rid, attempt), tp_text(owned))
        for tp in owned:
            with contextlib.suppress(NoNodeError):  # "deleted during connection loss; this is ok"
                self.zk.delete(paths.owner_path(self.group, tp.topic, tp.partition))
            self.stats["releases"] += 1
            self._emit("release", rebalance=rid, attempt=attempt, topic=tp.topic, partition=tp.partition)
            self.registry.pop(tp)
        emit_each(self._emit, "revoked", owned, rebalance=rid, attempt=attempt, reason="rebalance")

    def create_ephemeral(self, path: str, data: bytes) -> None:
        """``createEphemeralPath``: create; on NoNode create the parents, then create again."""
        try:
            self.zk.create(path, data, ephemeral=True)
        except NoNodeError:
            self.zk.create_parents(paths.parent(path))
            self.zk.create(path, data, ephemeral=True)

    def _reflect_ownership(self, plan: RebalancePlan, rid: int, attempt: int) -> bool:
        """``reflectPartitionOwnershipDecision``: create every owner znode; any conflict rolls back."""
        created: list[TopicPartition] = []
        failed = 0
        try:
            for tp, tid in plan.claim.items():
                path = paths.owner_path(self.group, tp.topic, tp.partition)
                data = str(tid).encode()
                try:
                    self.create_ephemeral(path, data)
                    recovered = False
                except NodeExistsError:
                    try:
                        stored, _ = self.zk.get(path)
                    except NoNodeError:
                        stored = None  # vanished between create and read: still a failure
                    if stored != data:
                        failed += 1
                        self.stats["conflicts"] += 1
                        holder = stored.decode(errors="replace") if stored is not None else None
                        log.info(
                            "%s: waiting for the partition ownership to be deleted: %s (held by %s)",
                            self._tag(rid, attempt),
                            tp,
                            holder,
                        )
                        self._emit(
                            "conflict",
                            rebalance=rid,
                            attempt=attempt,
                            topic=tp.topic,
                            partition=tp.partition,
                            holder=holder,
                        )
                        continue
                    recovered = True  # our create succeeded before a connection loss
                created.append(tp)
                self.stats["claims"] += 1
                self._emit(
                    "claim",
                    rebalance=rid,
                    attempt=attempt,
                    topic=tp.topic,
                    partition=tp.partition,
                    thread=str(tid),
                    **({"recovered": True} if recovered else {}),
                )
        except BaseException:
            self._rollback(created, rid, attempt)
            raise
        if failed:
            self._rollback(created, rid, attempt)
            return False
        return True

    def _rollback(self, created: Iterable[TopicPartition], rid: int, attempt: int) -> None:
        for tp in created:
            try:
                self.zk.delete(paths.owner_path(self.group, tp.topic, tp.partition))
            except NoNodeError:
                pass
            except KazooException as e:
                log.warning("%s: could not roll back claim of %s: %s", self._tag(rid, attempt), tp, e)
                continue
            self.stats["releases"] += 1
            self._emit(
                "release",
                rebalance=rid,
                attempt=attempt,
                topic=tp.topic,
                partition=tp.partition,
                rollback=True,
            )
