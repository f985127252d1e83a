"""The controller rig of the integration tests: several replicated-mode ``ZkRegistration`` shells in
one process against a real ZooKeeper, each with its own asyncio loop thread, a recording sink (0.9's epoch
refusals) and a recording history, under a ZooKeeper chroot of their own (``make_rig``). Closing a shell closes
its ZooKeeper session, which is how a broker death reaches the controller. Used by
``tests/integration/coordinator/test_controller.py`` and ``test_zookeeper_connection_loss.py``."""

from __future__ import annotations

import asyncio
import itertools
import threading
import time
from collections.abc import Coroutine
from dataclasses import dataclass, field
from typing import Any, TypeVar

from kazoo.client import KazooClient

from coordinator.cluster import ClusterView
from coordinator.config import BrokerConfig, ReplicationConfig
from coordinator.core.replication.election import ControllerEpochGate, stale_leader_epoch
from coordinator.core.replication.state import (
    PartitionState,
    decode_partition_state,
    partition_state_path,
)
from coordinator.topics import TopicStore
from coordinator.zookeeper.registration import ZkRegistration
from tests.support.recording import RecordingHistory
from tests.support.waiting import wait_until

T = TypeVar("T")

_chroots = itertools.count()


class RecordingSink:
    """A PartitionStateSink with 0.9's refusals: a stale controller epoch (11) or a leader epoch not newer than
    the one applied (74, the port's FENCED_LEADER_EPOCH). Called on the loop thread only."""

    def __init__(self) -> None:
        self.gate = ControllerEpochGate()
        self.applied: dict[tuple[str, int], PartitionState] = {}
        self.calls: list[tuple[str, int, PartitionState, int, tuple[int, ...]]] = []
        self.refused: list[tuple[str, int, PartitionState, int]] = []

    def apply_state(
        self, topic: str, partition: int, state: PartitionState, zk_version: int, assigned: tuple[int, ...]
    ) -> int:
        self.calls.append((topic, partition, state, zk_version, assigned))
        if state.controller_epoch < self.gate.epoch:
            self.refused.append((topic, partition, state, 11))
            return 11
        held = self.applied.get((topic, partition))
        if held is not None and stale_leader_epoch(state.leader_epoch, held.leader_epoch):
            self.refused.append((topic, partition, state, 74))
            return 74
        self.gate.admit(state.controller_epoch)
        self.applied[(topic, partition)] = state
        return 0

    def remove_partition(self, topic: str, partition: int) -> None:
        raise AssertionError(f"no reassignment in these tests ({topic}-{partition})")


class LoopThread:
    """An asyncio event loop running in a thread of its own."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()

    def run(self, coro: Coroutine[Any, Any, T], timeout: float = 15.0) -> T:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def call(self, fn: Any, *args: Any) -> Any:
        async def wrapper() -> Any:
            return fn(*args)

        return self.run(wrapper())

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)
        self.loop.close()


@dataclass
class Shell:
    """One broker's ZooKeeper shell with its loop, sink, cluster view and history."""

    broker_id: int
    zk: ZkRegistration
    loop: LoopThread
    sink: RecordingSink
    cluster: ClusterView
    history: RecordingHistory
    stopped: bool = False

    def stop(self) -> None:
        if not self.stopped:
            self.stopped = True
            self.zk.stop()
            self.loop.close()

    def applied(self, topic: str, partition: int) -> PartitionState | None:
        return self.loop.call(lambda: self.sink.applied.get((topic, partition)))


@dataclass
class Rig:
    """Shells under one chroot of a real ZooKeeper, and an admin client on that chroot."""

    connect: str
    admin: KazooClient
    replication: ReplicationConfig = field(default_factory=lambda: ReplicationConfig(enabled=True))
    offsets_partitions: int = 4
    shells: dict[int, Shell] = field(default_factory=dict)
    history: RecordingHistory = field(default_factory=lambda: RecordingHistory(stamp=True))

    def start(self, broker_id: int) -> Shell:
        cfg = BrokerConfig(
            broker_id=broker_id,
            zookeeper=self.connect,
            offsets_partitions=self.offsets_partitions,
            replication=self.replication,
        )
        loop = LoopThread()
        sink = RecordingSink()
        cluster = ClusterView(broker_id, self.offsets_partitions, replicated=True)
        # registration only writes this port into /brokers/ids; nothing listens on it
        zk = ZkRegistration(
            cfg, TopicStore(None), cluster, 20000 + broker_id, loop.loop, sink=sink, history=self.history
        )
        zk.start()
        shell = Shell(broker_id, zk, loop, sink, cluster, self.history)
        self.shells[broker_id] = shell
        return shell

    def controller(self, timeout: float = 15.0) -> Shell:
        """The shell that is controller now (waits for one)."""

        def find() -> Shell | None:
            holders = [
                s
                for s in self.shells.values()
                if not s.stopped and s.zk.controller and s.zk.controller.controller_epoch
            ]
            return holders[0] if len(holders) == 1 else None

        found = wait_until(find, timeout, what="exactly one controller")
        assert found is not None
        return found

    def state(self, topic: str, partition: int) -> tuple[PartitionState, int] | None:
        path = partition_state_path(topic, partition)
        if self.admin.exists(path) is None:
            return None
        data, stat = self.admin.get(path)
        return decode_partition_state(path, data), stat.version

    def wait_state(self, topic: str, partition: int, expected: PartitionState, timeout: float = 15.0) -> int:
        """Wait until the state znode holds ``expected``; return its zkVersion."""

        def check() -> int | None:
            got = self.state(topic, partition)
            return got[1] + 1 if got is not None and got[0] == expected else None

        version = wait_until(check, timeout, what=f"{topic}-{partition} state {expected}")
        assert version is not None
        return version - 1

    def stop(self) -> None:
        for shell in self.shells.values():
            shell.stop()
        self.admin.stop()
        self.admin.close()


def make_rig(connect_string: str, **kwargs: Any) -> Rig:
    """A rig under a fresh chroot of the ZooKeeper at ``connect_string``."""
    root = KazooClient(hosts=connect_string)
    root.start(timeout=15)
    chroot = f"/ctl-{time.time_ns()}-{next(_chroots)}"
    root.ensure_path(chroot)
    root.stop()
    root.close()
    admin = KazooClient(hosts=connect_string + chroot)
    admin.start(timeout=15)
    return Rig(connect=connect_string + chroot, admin=admin, **kwargs)


# ---------------------------------------------------------------------------------------------------- tests
