"""Every broker's view of the partition state znodes: the ClusterView, its sink, and its ISR writes.

DECIDED deviation from 0.9 (kio 0.6.5 has no LeaderAndIsr / UpdateMetadata schemas): instead of receiving
LeaderAndIsr and UpdateMetadata requests from the controller, every broker watches
``/brokers/topics/<t>`` (the assignment) and ``/brokers/topics/<t>/partitions/<p>/state`` of every partition of
every topic itself:

* every state read goes to :meth:`coordinator.cluster.ClusterView.set_partition_info` (what 0.9's
  ``MetadataCache`` learns from UpdateMetadata); the first states of a topic's partitions go in together once
  every assigned partition has one, as 0.9's controller sends them in one UpdateMetadata (:meth:`_publish`);
* a state of a partition this broker is *assigned* goes to the :class:`~coordinator.ports.PartitionStateSink`
  (what ``ReplicaManager.becomeLeaderOrFollower`` receives in LeaderAndIsr), with the zkVersion read and the
  replica list. A non-zero answer (the sink refused a stale controller or leader epoch) is logged and emitted as
  ``fenced`` (``what`` ``state``);
* both are called on the asyncio loop thread (``loop.call_soon_threadsafe``), in the order the reads finished;
  a read older than one already handled (a lower zkVersion of the same znode: two watch firings racing) is
  dropped;
* a state whose leader epoch equals the last one the sink accepted is *not* passed to the sink again: only the
  controller bumps the leader epoch, so such a state is the leader's own ISR write (0.9 sends no LeaderAndIsr
  for it either; the leader knows the zkVersion from :meth:`write_isr`). The ClusterView still gets it;
* after a new ZooKeeper session (a paused or cut-off broker coming back) :meth:`reread_all` reads every watched
  state again and applies what changed, so a deposed leader learns that it was deposed. (kazoo's watches also
  re-read on reconnection; the version check makes the two harmless together.)

:meth:`StateFollower.write_isr` is the :class:`~coordinator.ports.IsrWriter` port: the leader's conditional ISR
write, as 0.9 ``Partition.updateIsr`` via ``ReplicationUtils.updateLeaderAndIsr``: ``setData`` with the expected
zkVersion; on BadVersion the write still counts when the znode already holds exactly the state written
(:func:`coordinator.core.replication.state.update_leader_and_isr`); otherwise it lost (the leader was deposed). It
emits ``isr_change`` (``ok``, ``zk_version`` = the expected version) and, for a lost write, ``fenced`` (``what``
``isr_write``, ``error`` ``NOT_LEADER_OR_FOLLOWER``: what a deposed 0.9 leader answers from then on). The caller
(the replica manager) therefore does not emit these two itself, nor ``fenced`` what=``state`` (emitted here
from the sink's answer): each event is emitted by this one layer, so none is emitted twice. A write not
made because this broker is stopping (the executor shut, or the connection lost while stopping) answers a lost
result and emits nothing: it is neither an ISR change nor a fencing.

Not modelled: partition reassignment (``remove_partition`` is never called), topic deletion (a recreated state
znode restarts its zkVersion and would be dropped as old).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import logging
import threading
from typing import Any

from kazoo.client import KazooClient
from kazoo.exceptions import BadVersionError, ConnectionLoss, KazooException, NoNodeError
from kazoo.handlers.threading import KazooTimeoutError

from coordinator.cluster import ClusterView, PartitionInfo
from coordinator.core.replication.errors import MalformedState
from coordinator.core.replication.state import (
    ConditionalResult,
    PartitionState,
    decode_partition_state,
    encode_partition_state,
    partition_state_path,
    update_leader_and_isr,
)
from coordinator.ports import PartitionStateSink
from harness.kernel.history import History
from legacy_zk.paths import BROKER_TOPICS, MalformedZnode, decode_topic_replicas, topic_path

__all__ = ["StateFollower", "error_name"]

log = logging.getLogger("coordinator")

_ERROR_NAMES = {
    6: "NOT_LEADER_OR_FOLLOWER",
    11: "STALE_CONTROLLER_EPOCH",
    13: "STALE_LEADER_EPOCH",
    74: "FENCED_LEADER_EPOCH",
}


def error_name(code: int) -> str:
    """Kafka's name of error ``code`` as the ``fenced`` event spells it (13 is 0.9's STALE_LEADER_EPOCH)."""
    if code in _ERROR_NAMES:
        return _ERROR_NAMES[code]
    try:
        from kio.schema.errors import ErrorCode

        return ErrorCode(code).name.upper()
    except ValueError:
        return f"UNKNOWN({code})"


class StateFollower:
    """Watches every topic's assignment and partition states (see the module docstring)."""

    def __init__(
        self,
        client: KazooClient,
        broker_id: int,
        cluster: ClusterView,
        sink: PartitionStateSink | None,
        loop: asyncio.AbstractEventLoop,
        history: History,
    ) -> None:
        self.client = client
        self.broker_id = broker_id
        self.cluster = cluster
        self.sink = sink
        self.loop = loop
        self.history = history
        self._stopping = False
        self._lock = threading.Lock()
        self._topics: set[str] = set()
        #: (topic, partition) -> assigned replicas, for every state znode watched (kazoo threads, under the lock)
        self._assigned: dict[tuple[str, int], tuple[int, ...]] = {}
        # loop thread only:
        self._seen_version: dict[tuple[str, int], int] = {}
        #: topic -> partition -> state read but not yet in the ClusterView (:meth:`_publish`; loop thread)
        self._unpublished: dict[str, dict[int, PartitionInfo]] = {}
        self._applied_epoch: dict[tuple[str, int], int] = {}
        self._isr_writes = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="zk-isr")

    def start(self) -> None:
        self.client.ChildrenWatch(BROKER_TOPICS, self._on_topics)

    def stop(self) -> None:
        """Stop delivering states and taking ISR writes (without waiting for one under way: see :meth:`join`)."""
        self._stopping = True
        self._isr_writes.shutdown(wait=False)

    def join(self) -> None:
        """Wait for an ISR write under way (after the session was closed, which fails it)."""
        self._isr_writes.shutdown(wait=True)

    def _emit(self, kind: str, **fields: Any) -> None:
        self.history.emit(kind, impl="coordinator", broker_id=self.broker_id, **fields)

    # ------------------------------------------------------------------ watches (kazoo threads)

    def _on_topics(self, children: list[str]) -> bool:
        if self._stopping:
            return False
        for name in children:
            with self._lock:
                if name in self._topics:
                    continue
                self._topics.add(name)
            self.client.DataWatch(topic_path(name), self._assignment_watcher(name))
        return True

    def _assignment_watcher(self, name: str) -> Any:
        def on_assignment(data: bytes | None, *_stat_event: Any) -> bool:
            if self._stopping:
                return False
            if data is None:
                with self._lock:
                    self._topics.discard(name)
                return False
            try:
                parts = decode_topic_replicas(topic_path(name), data)
            except MalformedZnode as e:
                log.warning("unreadable %s", e)
                return True
            new: list[int] = []
            with self._lock:  # the whole assignment first: a state delivered meanwhile sees every partition
                for p, replicas in sorted(parts.items()):
                    if (name, p) not in self._assigned:
                        new.append(p)
                    self._assigned[(name, p)] = tuple(replicas)
            for p in new:
                self.client.DataWatch(partition_state_path(name, p), self._state_watcher(name, p))
            return True

        return on_assignment

    def _state_watcher(self, topic: str, partition: int) -> Any:
        def on_state(data: bytes | None, stat: Any, *_event: Any) -> bool:
            if self._stopping:
                return False
            if data is not None and stat is not None:
                self._handle(topic, partition, data, stat.version)
            return True

        return on_state

    def _handle(self, topic: str, partition: int, data: bytes, version: int) -> None:
        path = partition_state_path(topic, partition)
        try:
            state = decode_partition_state(path, data)
        except MalformedState as e:
            log.warning("%s", e)
            return
        with self._lock:
            assigned = self._assigned.get((topic, partition), ())
        with contextlib.suppress(RuntimeError):  # the loop is closed: the broker is shutting down
            self.loop.call_soon_threadsafe(self._deliver, topic, partition, state, version, assigned)

    def reread_all(self) -> None:
        """Read every watched state again and apply what changed (blocking; after a new session)."""
        with self._lock:
            keys = sorted(self._assigned)
        for topic, p in keys:
            if self._stopping:
                return
            try:
                data, stat = self.client.get(partition_state_path(topic, p))
            except NoNodeError:
                continue
            self._handle(topic, p, data, stat.version)

    # ------------------------------------------------------------------ delivery (loop thread)

    def _deliver(
        self, topic: str, partition: int, state: PartitionState, version: int, assigned: tuple[int, ...]
    ) -> None:
        key = (topic, partition)
        if version <= self._seen_version.get(key, -1):
            return  # an older read of the same znode
        self._seen_version[key] = version
        self._publish(topic, partition, PartitionInfo(state.leader, state.leader_epoch, assigned, state.isr))
        if self.sink is None or self.broker_id not in assigned:
            return
        if self._applied_epoch.get(key) == state.leader_epoch:
            return  # the leader's own ISR write: nothing for the sink
        code = self.sink.apply_state(topic, partition, state, version, assigned)
        if code == 0:
            self._applied_epoch[key] = state.leader_epoch
            return
        name = error_name(code)
        log.warning(
            "broker %d refused the state of %s-%d (leader %d, leader epoch %d, controller epoch %d): %s",
            self.broker_id,
            topic,
            partition,
            state.leader,
            state.leader_epoch,
            state.controller_epoch,
            name,
        )
        self._emit("fenced", what="state", error=name, topic=topic, partition=partition)

    def _publish(self, topic: str, partition: int, info: PartitionInfo) -> None:
        """Give the ClusterView (0.9's ``MetadataCache``) a partition's state. A partition it has already is
        updated at once; the first states of a topic's partitions (a new topic, added partitions) wait until
        every assigned partition of the topic has one and then go in together, as 0.9's controller sends a new
        topic's (or new partitions') states to every broker in one UpdateMetadata
        (``onNewPartitionCreation``): a client's Metadata never shows a topic with part of its partitions.
        Loop thread only."""
        if self.cluster.partition_info(topic, partition) is not None:
            self.cluster.set_partition_info(topic, partition, info)
            return
        pending = self._unpublished.setdefault(topic, {})
        pending[partition] = info
        with self._lock:
            assigned = [p for (t, p) in self._assigned if t == topic]
        if all(p in pending or self.cluster.partition_info(topic, p) is not None for p in assigned):
            for p, i in sorted(self._unpublished.pop(topic).items()):
                self.cluster.set_partition_info(topic, p, i)

    # ------------------------------------------------------------------ IsrWriter

    async def write_isr(
        self, topic: str, partition: int, state: PartitionState, expected_zk_version: int
    ) -> ConditionalResult:
        """The :class:`~coordinator.ports.IsrWriter` port (see the module docstring); awaited on the loop."""
        loop = asyncio.get_running_loop()
        try:
            result = await loop.run_in_executor(
                self._isr_writes, self._write_isr_blocking, topic, partition, state, expected_zk_version
            )
        except RuntimeError:  # stopped: the broker is shutting down; not a fencing
            log.info("ISR write of %s-%d not made: shutting down", topic, partition)
            return ConditionalResult(False, -1)
        except (KazooException, KazooTimeoutError) as e:
            if self._stopping:  # the write was cut by this broker's own stop: no fencing, no event
                log.info("ISR write of %s-%d not made: shutting down (%r)", topic, partition, e)
                return ConditionalResult(False, -1)
            # the session expired (or closed) before the write: this broker's leadership is gone with it
            log.warning("ISR write of %s-%d failed: %r", topic, partition, e)
            result = ConditionalResult(False, -1)
        self._emit(
            "isr_change",
            topic=topic,
            partition=partition,
            isr=list(state.isr),
            leader_epoch=state.leader_epoch,
            zk_version=expected_zk_version,
            ok=result.succeeded,
        )
        if not result.succeeded:
            self._emit("fenced", what="isr_write", error=error_name(6), topic=topic, partition=partition)
        return result

    def _write_isr_blocking(
        self, topic: str, partition: int, state: PartitionState, expected: int
    ) -> ConditionalResult:
        path = partition_state_path(topic, partition)
        while True:
            try:
                stat = self.client.set(path, encode_partition_state(state), version=expected)
                return ConditionalResult(True, stat.version)
            except BadVersionError:
                break
            except NoNodeError:
                return ConditionalResult(False, -1)
            except ConnectionLoss:
                # ZkClient's retryUntilConnected: kazoo queues the retry until the connection is back; a first
                # write that had landed shows as BadVersion with our own data, which the checker accepts
                if self._stopping:
                    raise
        while True:
            try:
                data, stat = self.client.get(path)
                current = decode_partition_state(path, data)
                break
            except (NoNodeError, MalformedState):
                return ConditionalResult(False, -1)
            except ConnectionLoss:
                if self._stopping:
                    raise
        return update_leader_and_isr(current, stat.version, state, expected)
