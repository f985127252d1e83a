# pyright: strict
"""One partition as one broker sees it: leader or follower, ISR, log end offsets, high watermark, epochs.

Pure: time is passed in (``now_ms``), the log is only its end offset, and ZooKeeper writes are *returned*
(:class:`IsrChange`) for the caller to make conditionally and report back (:meth:`Partition.isr_written`).
The caller makes that write and reports it before feeding this partition anything else, as 0.9 does the
write inside ``leaderIsrUpdateLock``.

Sources (apache/kafka 0.9.0.1, ``core/src/main/scala/kafka/``):

* State (``cluster/Partition.scala``): leader epoch starts at -1 (``LeaderAndIsr.initialLeaderEpoch - 1``),
  zkVersion at 0, controller epoch at 0. Each remote replica (``cluster/Replica.scala``) has a log end offset
  (LEO, -1 = unknown) and ``lastCaughtUpTimeMs``, set to the creation time.
* :meth:`Partition.follower_fetch` is ``ReplicaManager.updateFollowerLogReadResults`` ->
  ``Partition.updateReplicaLogReadResult`` -> ``Replica.updateLogReadResult`` + ``maybeExpandIsr``: the
  follower's LEO becomes the fetch offset; when the read reached the leader's LEO at read time
  (``readToEndOfLog``: fetch offset >= leader LEO) ``lastCaughtUpTimeMs`` becomes now. A follower outside
  the ISR whose LEO reached the leader's high watermark is added (the ISR write is returned); then the high
  watermark is recomputed.
* :meth:`Partition.shrink` is ``maybeShrinkIsr`` / ``getOutOfSyncReplicas``: every ISR member but the leader
  whose ``now - lastCaughtUpTimeMs > replica.lag.time.max.ms`` (strictly) is out of sync; the ISR without
  them is returned for a conditional write.
* The ISR write (``Partition.updateIsr`` -> ``ReplicationUtils.updateLeaderAndIsr``) is the state znode with
  this leader, its leader epoch, the new ISR and the controller epoch that made the leadership decision,
  conditional on the cached zkVersion. Only when it succeeds do the ISR and zkVersion change; when it
  loses ("Cached zkVersion not equal to that in zookeeper, skip updating ISR") nothing changes -- this is
  what fences a deposed leader: its ISR cannot shrink, so its high watermark cannot pass what the old ISR
  members (now following someone else) hold.
* High watermark (``maybeIncrementLeaderHW``): the minimum LEO over the ISR (the leader's own LEO included);
  it moves only forward (an unknown LEO, -1, holds it). Recomputed after an append, a follower fetch, an
  ISR change and on becoming leader.
* :meth:`Partition.append` is ``appendMessagesToLeader``: not the leader -> ``NOT_LEADER_FOR_PARTITION``;
  ``acks=-1`` with an ISR smaller than ``min.insync.replicas`` -> ``NOT_ENOUGH_REPLICAS`` before writing.
* :meth:`Partition.acks_all_satisfied` is ``checkEnoughReplicasReachOffset`` (DelayedProduce, acks=-1):
  satisfied once the high watermark reached the required offset (the last appended offset + 1), i.e.
  every ISR member's LEO did; then ``NONE``, or ``NOT_ENOUGH_REPLICAS_AFTER_APPEND`` when the ISR is now
  smaller than ``min.insync.replicas``; not the leader -> ``NOT_LEADER_FOR_PARTITION``.
* :meth:`Partition.become_leader` / :meth:`Partition.become_follower` are ``ReplicaManager.becomeLeaderOrFollower``'s
  per-partition check (a partition state whose controller epoch is older than the one this partition last
  applied -> ``STALE_CONTROLLER_EPOCH``, see below; whose leader epoch is not strictly newer -> ``STALE_LEADER_EPOCH``;
  this broker not among the assigned replicas -> ``UNKNOWN_TOPIC_OR_PARTITION``) then ``makeLeader`` /
  ``makeFollower``: record the controller epoch, leader epoch and zkVersion, add/remove replicas; a leader
  takes the ISR from the state, a follower empties it. A follower whose leader changed truncates its log to
  its high watermark (``ReplicaManager.makeFollowers`` -> ``logManager.truncateTo``) -- only when the new
  leader is a live broker: a state with no leader (-1) steps down without truncating; its high watermark then
  follows the leader's: ``min(own LEO, leader HW)`` (``ReplicaFetcherThread.processPartitionData``).

The controller epoch is checked per partition (a deviation, with the decided no-LeaderAndIsr design): 0.9's
``becomeLeaderOrFollower`` compares the *request's* controller epoch with the newest the broker saw, since a
new controller resends every partition's state with its own epoch. Here states are read from the state znodes,
and each carries the epoch of the controller that last wrote *that* znode; a new controller rewrites only the
partitions it changes, so a broker-wide gate would refuse valid states of untouched partitions after a
controller failover. Per partition, an older controller's state is still
refused, and the zkVersion orders the reads of one znode.

One deliberate difference from 0.9: on becoming the new leader, 0.9 resets the remote replicas' LEO to unknown
but keeps their old ``lastCaughtUpTimeMs`` (possibly from long before), so the first shrink check after a
failover can drop followers that never lagged. Kafka 3.7 (``Replica.resetReplicaState``) sets it to now for
followers in the ISR and to 0 for the others; this core does the same, so a follower leaves the ISR exactly
``replica.lag.time.max.ms`` after the election unless it catches up.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from coordinator.core.replication.election import stale_controller_epoch, stale_leader_epoch
from coordinator.core.replication.errors import (
    NONE,
    NOT_ENOUGH_REPLICAS,
    NOT_ENOUGH_REPLICAS_AFTER_APPEND,
    NOT_LEADER_FOR_PARTITION,
    OFFSET_OUT_OF_RANGE,
    STALE_CONTROLLER_EPOCH,
    STALE_LEADER_EPOCH,
    UNKNOWN_TOPIC_OR_PARTITION,
    NotAssignedReplica,
    ReplicationError,
)
from coordinator.core.replication.state import INITIAL_CONTROLLER_EPOCH, ConditionalResult, PartitionState

__all__ = ["UNKNOWN_OFFSET", "AcksCheck", "Append", "IsrChange", "Partition", "Transition"]

UNKNOWN_OFFSET = -1


@dataclass
class _Remote:
    """A remote replica as the leader tracks it (0.9 ``Replica`` with no local log)."""

    leo: int
    last_caught_up_ms: int


@dataclass(frozen=True)
class IsrChange:
    """An ISR write to make: ``state`` to the state znode, conditional on ``expected_zk_version``."""

    state: PartitionState
    expected_zk_version: int
    added: tuple[int, ...]
    removed: tuple[int, ...]


@dataclass(frozen=True)
class Append:
    """An accepted leader append: its first offset and the offset an acks=-1 wait needs (last + 1)."""

    first_offset: int
    required_offset: int


@dataclass(frozen=True)
class AcksCheck:
    """``checkEnoughReplicasReachOffset``'s answer: ``done`` (answer the producer now) and its error code."""

    done: bool
    error: int


