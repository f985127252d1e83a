"""The ZooKeeper shell's ISR-write events (review finding 3 of issue 14): ``isr_change`` and ``fenced``
what=isr_write are emitted once, by :class:`coordinator.zk_states.StateFollower.write_isr`, and not at all for a
write that was not made because the broker is stopping. The kazoo client is a stand-in (only ``set``/``get``)."""

from __future__ import annotations

import asyncio
from typing import Any

from kazoo.exceptions import BadVersionError, ConnectionLoss

from coordinator.cluster import ClusterView
from coordinator.replication.state import ConditionalResult, PartitionState, encode_partition_state
from coordinator.zk_states import StateFollower
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
