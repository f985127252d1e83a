"""Stand-ins for the ZooKeeper shell in replica-manager tests: partition state znodes as a dict of
versioned states with ZooKeeper's conditional write, and a history that keeps its events."""

from __future__ import annotations

import asyncio
from typing import Any

from coordinator.cluster import ClusterView, Node, PartitionInfo
from coordinator.core.replication.errors import InvalidReplicationFactor
from coordinator.core.replication.state import ConditionalResult, PartitionState, conditional_update
from coordinator.topics import TopicExists


class FakeStates:
    """``/brokers/topics/<t>/partitions/<p>/state`` znodes: (state, zkVersion) per partition. Implements the
    :class:`coordinator.ports.IsrWriter` port (every write is recorded in :attr:`writes`)."""

    def __init__(self) -> None:
        self.znodes: dict[tuple[str, int], tuple[PartitionState, int]] = {}
        self.writes: list[tuple[str, int, PartitionState, int, bool]] = []

    def set(self, topic: str, partition: int, state: PartitionState) -> int:
        """The controller's write (unconditional here): the new zkVersion (0 for a new znode)."""
        old = self.znodes.get((topic, partition))
        version = 0 if old is None else old[1] + 1
        self.znodes[(topic, partition)] = (state, version)
        return version

    async def write_isr(
        self, topic: str, partition: int, state: PartitionState, expected_zk_version: int
    ) -> ConditionalResult:
        current = self.znodes[(topic, partition)][1]
        result = conditional_update(current, expected_zk_version)
        if result.succeeded:
            self.znodes[(topic, partition)] = (state, result.version)
        self.writes.append((topic, partition, state, expected_zk_version, result.succeeded))
        return result


class ListHistory:
    """A :class:`harness.kernel.history.History` that keeps ``(kind, fields)``."""

    def __init__(self) -> None:
        self.events: list[tuple[str, dict[str, Any]]] = []

    def emit(self, kind: str, **fields: Any) -> None:
        self.events.append((kind, fields))

    def close(self) -> None:
        return None

    def of(self, kind: str) -> list[dict[str, Any]]:
        return [f for k, f in self.events if k == kind]


# ---------------------------------------------------------------------------------------------- cluster views


def replicated_cluster(broker_id: int, offsets_partitions: int = 50) -> ClusterView:
    """A :class:`ClusterView` in replicated mode, as a replicating broker builds it."""
    return ClusterView(broker_id, offsets_partitions, replicated=True)


# ---------------------------------------------------------------------------------------------- ZooKeeper shell


class FakeZk:
    """What the ZooKeeper shell does for the data path, without ZooKeeper: the state znodes (:class:`FakeStates`),
    every broker's registration (peers), and the delivery of each written state to every broker (its
    ``ClusterView`` and, where assigned, its sink) -- a leader's own ISR writes included, as the real watches
    deliver them. Every method runs on the brokers' event loop. Pass :meth:`factory` as ``Broker(zk_factory=)``.
    """

    def __init__(self) -> None:
        self.states = FakeStates()
        self.assigned: dict[tuple[str, int], tuple[int, ...]] = {}
        self.brokers: dict[int, _FakeRegistration] = {}
        self.applied: list[tuple[int, str, int, int]] = []  # (broker, topic, partition, sink's answer)
        self.created: list[tuple[str, int, int | None]] = []  # create_topic calls

    def factory(self, config: Any, store: Any, cluster: ClusterView, port: int, loop: Any, **kw: Any) -> Any:
        return _FakeRegistration(self, config.broker_id, cluster, port, kw.get("sink"), loop)

    def _peers_changed(self) -> None:
        nodes = {i: Node(i, "127.0.0.1", r.port) for i, r in self.brokers.items() if not r.stopped}
        for r in self.brokers.values():
            r.cluster.set_peers(nodes)

    def inject(
        self,
        topic: str,
        partition: int,
        state: PartitionState,
        assigned: tuple[int, ...],
        only: tuple[int, ...] | None = None,
    ) -> None:
        """The controller writes a partition state (unconditionally) and every broker (or those in ``only``: the
        others' watches have not fired yet) learns it."""
        self.assigned[(topic, partition)] = assigned
        version = self.states.set(topic, partition, state)
        self._deliver(topic, partition, state, version, only)

    def redeliver(self, topic: str, partition: int, only: tuple[int, ...]) -> None:
        """The brokers in ``only`` learn the partition's current state (their delayed watches fire)."""
        state, version = self.states.znodes[(topic, partition)]
        self._deliver(topic, partition, state, version, only)

    def _deliver(
        self,
        topic: str,
        partition: int,
        state: PartitionState,
        version: int,
        only: tuple[int, ...] | None = None,
    ) -> None:
        assigned = self.assigned[(topic, partition)]
        for broker_id, r in sorted(self.brokers.items()):
            if r.stopped or (only is not None and broker_id not in only):
                continue
            r.cluster.set_partition_info(  # type: ignore[attr-defined]
                topic, partition, PartitionInfo(state.leader, state.leader_epoch, assigned, state.isr)
            )
            if broker_id in assigned and r.sink is not None:
                code = r.sink.apply_state(topic, partition, state, version, assigned)
                self.applied.append((broker_id, topic, partition, code))

    async def write_isr(
        self, topic: str, partition: int, state: PartitionState, expected_zk_version: int
    ) -> ConditionalResult:
        result = await self.states.write_isr(topic, partition, state, expected_zk_version)
        if result.succeeded:
            asyncio.get_running_loop().call_soon(self._deliver, topic, partition, state, result.version)
        return result


class _FakeRegistration:
    def __init__(
        self, zk: FakeZk, broker_id: int, cluster: ClusterView, port: int, sink: Any, loop: Any
    ) -> None:
        self.zk, self.broker_id, self.cluster, self.port, self.sink = zk, broker_id, cluster, port, sink
        self.loop = loop
        self.stopped = False

    def start(self) -> None:  # runs in an executor thread, as the real one: hop onto the loop
        self.zk.brokers[self.broker_id] = self
        self.loop.call_soon_threadsafe(self.zk._peers_changed)

    def stop(self) -> None:  # the ephemeral registration goes: the others' peers lose this broker
        self.stopped = True
        self.loop.call_soon_threadsafe(self.zk._peers_changed)

    def knows_topic(self, name: str) -> bool:
        return False

    async def write_isr(
        self, topic: str, partition: int, state: PartitionState, expected_zk_version: int
    ) -> ConditionalResult:
        return await self.zk.write_isr(topic, partition, state, expected_zk_version)

    def create_topic(self, name: str, partitions: int, replication_factor: int | None) -> None:
        """The controller's part, simplified (blocking, from an executor thread as the real one): replicas of
        partition p are the live brokers rotated by p (``replication_factor`` of them, None: up to 3), the first
        leads with the whole assignment in the ISR (controller epoch 1)."""
        self.zk.created.append((name, partitions, replication_factor))
        live = sorted(i for i, r in self.zk.brokers.items() if not r.stopped)
        factor = replication_factor if replication_factor is not None else min(3, len(live))
        if any(t == name for t, _p in self.zk.assigned):
            raise TopicExists(f"topic {name!r} already exists")
        if factor > len(live):
            raise InvalidReplicationFactor(f"replication factor {factor} > {len(live)} live brokers")
        for p in range(partitions):
            assigned = tuple(live[(p + k) % len(live)] for k in range(factor))
            state = PartitionState(assigned[0], 0, assigned, 1)
            self.loop.call_soon_threadsafe(self.zk.inject, name, p, state, assigned)