@dataclass(frozen=True)
class Transition:
    """The outcome of a LeaderAndIsr partition state: ``error`` (NONE when applied), ``changed`` (the leader
    differs from before) and, for a follower whose leader changed, the offset its log was truncated to."""

    error: int
    changed: bool = False
    truncate_to: int | None = None


class Partition:
    """One partition on broker ``local_id``; starts with no leader, an empty ISR and the given log end.

    ``leo`` and ``hw`` are the local log's end offset and high watermark (a restarted broker passes the ones it
    recovered); consumers read below :attr:`hw`.
    """

    def __init__(
        self, topic: str, partition: int, local_id: int, now_ms: int, leo: int = 0, hw: int = 0
    ) -> None:
        if not 0 <= hw <= leo:
            raise ValueError(f"need 0 <= hw <= leo, got hw {hw}, leo {leo}")
        self.topic = topic
        self.partition = partition
        self.local_id = local_id
        self.leader: int | None = None
        self.leader_epoch = -1
        self.zk_version = 0
        self.controller_epoch = INITIAL_CONTROLLER_EPOCH - 1
        self.assigned: tuple[int, ...] = ()
        self.isr: tuple[int, ...] = ()
        self._leo = leo
        self._hw = hw
        self._remotes: dict[int, _Remote] = {}
        self._created_ms = now_ms

    # -- reads --------------------------------------------------------------------------------------------------

    @property
    def is_leader(self) -> bool:
        """True when this broker leads the partition."""
        return self.leader == self.local_id

    @property
    def leo(self) -> int:
        """The local log's end offset."""
        return self._leo

    @property
    def hw(self) -> int:
        """The high watermark: consumers read offsets below it."""
        return self._hw

    def replica_leo(self, broker_id: int) -> int:
        """A replica's log end offset as this broker knows it (-1: unknown); the local one is :attr:`leo`."""
        if broker_id == self.local_id:
            return self._leo
        remote = self._remotes.get(broker_id)
        if remote is None:
            raise NotAssignedReplica(f"broker {broker_id} is not an assigned replica of {self._name()}")
        return remote.leo

    def last_caught_up_ms(self, broker_id: int) -> int:
        """A remote replica's last time fully caught up (``lastCaughtUpTimeMs``)."""
        remote = self._remotes.get(broker_id)
        if remote is None:
            raise NotAssignedReplica(f"broker {broker_id} is not a remote replica of {self._name()}")
        return remote.last_caught_up_ms

    # -- LeaderAndIsr -------------------------------------------------------------------------------------------

    def _check(self, state: PartitionState, assigned: Sequence[int]) -> int:
        if not set(state.isr) <= set(assigned):
            raise ValueError(
                f"{self._name()}: ISR {list(state.isr)} is not within the assigned {list(assigned)}"
            )
        if stale_controller_epoch(state.controller_epoch, self.controller_epoch):
            return STALE_CONTROLLER_EPOCH
        if stale_leader_epoch(state.leader_epoch, self.leader_epoch):
            return STALE_LEADER_EPOCH
        if self.local_id not in assigned:
            return UNKNOWN_TOPIC_OR_PARTITION
        return NONE

    def _set_assigned(self, assigned: Sequence[int], now_ms: int) -> None:
        self.assigned = tuple(assigned)
        for broker in assigned:
            if broker != self.local_id and broker not in self._remotes:
                self._remotes[broker] = _Remote(UNKNOWN_OFFSET, now_ms)
        for broker in [b for b in self._remotes if b not in assigned]:
            del self._remotes[broker]

    def become_leader(
        self, state: PartitionState, zk_version: int, assigned: Sequence[int], now_ms: int
    ) -> Transition:
        """Apply a LeaderAndIsr partition state naming this broker leader (``makeLeader``), epoch check first."""
        if state.leader != self.local_id:
            raise ValueError(f"state names broker {state.leader} leader, not this broker {self.local_id}")
        error = self._check(state, assigned)
        if error != NONE:
            return Transition(error)
        self._set_assigned(assigned, now_ms)
        self.controller_epoch = state.controller_epoch
        self.isr = state.isr
        self.leader_epoch = state.leader_epoch
        self.zk_version = zk_version
        changed = not self.is_leader
        self.leader = self.local_id
        if changed:
            for broker, remote in self._remotes.items():
                remote.leo = UNKNOWN_OFFSET
                remote.last_caught_up_ms = now_ms if broker in self.isr else 0
        self._maybe_increment_hw()
        return Transition(NONE, changed)

    def become_follower(
        self, state: PartitionState, zk_version: int, assigned: Sequence[int], now_ms: int
    ) -> Transition:
        """Apply a LeaderAndIsr partition state naming another leader (``makeFollower``), epoch check first.

        When the leader changed to a live broker the local log is truncated to the high watermark
        (``Transition.truncate_to``). A state with no leader (-1) only steps down (``changed`` if this broker
        led or followed someone): no truncation -- 0.9.0.1 ``ReplicaManager.makeFollowers`` calls
        ``partition.makeFollower`` and ``logManager.truncateTo`` only for a leader found among the alive
        brokers ("cannot become follower since the new leader %d is unavailable"). Truncating there would cut a
        restarted broker's acknowledged records to its stale checkpointed HW before it is elected from the ISR.
        """
        if state.leader == self.local_id:
            raise ValueError(f"state names this broker {self.local_id} leader; use become_leader")
        error = self._check(state, assigned)
        if error != NONE:
            return Transition(error)
        self._set_assigned(assigned, now_ms)
        self.controller_epoch = state.controller_epoch
        self.isr = ()
        self.leader_epoch = state.leader_epoch
        self.zk_version = zk_version
        if self.leader == state.leader:
            return Transition(NONE, changed=False)
        self.leader = state.leader
        if state.leader < 0:
            return Transition(NONE, changed=True)
        self._leo = min(self._leo, self._hw)
        return Transition(NONE, changed=True, truncate_to=self._hw)

    # -- as a follower ------------------------------------------------------------------------------------------

    def follower_append(self, new_leo: int, leader_hw: int) -> None:
        """A follower appended what it fetched (its log now ends at ``new_leo``) and learnt the leader's HW."""
        if self.is_leader or self.leader is None:
            raise ReplicationError(f"{self._name()}: not a follower", NOT_LEADER_FOR_PARTITION)
        if new_leo < self._leo:
            raise ValueError(f"a fetch cannot shorten the log ({self._leo} -> {new_leo})")
        self._leo = new_leo
        self._hw = min(new_leo, leader_hw)

    def follower_truncate(self, offset: int) -> int:
        """A follower cut its log to ``offset`` (0.9 ``ReplicaFetcherThread.handleOffsetOutOfRange``: the leader's
        log ends below this follower's); the LEO and, if above, the HW come down to it. Returns the new LEO."""
        if self.is_leader:
            raise ReplicationError(f"{self._name()}: the leader does not truncate", NOT_LEADER_FOR_PARTITION)
        if offset < 0:
            raise ValueError(f"cannot truncate to a negative offset {offset}")
        self._leo = min(self._leo, offset)
        self._hw = min(self._hw, self._leo)
        return self._leo

    # -- as the leader ------------------------------------------------------------------------------------------

    def _require_leader(self) -> None:
        if not self.is_leader:
            raise ReplicationError(
                f"broker {self.local_id} is not the leader of {self._name()}", NOT_LEADER_FOR_PARTITION
            )

    def append(self, count: int, required_acks: int, min_isr: int) -> Append:
        """Append ``count`` records to the leader's log (``appendMessagesToLeader``); raises
        :class:`ReplicationError` with ``NOT_LEADER_FOR_PARTITION`` or, for acks=-1 under min.insync.replicas,
        ``NOT_ENOUGH_REPLICAS`` (nothing written)."""
        self._require_leader()
        if count < 1:
            raise ValueError(f"append count must be positive, got {count}")
        if required_acks == -1 and len(self.isr) < min_isr:
            raise ReplicationError(
                f"ISR {list(self.isr)} of {self._name()} is below min.insync.replicas {min_isr}",
                NOT_ENOUGH_REPLICAS,
            )
        first = self._leo
        self._leo += count
        self._maybe_increment_hw()
        return Append(first, self._leo)

    def follower_fetch(self, replica: int, offset: int, now_ms: int) -> IsrChange | None:
        """Record follower ``replica``'s fetch at ``offset`` (its LEO); return an ISR expansion to write, if any.

        An offset beyond the leader's LEO raises :class:`ReplicationError` with ``OFFSET_OUT_OF_RANGE`` (the
        read fails before 0.9 records anything).

        The high watermark is recomputed with the (unchanged) ISR; an expansion takes effect in
        :meth:`isr_written`.
        """
        self._require_leader()
        if replica == self.local_id or replica not in self._remotes:
            raise NotAssignedReplica(
                f"broker {replica} is not a follower of {self._name()} (assigned {list(self.assigned)})"
            )
        if not 0 <= offset <= self._leo:
            raise ReplicationError(
                f"fetch offset {offset} of broker {replica} outside [0, {self._leo}] of {self._name()}",
                OFFSET_OUT_OF_RANGE,
            )
        remote = self._remotes[replica]
        remote.leo = offset
        if offset >= self._leo:
            remote.last_caught_up_ms = now_ms
        change = None
        if replica not in self.isr and offset >= self._hw:
            change = self._change(self.isr + (replica,), added=(replica,), removed=())
        self._maybe_increment_hw()
        return change

    def shrink(self, now_ms: int, lag_time_ms: int) -> IsrChange | None:
        """The ISR without the followers not caught up for more than ``lag_time_ms``; None when all are in sync."""
        self._require_leader()
        out = tuple(
            b
            for b in self.isr
            if b != self.local_id and now_ms - self._remotes[b].last_caught_up_ms > lag_time_ms
        )
        if not out:
            return None
        return self._change(tuple(b for b in self.isr if b not in out), added=(), removed=out)

    def isr_written(self, change: IsrChange, result: ConditionalResult) -> None:
        """Report the conditional write of ``change``: on success adopt its ISR and the new zkVersion and
        recompute the high watermark; on a loss change nothing (a newer writer owns the partition state)."""
        if change.expected_zk_version != self.zk_version or change.state.leader_epoch != self.leader_epoch:
            raise ValueError(f"{self._name()}: the ISR change reported is not the one last proposed")
        if not result.succeeded:
            return
        self.isr = change.state.isr
        self.zk_version = result.version
        self._maybe_increment_hw()

    def acks_all_satisfied(self, offset: int, min_isr: int) -> AcksCheck:
        """Whether an acks=-1 produce needing ``offset`` (last appended + 1) can be answered, and with what."""
        if not self.is_leader:
            return AcksCheck(False, NOT_LEADER_FOR_PARTITION)
        if self._hw < offset:
            return AcksCheck(False, NONE)
        return AcksCheck(True, NONE if len(self.isr) >= min_isr else NOT_ENOUGH_REPLICAS_AFTER_APPEND)

    # -- internals ----------------------------------------------------------------------------------------------

    def _change(self, isr: tuple[int, ...], added: tuple[int, ...], removed: tuple[int, ...]) -> IsrChange:
        state = PartitionState(self.local_id, self.leader_epoch, isr, self.controller_epoch)
        return IsrChange(state, self.zk_version, added, removed)

    def _maybe_increment_hw(self) -> bool:
        if not self.isr:
            return False
        candidate = min(self._leo if b == self.local_id else self._remotes[b].leo for b in self.isr)
        if candidate > self._hw:
            self._hw = candidate
            return True
        return False

    def _name(self) -> str:
        return f"[{self.topic},{self.partition}]"
