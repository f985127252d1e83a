"""The ZooKeeper shell's ISR-write events: ``isr_change`` and ``fenced``
what=isr_write are emitted once, by :class:`coordinator.zookeeper.states.StateFollower.write_isr`, and not at all for a
write that was not made because the broker is stopping. The kazoo client is a stand-in (only ``set``/``get``)."""

from __future__ import annotations

import asyncio
from typing import Any

from kazoo.exceptions import BadVersionError, ConnectionLoss

from coordinator.cluster import ClusterView
from coordinator.core.replication.state import ConditionalResult, PartitionState, encode_partition_state
from coordinator.zookeeper.states import StateFollower
from tests.support.replicas import ListHistory


class _Stat:
    def __init__(self, version: int) -> None:
        self.version = version


class _Client:
    """``set`` fails as told; ``get`` returns ``current`` at version 7."""

    def __init__(self, current: PartitionState, on_set: Any) -> None:
        self.current, self.on_set = current, on_set

    def set(self, path: str, data: bytes, version: int) -> _Stat:
        return self.on_set()

    def get(self, path: str) -> tuple[bytes, _Stat]:
        return encode_partition_state(self.current), _Stat(7)


def _follower(client: _Client, history: ListHistory) -> StateFollower:
    return StateFollower(client, 1, ClusterView(1), None, asyncio.get_running_loop(), history)  # type: ignore[arg-type]


def test_a_lost_isr_write_emits_one_isr_change_and_one_fenced() -> None:
    async def main() -> None:
        history = ListHistory()

        def bad_version() -> _Stat:
            raise BadVersionError()

        follower = _follower(_Client(PartitionState(2, 1, (2,), 1), bad_version), history)
        result = await follower.write_isr("t", 0, PartitionState(1, 0, (1,), 1), 6)
        assert result == ConditionalResult(False, -1)
        assert [(e["isr"], e["zk_version"], e["ok"]) for e in history.of("isr_change")] == [([1], 6, False)]
        assert [(e["what"], e["error"]) for e in history.of("fenced")] == [
            ("isr_write", "NOT_LEADER_OR_FOLLOWER")
        ]
        follower.stop()

    asyncio.run(main())


def test_an_isr_write_cut_by_the_brokers_stop_emits_nothing() -> None:
    async def main() -> None:
        history = ListHistory()
        follower: StateFollower | None = None

        def stopping() -> _Stat:
            assert follower is not None
            follower.stop()  # the broker stops while the write waits for its connection
            raise ConnectionLoss()

        follower = _follower(_Client(PartitionState(1, 0, (1, 2), 1), stopping), history)
        result = await follower.write_isr("t", 0, PartitionState(1, 0, (1,), 1), 6)
        assert result == ConditionalResult(False, -1)
        assert history.of("isr_change") == [] and history.of("fenced") == []

    asyncio.run(main())


def test_a_new_topic_reaches_metadata_with_every_partition_at_once() -> None:
    # 0.9's controller sends a new topic's partition states in one UpdateMetadata: the ClusterView (what Metadata
    # answers from) shows none of a topic's partitions until each assigned one has a state; then updates of a
    # known partition go in at once. Here the states of t-0 and t-2 are read before t-1's.
    async def main() -> None:
        cluster = ClusterView(1)
        follower = StateFollower(
            _Client(PartitionState(1, 0, (1,), 1), lambda: _Stat(0)),  # type: ignore[arg-type]
            1,
            cluster,
            None,
            asyncio.get_running_loop(),
            ListHistory(),
        )
        for p in range(3):
            follower._assigned[("t", p)] = (1, 2)  # noqa: SLF001 - what the assignment watcher records
        follower._deliver("t", 0, PartitionState(1, 0, (1, 2), 1), 0, (1, 2))  # noqa: SLF001
        follower._deliver("t", 2, PartitionState(2, 0, (2, 1), 1), 0, (1, 2))  # noqa: SLF001
        assert cluster.topic_partitions("t") is None
        assert cluster.topic_names() == []
        follower._deliver("t", 1, PartitionState(1, 0, (1, 2), 1), 0, (1, 2))  # noqa: SLF001
        parts = cluster.topic_partitions("t")
        assert parts is not None
        assert {p: (i.leader, i.isr) for p, i in parts.items()} == {
            0: (1, (1, 2)),
            1: (1, (1, 2)),
            2: (2, (2, 1)),
        }
        follower._deliver("t", 2, PartitionState(1, 1, (1,), 1), 1, (1, 2))  # noqa: SLF001 - leader moves
        moved = cluster.partition_info("t", 2)
        assert moved is not None and (moved.leader, moved.leader_epoch) == (1, 1)
        follower.stop()

    asyncio.run(main())
