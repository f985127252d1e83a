"""ZooKeeper-era registration (spec 1.4): the broker and its topics in the 0.8 layout, via kazoo.

Contract
--------
* :meth:`ZkRegistration.start` (blocking; the broker runs it in a thread) connects, creates the
  common persistent paths (``/brokers/ids``, ``/brokers/topics``, ``/consumers``, as Kafka's
  ``setupCommonPaths``), writes ``/brokers/topics/<t>`` for every local topic and registers
  ``/brokers/ids/<id>`` as an **ephemeral** node with the 0.10-style version 4 JSON, which also
  carries the 0.8 fields::

      {"version":4,"host":"127.0.0.1","port":9092,"jmx_port":-1,"timestamp":"<ms>",
       "endpoints":["PLAINTEXT://127.0.0.1:9092"],"listener_security_protocol_map":{"PLAINTEXT":"PLAINTEXT"}}

  If the id is still registered by an earlier session of a killed broker, it waits (up to twice the
  session timeout) for that ephemeral node to expire, as Kafka does, then raises
  :class:`harness.kernel.errors.Unreachable`.
* ``/brokers/topics/<t>`` is ``{"version":1,"partitions":{"0":[<id>],...}}`` (partition -> replica
  list; this broker is the only replica) and is rewritten whenever the topic gains partitions, so
  0.8 consumers watching it see the change. Writes happen on one ZooKeeper thread, in order.
* After a session expiry the broker re-registers on the new session (0.8 ``handleNewSession``). A
  re-registration that fails on a lost connection or an expired session is retried every
  :data:`REREGISTER_RETRY_S` until it succeeds or the broker stops (0.9.0.1 ``KafkaHealthcheck
  .SessionExpireListener.handleNewSession`` calls ``register()`` through ZkClient, whose ``retryUntilConnected``
  retries every request until connected).
* Peers: ``/brokers/ids`` is watched; the other brokers' addresses go to the
  :class:`~coordinator.cluster.ClusterView` (FindCoordinator and Metadata use them). Topics other
  brokers registered are watched too (Metadata lists them with their leader).
* :meth:`stop` closes the session, which removes the ephemeral registration at once. It returns also while
  ZooKeeper is unreachable: the ZooKeeper thread is not waited for before the session is closed (closing it fails
  the request that thread waits on), only after; queued writes still land first while connected.

Replicated mode (``config.replication.enabled``; everything above stays as it is without it):

* the broker registers as above, then runs for controller (:class:`coordinator.zookeeper.controller.Controller`: the 0.9
  ``/controller`` + ``/controller_epoch`` election and, while it holds it, the controller's partition state
  writes), and follows every partition state znode (:class:`coordinator.zookeeper.states.StateFollower`: the
  ClusterView's ``set_partition_info`` for every topic, ``sink.apply_state`` for the partitions assigned to it,
  :meth:`write_isr` for the leader's ISR writes);
* topics are created with a replica assignment over the live brokers (:meth:`create_topic`,
  :meth:`ensure_offsets_topic`; the controller then writes their states). The local store's topics are *not*
  written to ZooKeeper as single-replica topics (no ``topic_payload`` writes, no store listener), and
  :meth:`claim_topic` creates the topic with the default replication factor;
* on session loss the controller resigns; on the new session the broker registers again, runs for controller
  again (the ``/controller`` watch re-reads it) and re-reads every partition state (:meth:`StateFollower.reread_all`).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import logging
import threading
import time
from typing import Any

from kazoo.client import KazooClient, KazooState
from kazoo.exceptions import BadVersionError, KazooException, NodeExistsError, NoNodeError
from kazoo.handlers.threading import KazooTimeoutError
from kazoo.retry import KazooRetry

from coordinator.cluster import ClusterView, Node
from coordinator.config import BrokerConfig
from coordinator.core.replication.assignment import assign_replicas
from coordinator.core.replication.errors import InvalidReplicationFactor
from coordinator.core.replication.state import ConditionalResult, PartitionState
from coordinator.ports import OFFSETS_TOPIC, PartitionStateSink
from coordinator.topics import Topic, TopicExists, TopicStore
from coordinator.zookeeper.controller import Controller
from coordinator.zookeeper.states import StateFollower
from harness.kernel.errors import Unreachable
from harness.kernel.history import History, NullHistory
from legacy_zk.paths import (
    BROKER_IDS,
    BROKER_TOPICS,
    MalformedZnode,
    broker_path,
    decode_broker,
    decode_topic_replicas,
    encode_broker_v4,
    encode_topic,
    topic_path,
)

__all__ = ["ZkRegistration", "topic_payload"]

log = logging.getLogger("coordinator")

COMMON_PATHS = (BROKER_IDS, BROKER_TOPICS, "/consumers", "/config/topics", "/admin")
SESSION_TIMEOUT_S = 6.0  # Kafka 0.8's zookeeper.session.timeout.ms
#: Back-off between attempts to register again after a session expiry when ZooKeeper fails the attempt.
REREGISTER_RETRY_S = 0.5
#: The longest wait between two attempts to reach ZooKeeper again after the connection was lost. Kafka's
#: broker uses ZooKeeper's Java client, which waits a random time below a second before each attempt but
#: the first (``ClientCnxn.SendThread.startConnect``) and a second after a round of every server
#: (``StaticHostProvider``'s spin delay); kazoo's default doubles its wait up to an hour, so a broker
#: cut from ZooKeeper for a minute would come back minutes after the heal.
RECONNECT_MAX_DELAY_S = 1.0

_ZK_ERRORS = (KazooException, KazooTimeoutError)


def topic_payload(partitions: int, broker_id: int) -> bytes:
    """The ``/brokers/topics/<t>`` payload of a local topic: this broker is every partition's only replica."""
    return encode_topic({p: [broker_id] for p in range(partitions)})


