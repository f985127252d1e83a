"""The replica manager: this broker's partitions as leader or follower, over the pure 0.9 replication core.

It is the :class:`~coordinator.ports.PartitionStateSink` (the ZooKeeper shell feeds it the partition states it
reads) and the :class:`~coordinator.ports.ReplicatedLog` (the group coordinator keeps ``__consumer_offsets`` in
it); the dataplane sends Produce and Fetch through it in replicated mode. Every method runs on the broker's
event loop. The rules (epochs, ISR, high watermark, acks) are :class:`coordinator.core.replication.Partition`'s; this
module only does the IO around them: the local :class:`~coordinator.partition_log.PartitionLog`, parked acks=-1
produces, the ISR writes, the fetchers (:mod:`coordinator.replicas.fetcher`), the HW checkpoint.

Sources (apache/kafka 0.9.0.1 ``core/src/main/scala/kafka/``, unless said):

* :meth:`ReplicaManager.apply_state` is ``server/ReplicaManager.becomeLeaderOrFollower`` for one partition: the
  core's per-partition checks (a controller epoch older than the one this partition last applied: refused
  STALE_CONTROLLER_EPOCH, nothing changes -- per partition, not broker-wide as 0.9's request check, because a
  znode carries the epoch of the controller that last wrote it, see :mod:`coordinator.core.replication.partition`;
  leader epoch not newer: refused, answered 74 FENCED_LEADER_EPOCH as the port
  says -- 0.9's code 13 STALE_LEADER_EPOCH is another error in today's protocol); ``makeLeaders`` (stop
  fetching, the ISR from the state) or ``makeFollowers`` (a changed leader: truncate the log to the high
  watermark, ``logManager.truncateTo``, then fetch from the new leader, ``replicaFetcherManager
  .addFetcherForPartitions``); a state with no leader (-1) only stops leading / fetching and truncates
  nothing (0.9 makes no follower of an unavailable leader, see ``Partition.become_follower``). A newly assigned partition gets its local log created in the
  :class:`~coordinator.topics.TopicStore` (``getOrCreatePartition`` / ``getOrCreateReplica``), its high
  watermark read from the checkpoint (``Replica`` initialised from ``highWatermarkCheckpoints``).
  **Deviation**: there is no LeaderAndIsr request; every broker watches the state
  znodes. So it also sees the states its own ISR writes produce (same leader, same leader epoch, a new
  zkVersion): such a state is not a new leadership and is acknowledged (0) without any change, where 0.9's
  broker simply never receives it.
* Leadership listeners are 0.9's ``KafkaApis.handleLeaderAndIsrRequest`` -> ``onLeadershipChange`` ->
  ``GroupCoordinator.handleGroupImmigration`` / ``handleGroupEmigration``: told when this broker becomes leader
  of a partition (not for a newer epoch of a leadership it already holds) and when it stops leading one
  (follower, removed, or shutting down).
* :meth:`ReplicaManager.produce` is ``appendMessages`` + ``Partition.appendMessagesToLeader`` + ``DelayedProduce``:
  not the leader -> NOT_LEADER_OR_FOLLOWER (6); acks=-1 with an ISR below ``min.insync.replicas`` -> 19 before
  anything is written; acks 0/1 answer once the leader wrote; acks=-1 parks until the high watermark passes
  the batch (``checkEnoughReplicasReachOffset``: 0, or 20 when the ISR shrank below min.insync.replicas), or
  REQUEST_TIMED_OUT (7) at the request's timeout (the records stay in the leader's log, uncommitted), or 6 when
  this broker stops leading meanwhile (``DelayedProduce.tryComplete``: the partition's leader is elsewhere).
* :meth:`ReplicaManager.read` is ``fetchMessages`` / ``readFromLocalLog``: only the leader answers (6
  otherwise); a consumer (replica id < 0) reads below the high watermark (``fetchOnlyCommitted``), a follower
  (replica id >= 0) up to the log end, and its fetch offset is recorded (``updateFollowerLogReadResults`` ->
  ``Partition.updateReplicaLogReadResult``), which may expand the ISR and advance the high watermark, which
  completes parked acks=-1 produces (``tryCompleteDelayedProduce``).
* Fetch v9+ and ListOffsets v4+ carry the client's ``current_leader_epoch`` (kafka-python sends the one Metadata
  gave it): checked as Kafka 3.7 ``Partition.checkCurrentLeaderEpoch`` does (KIP-320, after 0.9): older than
  this leader's epoch -> FENCED_LEADER_EPOCH (74, ``fenced`` what=``fetch``), newer -> UNKNOWN_LEADER_EPOCH (75);
  the client refreshes its metadata and retries. So a consumer that learnt of a newer leadership is never
  served by a leader still on an older one. The replicated dataplane passes a consumer's epoch as -1 (its
  Metadata gives clients none, see :mod:`coordinator.dataplane.replicated`); a follower's is checked.
* The ISR shrink check (``maybeShrinkIsr``) runs every ``replica.lag.time.max.ms / 2``: Kafka 3.7's period
  (``ReplicaManager.startup``, "isr-expiration"); 0.9 ran it every ``replica.lag.time.max.ms``, which let a
  stuck follower stay in the ISR for up to twice the lag time. ISR writes go through the
  :class:`~coordinator.ports.IsrWriter`, one at a time per partition (0.9 makes them under
  ``leaderIsrUpdateLock``; a change proposed while one is in flight is dropped and proposed again by the next
  fetch or check). A lost write (zkVersion moved: deposed) changes nothing (``Partition.updateIsr``: "Cached
  zkVersion not equal to that in zookeeper, skip updating ISR") and the broker keeps serving until the newer
  state arrives, as 0.9 does; the writer emits ``isr_change`` ok false and ``fenced`` what=``isr_write``.
* The high-watermark checkpoint (:mod:`coordinator.replicas.checkpoint`) is written every 5 s and at stop.

Limits: a follower whose log diverged from the leader's inside a batch (possible only after an unclean
election: replicas otherwise hold the leader's batches unchanged) cannot append and backs off; 0.9 truncates
message by message, later Kafka by leader-epoch (KIP-101). Batches are stamped with no leader epoch (0.9 has
none in its message format).

History events (``harness/kernel/events.py``, "Failover fields"): ``leadership`` per applied state,
``produce_ack`` per acknowledged partition of a produce, ``fenced`` for refused produces (what=``produce``) and
fetches (``fetch``). Each event is emitted by one layer only, so none is emitted twice: ``isr_change`` and
``fenced`` what=``isr_write`` come from the :class:`~coordinator.ports.IsrWriter` and ``fenced`` what=``state``
from the caller of :meth:`ReplicaManager.apply_state` with its return code -- both the ZooKeeper shell
(:mod:`coordinator.zookeeper.states`), which alone can tell a lost write from one not made at shutdown (no event).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from coordinator.cluster import ClusterView
from coordinator.config import BrokerConfig
from coordinator.core.replication.errors import (
    NONE,
    NOT_ENOUGH_REPLICAS,
    NOT_LEADER_FOR_PARTITION,
    OFFSET_OUT_OF_RANGE,
    STALE_CONTROLLER_EPOCH,
    STALE_LEADER_EPOCH,
    UNKNOWN_TOPIC_OR_PARTITION,
    NotAssignedReplica,
    ReplicationError,
)
from coordinator.core.replication.partition import IsrChange, Partition
from coordinator.core.replication.state import PartitionState
from coordinator.partition_log import NonContiguous, PartitionLog
from coordinator.ports import AppendResult, IsrWriter, LeadershipListener
from coordinator.records import BatchInfo, InvalidRecords, decode_records, encode_batch, split_batches
from coordinator.replicas.checkpoint import (
    CHECKPOINT_INTERVAL_MS,
    CHECKPOINT_NAME,
    read_checkpoint,
    write_checkpoint,
)
from coordinator.topics import TopicStore
from harness.kernel.history import History, NullHistory

__all__ = [
    "FENCED_LEADER_EPOCH",
    "REQUEST_TIMED_OUT",
    "UNKNOWN_LEADER_EPOCH",
    "FetchRead",
    "ProduceResult",
    "ReplicaManager",
]

log = logging.getLogger("coordinator")

REQUEST_TIMED_OUT = 7
FENCED_LEADER_EPOCH = 74
UNKNOWN_LEADER_EPOCH = 75
UNKNOWN_SERVER_ERROR = -1
#: What a lost conditional ISR write is called in the ``fenced`` event: Kafka 3.7's AlterPartition answers a
#: stale partition epoch (its zkVersion's successor) INVALID_UPDATE_VERSION; 0.9 has no code, only a log line.
INVALID_UPDATE_VERSION = 108

#: Kafka's names of the codes this module answers (history events carry names).
ERROR_NAMES: dict[int, str] = {
    NONE: "NONE",
    OFFSET_OUT_OF_RANGE: "OFFSET_OUT_OF_RANGE",
    UNKNOWN_TOPIC_OR_PARTITION: "UNKNOWN_TOPIC_OR_PARTITION",
    NOT_LEADER_FOR_PARTITION: "NOT_LEADER_OR_FOLLOWER",
    REQUEST_TIMED_OUT: "REQUEST_TIMED_OUT",
    STALE_CONTROLLER_EPOCH: "STALE_CONTROLLER_EPOCH",
    NOT_ENOUGH_REPLICAS: "NOT_ENOUGH_REPLICAS",
    20: "NOT_ENOUGH_REPLICAS_AFTER_APPEND",
    FENCED_LEADER_EPOCH: "FENCED_LEADER_EPOCH",
    UNKNOWN_LEADER_EPOCH: "UNKNOWN_LEADER_EPOCH",
    UNKNOWN_SERVER_ERROR: "UNKNOWN_SERVER_ERROR",
    INVALID_UPDATE_VERSION: "INVALID_UPDATE_VERSION",
}


def _monotonic_ms() -> int:
    return time.monotonic_ns() // 1_000_000


@dataclass(frozen=True, slots=True)
class ProduceResult:
    """One partition's produce outcome: ``error`` (0: acknowledged as asked), ``base_offset`` (-1 when nothing was
    written), ``count`` (records), the leader epoch it was written under."""

    error: int
    base_offset: int
    count: int
    leader_epoch: int


@dataclass(frozen=True, slots=True)
class FetchRead:
    """One partition's fetch read: ``error``, the high watermark and log start to report, the ``records``
    bytes (whole batches) and the log read (the dataplane long-polls on it), None when not served here."""

    error: int
    high_watermark: int
    log_start_offset: int
    records: bytes
    log: PartitionLog | None


@dataclass(eq=False)
class _Parked:
    required_offset: int
    result: ProduceResult
    future: asyncio.Future[ProduceResult]
    timer: asyncio.TimerHandle | None = None


@dataclass(eq=False)
class _Replica:
    core: Partition
    log: PartitionLog
    parked: list[_Parked] = field(default_factory=lambda: [])
    isr_inflight: bool = False


class ReplicaManager:
    """See the module docstring. ``clock_ms`` (monotonic milliseconds) drives the ISR rules; tests pass a fake.

    ``isr_writer`` may be set after construction (the ZooKeeper shell is built after the manager); without one
    no ISR change is written (and none takes effect). ``on_follow`` / ``on_unfollow`` are called with
    (leader id, topic, partition) to start and stop fetching; :mod:`coordinator.replicas.fetcher` installs them.
    """

    def __init__(
        self,
        config: BrokerConfig,
        store: TopicStore,
        cluster: ClusterView,
        history: History | None = None,
        *,
        isr_writer: IsrWriter | None = None,
        clock_ms: Callable[[], int] = _monotonic_ms,
    ) -> None:
        self.config = config
        self.rc = config.replication
        self.store = store
        self.cluster = cluster
        self.history: History = history if history is not None else NullHistory()
        self.isr_writer = isr_writer
        self.clock_ms = clock_ms
        self.broker_id = config.broker_id
        self.on_follow: Callable[[int, str, int], None] | None = None
        self.on_unfollow: Callable[[int, str, int], None] | None = None
        self._replicas: dict[tuple[str, int], _Replica] = {}
        self._listeners: dict[str, list[LeadershipListener]] = {}
        self._checkpoint_path: Path | None = (
            Path(config.data_dir) / CHECKPOINT_NAME if config.data_dir is not None else None
        )
        self._checkpointed = read_checkpoint(self._checkpoint_path) if self._checkpoint_path else {}
        self._tasks: set[asyncio.Task[Any]] = set()
        self._stopped = False

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> None:
        """Start the ISR shrink check and the HW checkpoint loops (on the running loop)."""
        self._spawn(self._every(max(1, self.rc.replica_lag_time_max_ms // 2), self.maybe_shrink_isr))
        if self._checkpoint_path is not None:
            self._spawn(self._every(CHECKPOINT_INTERVAL_MS, self.checkpoint))

    async def stop(self) -> None:
        """Orderly stop: loops cancelled, every led partition resigned (listeners told, parked produces answered
        NOT_LEADER_OR_FOLLOWER), the HW checkpoint written. Fetchers are stopped by their owner."""
        self._stopped = True
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        for r in list(self._replicas.values()):
            if r.core.is_leader:
                self._resign(r, r.core.leader_epoch)
        self.checkpoint()

    def _spawn(self, coro: Awaitable[Any]) -> None:
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _every(self, period_ms: int, fn: Callable[[], None]) -> None:
        while True:
            await asyncio.sleep(period_ms / 1000)
            try:
                fn()
            except Exception:
                log.exception("replica manager task %s failed", getattr(fn, "__name__", fn))

    def checkpoint(self) -> None:
        """Write every partition's high watermark to the checkpoint file (no-op without a data dir)."""
        if self._checkpoint_path is None:
            return
        offsets = dict(self._checkpointed)
        offsets.update({key: r.core.hw for key, r in self._replicas.items()})
        if offsets == self._checkpointed and self._checkpoint_path.exists():
            return  # nothing moved: no fsync on the event loop
        write_checkpoint(self._checkpoint_path, offsets)
        self._checkpointed = offsets

    # ------------------------------------------------------------------ reads

    def partition(self, topic: str, partition: int) -> Partition | None:
        """The core of a partition this broker has a state for (tests and diagnostics read it)."""
        r = self._replicas.get((topic, partition))
        return r.core if r is not None else None

    def local_log(self, topic: str, partition: int) -> PartitionLog | None:
        """The local log of a partition this broker has a state for."""
        r = self._replicas.get((topic, partition))
        return r.log if r is not None else None

    def knows(self, topic: str) -> bool:
        """True if this broker holds a state for some partition of ``topic``."""
        return any(t == topic for t, _p in self._replicas)

    # ------------------------------------------------------------------ PartitionStateSink

    def apply_state(
        self, topic: str, partition: int, state: PartitionState, zk_version: int, assigned: tuple[int, ...]
    ) -> int:
        """See :class:`coordinator.ports.PartitionStateSink` and the module docstring."""
        if self._stopped:
            return NONE
        if self.broker_id not in assigned:
            return UNKNOWN_TOPIC_OR_PARTITION
        key = (topic, partition)
        r = self._replicas.get(key)
        if r is not None and state.leader == r.core.leader and state.leader_epoch == r.core.leader_epoch:
            return NONE  # an ISR write of this leadership (see the module docstring): nothing new
        if r is None:
            r = self._create(topic, partition)
        now = self.clock_ms()
        was_leader = r.core.is_leader
        old_leader, old_epoch = r.core.leader, r.core.leader_epoch
        if state.leader == self.broker_id:
            t = r.core.become_leader(state, zk_version, assigned, now)
        else:
            t = r.core.become_follower(state, zk_version, assigned, now)
        if t.error != NONE:
            code = FENCED_LEADER_EPOCH if t.error == STALE_LEADER_EPOCH else t.error
            # no ``fenced`` here: the caller (the ZooKeeper shell) emits it from this code (module docstring)
            log.warning(
                "[%s,%d] state %s refused (%s): leader epoch %d applied",
                topic, partition, state, ERROR_NAMES.get(code, code), r.core.leader_epoch,
            )  # fmt: skip
            return code
        self._replicas[key] = r
        if r.core.is_leader:
            if old_leader is not None and old_leader >= 0 and old_leader != self.broker_id:
                self._unfollow(old_leader, topic, partition)
            self._hw_moved(r)
            if not was_leader:
                for listener in self._listeners.get(topic, ()):
                    listener.on_became_leader(partition, r.core.leader_epoch)
        else:
            if was_leader:
                self._resign(r, old_epoch)
            if t.truncate_to is not None:
                r.log.truncate_to(t.truncate_to)
            r.log.set_high_watermark(min(r.core.hw, r.log.end_offset))
            if t.changed:
                if old_leader is not None and old_leader >= 0 and old_leader != self.broker_id:
                    self._unfollow(old_leader, topic, partition)
                if state.leader >= 0:
                    self._follow(state.leader, topic, partition)
        self.history.emit(
            "leadership",
            impl="coordinator",
            broker_id=self.broker_id,
            topic=topic,
            partition=partition,
            replica_role="leader"
            if r.core.is_leader
            else "follower",  # not `role`: that is the writer's (broker)
            leader=state.leader,
            leader_epoch=state.leader_epoch,
            controller_epoch=state.controller_epoch,
            isr=list(state.isr),
        )
        log.info(
            "[%s,%d] %s (leader %d, epoch %d, isr %s, zkVersion %d)",
            topic, partition, "leader" if r.core.is_leader else "follower", state.leader,
            state.leader_epoch, list(state.isr), zk_version,
        )  # fmt: skip
        return NONE

    def remove_partition(self, topic: str, partition: int) -> None:
        """See :class:`coordinator.ports.PartitionStateSink`: stop leading / following it (its log stays)."""
        r = self._replicas.pop((topic, partition), None)
        if r is None:
            return
        if r.core.is_leader:
            self._resign(r, r.core.leader_epoch)
        elif r.core.leader is not None and r.core.leader >= 0:
            self._unfollow(r.core.leader, topic, partition)

    def _create(self, topic: str, partition: int) -> _Replica:
        plog = self.store.ensure_partition(topic, partition)
        saved = self._checkpointed.get((topic, partition), 0)
        hw = plog.boundary_at_or_below(min(saved, plog.end_offset))
        core = Partition(topic, partition, self.broker_id, self.clock_ms(), leo=plog.end_offset, hw=hw)
        plog.set_high_watermark(hw)
        return _Replica(core, plog)

    def _follow(self, leader: int, topic: str, partition: int) -> None:
        if self.on_follow is not None:
            self.on_follow(leader, topic, partition)

    def _unfollow(self, leader: int, topic: str, partition: int) -> None:
        if self.on_unfollow is not None:
            self.on_unfollow(leader, topic, partition)

    def _resign(self, r: _Replica, epoch: int) -> None:
        """This broker stopped leading ``r``: parked produces answered 6, listeners told."""
        for parked in list(r.parked):
            self._finish(r, parked, NOT_LEADER_FOR_PARTITION)
        for listener in self._listeners.get(r.core.topic, ()):
            listener.on_resigned(r.core.partition, epoch)

    # ------------------------------------------------------------------ produce

    def produce(
        self, topic: str, partition: int, batches: list[tuple[BatchInfo, bytes]], acks: int, timeout_ms: int
    ) -> ProduceResult | asyncio.Future[ProduceResult]:
        """Append validated ``batches`` as the leader and answer as ``acks`` says (see the module docstring):
        a result now, or a future of one (acks=-1 waiting for the ISR)."""
        count = sum(info.count for info, _b in batches)
        r = self._replicas.get((topic, partition))
        if r is None or not r.core.is_leader:
            epoch = r.core.leader_epoch if r is not None else -1
            return self._refused(topic, partition, ProduceResult(NOT_LEADER_FOR_PARTITION, -1, count, epoch))
        core = r.core
        min_isr = self.rc.min_insync_replicas
        if acks == -1 and len(core.isr) < min_isr:
            return self._refused(
                topic, partition, ProduceResult(NOT_ENOUGH_REPLICAS, -1, count, core.leader_epoch)
            )
        before = r.log.end_offset
        if before != core.leo:
            raise AssertionError(f"[{topic},{partition}] log end {before} != replica LEO {core.leo}")
        base = r.log.append(batches)
        added = r.log.end_offset - before
        if added > 0:
            core.append(added, acks, min_isr)
        result = ProduceResult(NONE, base, count, core.leader_epoch)
        self._hw_moved(r)
        if acks != -1:
            return self._acked(topic, partition, result, acks)
        check = core.acks_all_satisfied(base + count, min_isr)
        if check.done:
            return self._acked(
                topic, partition, ProduceResult(check.error, base, count, core.leader_epoch), acks
            )
        loop = asyncio.get_running_loop()
        parked = _Parked(base + count, result, loop.create_future())
        parked.timer = loop.call_later(max(timeout_ms, 0) / 1000, self._finish, r, parked, REQUEST_TIMED_OUT)
        r.parked.append(parked)
        return parked.future

    def _finish(self, r: _Replica, parked: _Parked, error: int) -> None:
        if parked in r.parked:
            r.parked.remove(parked)
        if parked.timer is not None:
            parked.timer.cancel()
        if parked.future.done():
            return
        res = parked.result
        result = ProduceResult(error, res.base_offset, res.count, res.leader_epoch)
        if error == NONE or error == 20:
            self._acked(r.core.topic, r.core.partition, result, -1)
        else:
            self._refused(r.core.topic, r.core.partition, result)
        parked.future.set_result(result)

    def _acked(self, topic: str, partition: int, result: ProduceResult, acks: int) -> ProduceResult:
        if result.error == NONE:
            self.history.emit(
                "produce_ack",
                impl="coordinator",
                broker_id=self.broker_id,
                topic=topic,
                partition=partition,
                base_offset=result.base_offset,
                count=result.count,
                acks=acks,
                leader_epoch=result.leader_epoch,
            )
        return result

    def _refused(self, topic: str, partition: int, result: ProduceResult) -> ProduceResult:
        self._fenced("produce", result.error, topic, partition)
        return result

    def _fenced(self, what: str, code: int, topic: str, partition: int) -> None:
        self.history.emit(
            "fenced",
            impl="coordinator",
            broker_id=self.broker_id,
            what=what,
            error=ERROR_NAMES.get(code, str(code)),
            topic=topic,
            partition=partition,
        )

    def _hw_moved(self, r: _Replica) -> None:
        """Publish the core's high watermark to the log (waking consumers) and complete satisfied produces."""
        r.log.set_high_watermark(r.core.hw)
        for parked in list(r.parked):
            check = r.core.acks_all_satisfied(parked.required_offset, self.rc.min_insync_replicas)
            if check.done or check.error != NONE:
                self._finish(r, parked, check.error)

    # ------------------------------------------------------------------ fetch (leader side)

    def check_leader_epoch(self, core: Partition, current_leader_epoch: int) -> int:
        """Kafka 3.7 ``Partition.checkCurrentLeaderEpoch`` (KIP-320; 0.9 requests carry no epoch): a request
        naming an older leader epoch than this leader's is FENCED_LEADER_EPOCH, a newer one
        UNKNOWN_LEADER_EPOCH (this broker has not applied it yet); -1 (not given) passes."""
        if current_leader_epoch < 0 or current_leader_epoch == core.leader_epoch:
            return NONE
        return FENCED_LEADER_EPOCH if current_leader_epoch < core.leader_epoch else UNKNOWN_LEADER_EPOCH

    def read(
        self,
        topic: str,
        partition: int,
        offset: int,
        max_bytes: int,
        replica_id: int,
        current_leader_epoch: int = -1,
    ) -> FetchRead:
        """A Fetch of one partition from a consumer (``replica_id`` < 0) or a follower (see the module
        docstring). ``max_bytes`` <= 0 reads nothing but still checks the offset. ``current_leader_epoch`` (Fetch
        v9+) is checked by :meth:`check_leader_epoch`."""
        r = self._replicas.get((topic, partition))
        if r is None or not r.core.is_leader:
            if replica_id < 0:
                self._fenced("fetch", NOT_LEADER_FOR_PARTITION, topic, partition)
            return FetchRead(NOT_LEADER_FOR_PARTITION, -1, -1, b"", None)
        core = r.core
        epoch_error = self.check_leader_epoch(core, current_leader_epoch)
        if epoch_error != NONE:
            self._fenced("fetch", epoch_error, topic, partition)
            return FetchRead(epoch_error, core.hw, r.log.log_start_offset, b"", None)
        if replica_id >= 0:
            try:
                change = core.follower_fetch(replica_id, offset, self.clock_ms())
            except NotAssignedReplica:
                return FetchRead(UNKNOWN_SERVER_ERROR, core.hw, r.log.log_start_offset, b"", r.log)
            except ReplicationError as e:
                return FetchRead(e.code, core.hw, r.log.log_start_offset, b"", r.log)
            if change is not None:
                self._propose(r, change)
            self._hw_moved(r)
        start = r.log.log_start_offset
        if not start <= offset <= r.log.end_offset:
            return FetchRead(OFFSET_OUT_OF_RANGE, core.hw, start, b"", r.log)
        limit = None if replica_id >= 0 else core.hw
        records = r.log.read(offset, max_bytes, limit) if max_bytes > 0 else b""
        return FetchRead(NONE, core.hw, start, records, r.log)

    def list_offset(
        self, topic: str, partition: int, current_leader_epoch: int = -1
    ) -> tuple[int, PartitionLog | None]:
        """ListOffsets on the leader: (error, log); the caller reads the log. Latest (-1) is the high watermark
        for consumers (Kafka answers the HW to read_uncommitted consumers). ``current_leader_epoch`` (v4+) is
        checked by :meth:`check_leader_epoch`."""
        r = self._replicas.get((topic, partition))
        if r is None or not r.core.is_leader:
            return NOT_LEADER_FOR_PARTITION, None
        epoch_error = self.check_leader_epoch(r.core, current_leader_epoch)
        if epoch_error != NONE:
            return epoch_error, None
        return NONE, r.log

    # ------------------------------------------------------------------ fetch (follower side)

    def fetch_offset(self, leader: int, topic: str, partition: int) -> int | None:
        """Where a follower of ``leader`` fetches ``[topic, partition]`` next (its log end), or None when it no
        longer follows that leader."""
        r = self._replicas.get((topic, partition))
        if r is None or r.core.is_leader or r.core.leader != leader:
            return None
        return r.log.end_offset

    def follower_fetched(
        self,
        leader: int,
        topic: str,
        partition: int,
        fetch_offset: int,
        error: int,
        leader_hw: int,
        records: bytes,
    ) -> int:
        """Apply what a fetch from ``leader`` at ``fetch_offset`` returned (``ReplicaFetcherThread
        .processPartitionData``): append the batches at the leader's offsets, HW = min(LEO, leader's HW).
        OFFSET_OUT_OF_RANGE truncates to the leader's HW (0.9 ``handleOffsetOutOfRange`` truncates to the
        leader's log end, which a Fetch response does not carry; its HW is at most that). Returns the error to
        back off on (0: none). A stale answer (leadership or log moved meanwhile) is ignored."""
        r = self._replicas.get((topic, partition))
        if r is None or r.core.is_leader or r.core.leader != leader or r.log.end_offset != fetch_offset:
            return NONE
        if error == OFFSET_OUT_OF_RANGE and leader_hw >= 0 and leader_hw < r.log.end_offset:
            cut = r.log.truncate_to(r.log.boundary_at_or_below(leader_hw))
            r.core.follower_truncate(cut)
            r.log.set_high_watermark(min(r.core.hw, cut))
            log.warning("[%s,%d] log end above leader %d's: truncated to %d", topic, partition, leader, cut)
            return NONE
        if error != NONE:
            return error
        if records:
            try:
                batches = split_batches(records)
                r.log.append_replica(batches)
            except (InvalidRecords, NonContiguous) as e:
                log.error("[%s,%d] fetched from %d unusable: %s", topic, partition, leader, e)
                return UNKNOWN_SERVER_ERROR
        r.core.follower_append(r.log.end_offset, max(leader_hw, 0))
        r.log.set_high_watermark(min(r.core.hw, r.log.end_offset))
        return NONE

    # ------------------------------------------------------------------ ISR

    def maybe_shrink_isr(self) -> None:
        """Drop lagging followers from the ISR of every partition this broker leads (``maybeShrinkIsr``)."""
        now = self.clock_ms()
        for r in list(self._replicas.values()):
            if r.core.is_leader and not r.isr_inflight:
                change = r.core.shrink(now, self.rc.replica_lag_time_max_ms)
                if change is not None:
                    self._propose(r, change)

    def _propose(self, r: _Replica, change: IsrChange) -> None:
        if self.isr_writer is None or r.isr_inflight or self._stopped:
            return
        r.isr_inflight = True
        self._spawn(self._write_isr(r, change))

    async def _write_isr(self, r: _Replica, change: IsrChange) -> None:
        core = r.core
        assert self.isr_writer is not None
        try:
            result = await self.isr_writer.write_isr(
                core.topic, core.partition, change.state, change.expected_zk_version
            )
        except asyncio.CancelledError:
            r.isr_inflight = False
            raise
        except Exception:
            log.exception("[%s,%d] ISR write %s failed", core.topic, core.partition, list(change.state.isr))
            r.isr_inflight = False
            return
        r.isr_inflight = False
        current = (
            self._replicas.get((core.topic, core.partition)) is r
            and core.is_leader
            and core.zk_version == change.expected_zk_version
            and core.leader_epoch == change.state.leader_epoch
        )
        # ``isr_change`` and, for a lost write, ``fenced`` what=isr_write are the IsrWriter's to emit (the
        # ZooKeeper shell: it alone knows a write not made at shutdown, which is neither); see the module docstring
        if not current:
            return
        core.isr_written(change, result)
        log.info(
            "[%s,%d] ISR %s -> %s (%s)",
            core.topic, core.partition, list(change.state.isr) if result.succeeded else "unchanged",
            list(core.isr), "written" if result.succeeded else "lost: zkVersion moved",
        )  # fmt: skip
        self._hw_moved(r)

    # ------------------------------------------------------------------ ReplicatedLog

    def leader_epoch(self, topic: str, partition: int) -> int | None:
        """See :class:`coordinator.ports.ReplicatedLog`."""
        r = self._replicas.get((topic, partition))
        return r.core.leader_epoch if r is not None and r.core.is_leader else None

    async def append(
        self,
        topic: str,
        partition: int,
        entries: Sequence[tuple[bytes | None, bytes | None]],
        required_acks: int,
        timeout_ms: int,
    ) -> AppendResult:
        """See :class:`coordinator.ports.ReplicatedLog`: ``entries`` as one batch (:func:`encode_batch`)."""
        batches = split_batches(encode_batch(list(entries), time.time_ns() // 1_000_000), verify_crc=False)
        outcome = self.produce(topic, partition, batches, required_acks, timeout_ms)
        result = await outcome if isinstance(outcome, asyncio.Future) else outcome
        return AppendResult(result.error, result.base_offset, result.leader_epoch)

    def read_committed(self, topic: str, partition: int) -> Iterator[tuple[bytes | None, bytes | None]]:
        """See :class:`coordinator.ports.ReplicatedLog`."""
        r = self._replicas.get((topic, partition))
        if r is None:
            return
        data = r.log.read(r.log.log_start_offset, 1 << 62, limit=r.core.hw)
        if not data:
            return
        for _info, raw in split_batches(data, verify_crc=False):
            yield from decode_records(raw)

    def add_leadership_listener(self, topic: str, listener: LeadershipListener) -> None:
        """See :class:`coordinator.ports.ReplicatedLog`."""
        self._listeners.setdefault(topic, []).append(listener)
        for (t, p), r in sorted(self._replicas.items()):
            if t == topic and r.core.is_leader:
                listener.on_became_leader(p, r.core.leader_epoch)
