"""A fake :class:`~coordinator.ports.ReplicatedLog`, a recording history and an in-process broker whose group
APIs run in replicated mode over that fake, for the coordinator's replicated-mode tests.

The broker is a single-broker :class:`~coordinator.server.Broker` whose group APIs are replaced by
``GroupApis(..., replicated=fake)``: what ``server.py`` does when replication is enabled (wired by the replica
manager); the data plane stays the single broker's.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator, Sequence
from typing import Any

from coordinator.config import BrokerConfig, ReplicationConfig
from coordinator.core.group import GroupConfig, encode_record
from coordinator.core.group.machine import GroupCoordinator
from coordinator.groups import GroupApis
from coordinator.ports import OFFSETS_TOPIC, AppendResult, LeadershipListener
from coordinator.server import Broker
from tests.support.recording import RecordingHistory

__all__ = ["FakeReplicatedLog", "RecordingHistory", "replicated_broker", "seed"]


class FakeReplicatedLog:
    """An in-memory ReplicatedLog: ``mode`` "ack" (acknowledge at once), "hold" (until :meth:`release`) or an
    error code (every append fails with it). Only partitions in ``epochs`` are led."""

    def __init__(self) -> None:
        self.committed: dict[int, list[tuple[bytes | None, bytes | None]]] = {}
        self.epochs: dict[int, int] = {}
        self.mode: str | int = "ack"
        self.held: list[
            tuple[asyncio.Future[AppendResult], int, list[tuple[bytes | None, bytes | None]]]
        ] = []
        self.appends: list[tuple[int, list[tuple[bytes | None, bytes | None]], int, int]] = []
        self.listeners: list[LeadershipListener] = []
        #: Set once a read of the committed entries passed ``reading_mark`` entries.
        self.reading = asyncio.Event()
        self.reading_mark = -1

    def leader_epoch(self, topic: str, partition: int) -> int | None:
        return self.epochs.get(partition)

    async def append(
        self,
        topic: str,
        partition: int,
        entries: Sequence[tuple[bytes | None, bytes | None]],
        required_acks: int,
        timeout_ms: int,
    ) -> AppendResult:
        assert topic == OFFSETS_TOPIC
        self.appends.append((partition, list(entries), required_acks, timeout_ms))
        epoch = self.epochs.get(partition)
        if epoch is None:
            return AppendResult(6, -1, -1)
        if isinstance(self.mode, int):
            return AppendResult(self.mode, -1, epoch)
        if self.mode == "hold":
            fut: asyncio.Future[AppendResult] = asyncio.get_running_loop().create_future()
            self.held.append((fut, partition, list(entries)))
            return await fut
        return AppendResult(0, self._commit(partition, entries), epoch)

    def _commit(self, partition: int, entries: Sequence[tuple[bytes | None, bytes | None]]) -> int:
        log = self.committed.setdefault(partition, [])
        base = len(log)
        log.extend(entries)
        return base

    def release(self, error: int = 0) -> None:
        fut, partition, entries = self.held.pop(0)
        base = self._commit(partition, entries) if error == 0 else -1
        fut.set_result(AppendResult(error, base, self.epochs.get(partition, -1)))

    def read_committed(self, topic: str, partition: int) -> Iterator[tuple[bytes | None, bytes | None]]:
        for i, entry in enumerate(list(self.committed.get(partition, []))):
            if i == self.reading_mark:
                self.reading.set()
            yield entry

    def add_leadership_listener(self, topic: str, listener: LeadershipListener) -> None:
        assert topic == OFFSETS_TOPIC
        self.listeners.append(listener)
        for p, e in list(self.epochs.items()):
            listener.on_became_leader(p, e)

    def elect(self, partition: int, epoch: int) -> None:
        self.epochs[partition] = epoch
        for listener in self.listeners:
            listener.on_became_leader(partition, epoch)

    def resign(self, partition: int, epoch: int) -> None:
        self.epochs.pop(partition, None)
        for listener in self.listeners:
            listener.on_resigned(partition, epoch)


def replicated_broker(
    fake: FakeReplicatedLog, history: RecordingHistory, config: BrokerConfig | None = None
) -> tuple[Broker, GroupApis]:
    """A broker (id 1 unless ``config`` says) with topic ``t`` (2 partitions) whose group APIs run in
    replicated mode over ``fake`` (initial rebalance delay 0, offsets.commit.timeout.ms 1234)."""
    broker = Broker(config or BrokerConfig(broker_id=1), history=history)
    broker.store.create("t", 2)
    apis = GroupApis(
        GroupCoordinator(GroupConfig(initial_rebalance_delay_ms=0)),
        broker.cluster,
        broker.store,
        history,
        broker_id=broker.config.broker_id,
        rejected=broker.rejected,
        replicated=fake,
        replication=ReplicationConfig(offsets_commit_timeout_ms=1234),
    )
    broker.groups = apis
    broker.handlers.update(apis.handlers())
    return broker, apis


def seed(fake: FakeReplicatedLog, partition: int, records: list[Any]) -> None:
    """Put ``records`` in ``fake``'s committed entries of ``partition`` (key group id, value encoded)."""
    fake.committed.setdefault(partition, []).extend((r.group_id.encode(), encode_record(r)) for r in records)