class ZkRegistration:
    """One broker's presence in ZooKeeper (see the module docstring)."""

    def __init__(
        self,
        config: BrokerConfig,
        store: TopicStore,
        cluster: ClusterView,
        port: int,
        loop: asyncio.AbstractEventLoop,
        *,
        sink: PartitionStateSink | None = None,
        history: History | None = None,
    ) -> None:
        assert config.zookeeper
        self.config = config
        self.store = store
        self.cluster = cluster
        self.port = port
        self.loop = loop
        self.host = config.advertised_host or config.host
        self.path = broker_path(config.broker_id)
        self.client = KazooClient(
            hosts=config.zookeeper,
            timeout=SESSION_TIMEOUT_S,
            connection_retry=KazooRetry(max_tries=-1, max_delay=RECONNECT_MAX_DELAY_S),
        )
        self._writer = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="zk-writer")
        self._stopping = False
        self._stopped = threading.Event()  # set by stop(): ends the re-registration's back-off at once
        self._session_lost = False
        self._remote_topics: dict[str, dict[int, list[int]]] = {}
        self._topic_watches: set[str] = set()
        self._lock = threading.Lock()
        self.replicated = config.replication.enabled
        self.history: History = history if history is not None else NullHistory()
        self.controller: Controller | None = None
        self.states: StateFollower | None = None
        if self.replicated:
            self.controller = Controller(self.client, config.broker_id, config.replication, self.history)
            self.states = StateFollower(self.client, config.broker_id, cluster, sink, loop, self.history)
            cluster.on_missing_offsets_topic = self._request_offsets_topic

    # ------------------------------------------------------------------ life cycle

    def start(self) -> None:
        try:
            self.client.start(timeout=15)
        except KazooTimeoutError:
            self.client.close()
            raise Unreachable(f"ZooKeeper at {self.config.zookeeper} not reachable") from None
        try:
            self.client.add_listener(self._on_state)
            for path in COMMON_PATHS:
                self.client.ensure_path(path)
            if not self.replicated:
                for topic in self.store:
                    self._write_topic(topic.name, len(topic.partitions))
            self._register()
            if not self.replicated:
                self.store.listeners.append(self._on_topic_change)
            self.client.ChildrenWatch(BROKER_IDS, self._on_brokers)
            self.client.ChildrenWatch(BROKER_TOPICS, self._on_topics)
            if self.states is not None and self.controller is not None:
                self.states.start()
                self.controller.start()
        except BaseException:
            self.stop()
            raise

    def stop(self) -> None:
        """Close the session and wait for the ZooKeeper threads; bounded also while ZooKeeper is unreachable (a
        request waiting for a connection fails when the session is closed, so the threads are joined only
        after that; queued writes land first only while connected: :meth:`_drain_writer`)."""
        self._stopping = True
        self._stopped.set()
        if self._on_topic_change in self.store.listeners:
            self.store.listeners.remove(self._on_topic_change)
        if self.controller is not None and self.states is not None:
            self.controller.stop()  # neither waits: closing the session below fails their pending requests
            self.states.stop()
        self._drain_writer()
        try:
            self.client.stop()
        finally:
            self.client.close()
            self._writer.shutdown(wait=True)
            if self.controller is not None and self.states is not None:
                self.controller.join()
                self.states.join()
        log.info("closed the ZooKeeper session of broker %d", self.config.broker_id)

    def _drain_writer(self) -> None:
        """Let the writes queued on the ZooKeeper thread land before the session closes, but only
        while connected and for at most :data:`SESSION_TIMEOUT_S`: a request waiting on an
        unreachable ZooKeeper fails when :meth:`stop` then closes the session."""
        try:
            drained = self._writer.submit(lambda: None)
        except RuntimeError:  # shut down already (stop called twice)
            return
        self._writer.shutdown(wait=False)
        deadline = time.monotonic() + SESSION_TIMEOUT_S
        while self.client.connected and time.monotonic() < deadline:
            with contextlib.suppress(concurrent.futures.TimeoutError):
                drained.result(timeout=0.1)
                return

    # ------------------------------------------------------------------ registration

    def _register(self) -> None:
        data = encode_broker_v4(self.host, self.port, int(time.time() * 1000))
        deadline = time.monotonic() + 2 * SESSION_TIMEOUT_S + 2
        while True:
            try:
                self.client.create(self.path, data, ephemeral=True, makepath=True)
                log.info("registered %s in ZooKeeper: %s", self.path, data.decode())
                return
            except NodeExistsError:
                try:
                    _, stat = self.client.get(self.path)
                except NoNodeError:
                    continue
                session = self.client.client_id
                if session is not None and stat.ephemeralOwner == session[0]:
                    return  # ours already (a retried create after a connection loss)
                if time.monotonic() > deadline:
                    raise Unreachable(
                        f"{self.path} is held by another live session: is another broker using id "
                        f"{self.config.broker_id}?"
                    ) from None
                log.info("%s still held by an earlier session; waiting for it to expire", self.path)
                self._wait_for_deletion(min(1.0, max(0.0, deadline - time.monotonic())))

    def _wait_for_deletion(self, timeout: float) -> None:
        gone = threading.Event()
        if self.client.exists(self.path, watch=lambda _event: gone.set()) is not None:
            gone.wait(timeout)

    def _on_state(self, state: str) -> None:
        if state == KazooState.LOST:
            self._session_lost = True
            log.warning("ZooKeeper session of broker %d lost", self.config.broker_id)
            if self.controller is not None:
                self.controller.session_lost()
        elif state == KazooState.CONNECTED and self._session_lost and not self._stopping:
            self._session_lost = False
            # Not on the event thread: registration may block.
            self._writer.submit(self._reregister)

    def _reregister(self) -> None:
        """Register again on the new session (ZooKeeper thread), retried while ZooKeeper fails it (see the module
        docstring); another live session holding the id (:class:`Unreachable`) ends it with an error logged."""
        attempt = 0
        while not self._stopping:
            attempt += 1
            try:
                self._register()
                if self.states is not None:
                    self.states.reread_all()
                    return
                for topic in self.store:
                    self._write_topic(topic.name, len(topic.partitions))
                return
            except _ZK_ERRORS as e:
                log.warning(
                    "re-registration of broker %d failed (attempt %d): %r; retrying",
                    self.config.broker_id,
                    attempt,
                    e,
                )
                self._stopped.wait(REREGISTER_RETRY_S)
            except Exception:
                log.exception(
                    "re-registration of broker %d after session expiry failed", self.config.broker_id
                )
                return

    # ------------------------------------------------------------------ topics

    def _on_topic_change(self, topic: Topic) -> None:
        """Store listener (event loop thread): queue the znode write for the ZooKeeper thread."""
        if not self._stopping:
            self._writer.submit(self._write_topic_logged, topic.name, len(topic.partitions))

    def _write_topic_logged(self, name: str, partitions: int) -> None:
        try:
            self._write_topic(name, partitions)
        except Exception:
            log.exception("writing %s/%s failed", BROKER_TOPICS, name)

    def _write_topic(self, name: str, partitions: int) -> None:
        path = topic_path(name)
        data = topic_payload(partitions, self.config.broker_id)
        try:
            self.client.create(path, data, makepath=True)
        except NodeExistsError:
            current, _ = self.client.get(path)
            if current != data:
                self.client.set(path, data)
        log.info("wrote %s: %s", path, data.decode())

    def _remember_remote(self, name: str, data: bytes) -> None:
        """Record topic ``name`` as led elsewhere, unless this broker leads it (caller holds the lock)."""
        try:
            parts = decode_topic_replicas(topic_path(name), data)
        except MalformedZnode as e:
            log.warning("unreadable %s", e)
            return
        if parts and all(rs[:1] == [self.config.broker_id] for rs in parts.values()):
            self._remote_topics.pop(name, None)  # ours (the local store has it, or will)
        else:
            self._remote_topics[name] = parts

    def claim_topic(self, name: str, partitions: int) -> bool:
        """Register a topic this broker is about to create (event loop thread; a ZooKeeper round
        trip or two). False if a live broker registered it first; it is then known as remote at
        once. A topic registered by a broker that is not live (a leftover of an earlier run) is
        adopted: its records went with that broker. Replicated: :meth:`create_topic` with the default
        replication factor (False when the topic exists; :class:`InvalidReplicationFactor` propagates)."""
        if self.replicated:
            try:
                self.create_topic(name, partitions, None)
            except TopicExists:
                return False
            return True
        path = topic_path(name)
        data = topic_payload(partitions, self.config.broker_id)
        try:
            self.client.create(path, data, makepath=True)
            return True
        except NodeExistsError:
            current, stat = self.client.get(path)
        leaders = self._leaders(name, current)
        if leaders and not any(self.client.exists(broker_path(b)) for b in leaders - {self.config.broker_id}):
            try:
                self.client.set(path, data, version=stat.version)
                log.info("adopted %s (its leader %s is not live)", path, sorted(leaders))
                return True
            except BadVersionError:
                current, _ = self.client.get(path)  # someone else just took it
        data = current
        with self._lock:
            self._remember_remote(name, data)
            remote = name in self._remote_topics
            snapshot = dict(self._remote_topics)
        self.cluster.set_remote_topics(snapshot)
        return not remote

    @staticmethod
    def _leaders(name: str, data: bytes) -> set[int]:
        try:
            return {rs[0] for rs in decode_topic_replicas(topic_path(name), data).values() if rs}
        except MalformedZnode:
            return set()

    def knows_topic(self, name: str) -> bool:
        with self._lock:
            return name in self._remote_topics

    # ------------------------------------------------------------------ watches

    def _on_brokers(self, children: list[str]) -> bool:
        if self._stopping:
            return False
        peers: dict[int, Node] = {}
        for child in children:
            try:
                broker_id = int(child)
            except ValueError:
                continue
            if broker_id == self.config.broker_id:
                continue
            try:
                data, _ = self.client.get(broker_path(child))
            except NoNodeError:
                continue
            try:
                host, port = decode_broker(broker_path(child), data)
            except MalformedZnode as e:
                log.warning("skipping peer: %s", e)
                continue
            peers[broker_id] = Node(broker_id, host, port)
        self.loop.call_soon_threadsafe(self.cluster.set_peers, peers)
        return True

    def _on_topics(self, children: list[str]) -> bool:
        if self._stopping:
            return False
        for name in children:
            if name not in self._topic_watches:
                self._topic_watches.add(name)
                self.client.DataWatch(topic_path(name), self._topic_watcher(name))
        return True

    def _topic_watcher(self, name: str) -> Any:
        def on_data(data: bytes | None, _stat: Any) -> bool:
            if self._stopping:
                return False
            with self._lock:
                if data is None:
                    self._remote_topics.pop(name, None)
                    self._topic_watches.discard(name)
                else:
                    self._remember_remote(name, data)
                snapshot = dict(self._remote_topics)
            self.loop.call_soon_threadsafe(self.cluster.set_remote_topics, snapshot)
            return data is not None

        return on_data

    # ------------------------------------------------------------------ replicated mode

    def live_brokers(self) -> list[int]:
        """The registered broker ids, ascending (0.9 ``ZkUtils.getSortedBrokerList``; blocking)."""
        return sorted(int(c) for c in self.client.get_children(BROKER_IDS) if c.isdigit())

    def create_topic(self, name: str, partitions: int, replication_factor: int | None) -> None:
        """Write ``/brokers/topics/<name>`` with a 0.9 assignment over the live brokers (blocking; the broker
        calls it in an executor); the controller then writes the partition states.

        ``replication_factor`` None: ``replication.default_replication_factor``, or min(3, live brokers) when
        that is None. Raises :class:`~coordinator.topics.TopicExists` when the znode exists and
        :class:`~coordinator.core.replication.errors.InvalidReplicationFactor` when the factor exceeds the live brokers.
        """
        live = self.live_brokers()
        if replication_factor is None:
            default = self.config.replication.default_replication_factor
            replication_factor = default if default is not None else min(3, len(live))
        if not live:
            raise InvalidReplicationFactor(f"no live brokers to place {name} on")
        assignment = assign_replicas(live, partitions, replication_factor)
        data = encode_topic({p: list(rs) for p, rs in assignment.items()})
        try:
            self.client.create(topic_path(name), data, makepath=True)
        except NodeExistsError:
            raise TopicExists(f"topic {name!r} already exists") from None
        log.info("created %s: %s", topic_path(name), data.decode())

    def ensure_offsets_topic(self) -> None:
        """Create ``__consumer_offsets`` unless it exists: ``offsets_partitions`` partitions, replication factor
        min(``offsets.topic.replication.factor``, live brokers) (0.9 ``GroupCoordinator`` / ``KafkaApis
        .createTopic`` rule). Blocking."""
        if self.client.exists(topic_path(OFFSETS_TOPIC)) is not None:
            return
        live = self.live_brokers()
        factor = min(self.config.replication.offsets_topic_replication_factor, len(live))
        with contextlib.suppress(TopicExists):
            self.create_topic(OFFSETS_TOPIC, self.config.offsets_partitions, max(1, factor))

    def _request_offsets_topic(self) -> None:
        """ClusterView hook (event loop thread): create the offsets topic on the ZooKeeper thread; a failure
        re-arms the hook so the next FindCoordinator tries again."""

        def run() -> None:
            try:
                self.ensure_offsets_topic()
            except Exception:
                log.exception("creating %s failed", OFFSETS_TOPIC)
                self.loop.call_soon_threadsafe(setattr, self.cluster, "offsets_topic_requested", False)

        if not self._stopping:
            self._writer.submit(run)

    async def write_isr(
        self, topic: str, partition: int, state: PartitionState, expected_zk_version: int
    ) -> ConditionalResult:
        """The :class:`~coordinator.ports.IsrWriter` port (replicated mode only; see
        :meth:`coordinator.zookeeper.states.StateFollower.write_isr`)."""
        if self.states is None:
            raise RuntimeError("write_isr needs replication enabled")
        return await self.states.write_isr(topic, partition, state, expected_zk_version)
