"""Stand-ins for the ZooKeeper shell in replica-manager tests (issue 14): partition state znodes as a dict of
versioned states with ZooKeeper's conditional write, and a history that keeps its events."""

from __future__ import annotations

from typing import Any

from coordinator.replication.state import ConditionalResult, PartitionState, conditional_update


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
