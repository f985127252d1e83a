# pyright: strict
"""The seams between the broker's parts with several brokers: who calls whom, with what.

Three parts meet here; each side is written against these protocols only:

* the **ZooKeeper shell** (:mod:`coordinator.zookeeper.registration`, :mod:`coordinator.zookeeper.controller`): the 0.9 layout, the
  controller, partition state znodes. It feeds partition states to a :class:`PartitionStateSink` and offers
  the leaders' conditional ISR writes as an :class:`IsrWriter`;
* the **replica manager** (the data path: partition logs as leader or follower, followers fetching, the ISR and
  high watermark rules of :mod:`coordinator.core.replication`): it is the :class:`PartitionStateSink` and the
  :class:`ReplicatedLog`;
* the **group coordinator** (:mod:`coordinator.groups` and its runner): it keeps its groups and offsets in the
  ``__consumer_offsets`` partitions through a :class:`ReplicatedLog` and follows their leadership through a
  :class:`LeadershipListener`.

Threads: every method here is called on the broker's asyncio event loop thread (the ZooKeeper shell hops onto
the loop with ``call_soon_threadsafe`` before calling a sink; :meth:`IsrWriter.write_isr` runs the ZooKeeper
round trip off the loop and is awaited).

Error codes are Kafka's numeric codes (``kio.schema.errors.ErrorCode`` values): 0 NONE, 6
NOT_LEADER_OR_FOLLOWER, 7 REQUEST_TIMED_OUT, 19 NOT_ENOUGH_REPLICAS, 20 NOT_ENOUGH_REPLICAS_AFTER_APPEND,
11 STALE_CONTROLLER_EPOCH, 74 FENCED_LEADER_EPOCH.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Protocol

from coordinator.core.replication.state import ConditionalResult, PartitionState

__all__ = [
    "OFFSETS_TOPIC",
    "AppendResult",
    "IsrWriter",
    "LeadershipListener",
    "PartitionStateSink",
    "ReplicatedLog",
]

#: Kafka's internal topic of group metadata and committed offsets.
OFFSETS_TOPIC = "__consumer_offsets"


class PartitionStateSink(Protocol):
    """What the ZooKeeper shell tells the data path: the current state of a partition this broker is assigned."""

    def apply_state(
        self,
        topic: str,
        partition: int,
        state: PartitionState,
        zk_version: int,
        assigned: tuple[int, ...],
    ) -> int:
        """Apply ``state`` (read from ``/brokers/topics/<topic>/partitions/<partition>/state`` at ``zk_version``;
        ``assigned`` is the partition's replica list from ``/brokers/topics/<topic>``): become leader or follower
        as 0.9's ``ReplicaManager.becomeLeaderOrFollower`` does. Returns the error code: 0 when applied, 11
        STALE_CONTROLLER_EPOCH or 74 FENCED_LEADER_EPOCH (older than what this broker already applied: refused
        and changing nothing)."""
        ...

    def remove_partition(self, topic: str, partition: int) -> None:
        """This broker is no longer assigned the partition (StopReplica): stop serving and following it."""
        ...


class IsrWriter(Protocol):
    """The leader's conditional ISR write (0.9 ``Partition.updateIsr`` via ``ReplicationUtils.updateLeaderAndIsr``)."""

    async def write_isr(
        self, topic: str, partition: int, state: PartitionState, expected_zk_version: int
    ) -> ConditionalResult:
        """Write ``state`` to the partition's state znode iff its version is ``expected_zk_version``; a lost
        write (``succeeded=False``) means this broker was deposed (its cached zkVersion is stale)."""
        ...


class LeadershipListener(Protocol):
    """What the group coordinator hears about the ``__consumer_offsets`` partitions (0.9
    ``GroupCoordinator.handleGroupImmigration`` / ``handleGroupEmigration``)."""

    def on_became_leader(self, partition: int, leader_epoch: int) -> None:
        """This broker now leads offsets partition ``partition``: load its groups (CatchUp), then serve them."""
        ...

    def on_resigned(self, partition: int, leader_epoch: int) -> None:
        """This broker no longer leads ``partition`` (follower, removed, or shutting down): unload its groups."""
        ...


@dataclass(frozen=True, slots=True)
class AppendResult:
    """The outcome of :meth:`ReplicatedLog.append`: ``error`` (0: acknowledged as asked), the offset of the first
    appended entry (-1 when nothing was appended) and the leader epoch it was appended under."""

    error: int
    base_offset: int
    leader_epoch: int


class ReplicatedLog(Protocol):
    """The coordinator's view of the replicated ``__consumer_offsets`` partitions (implemented by the replica
    manager; a single broker without replication implements it over its local logs)."""

    def leader_epoch(self, topic: str, partition: int) -> int | None:
        """This broker's leader epoch of the partition, or None when it does not lead it."""
        ...

    async def append(
        self,
        topic: str,
        partition: int,
        entries: Sequence[tuple[bytes | None, bytes | None]],
        required_acks: int,
        timeout_ms: int,
    ) -> AppendResult:
        """Append ``entries`` (key, value) as one batch on the leader and wait as ``required_acks`` says (-1: until
        the high watermark passes the batch, i.e. every ISR member has it; ``min.insync.replicas`` applies).
        Errors: 6 not the leader (or deposed while waiting), 19 / 20 too few in-sync replicas, 7 not replicated
        within ``timeout_ms`` (the entries stay in the leader's log but are not committed)."""
        ...

    def read_committed(self, topic: str, partition: int) -> Iterator[tuple[bytes | None, bytes | None]]:
        """Every (key, value) of the partition below its high watermark, in offset order."""
        ...

    def add_leadership_listener(self, topic: str, listener: LeadershipListener) -> None:
        """Call ``listener`` whenever this broker becomes leader of, or stops leading, a partition of ``topic``
        (immediately for partitions it already leads)."""
        ...
