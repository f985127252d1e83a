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
* After a session expiry the broker re-registers on the new session (0.8 ``handleNewSession``).
* Peers: ``/brokers/ids`` is watched; the other brokers' addresses go to the
  :class:`~coordinator.cluster.ClusterView` (FindCoordinator and Metadata use them). Topics other
  brokers registered are watched too (Metadata lists them with their leader).
* :meth:`stop` closes the session, which removes the ephemeral registration at once.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import threading
import time
from typing import Any

from kazoo.client import KazooClient, KazooState
from kazoo.exceptions import BadVersionError, NodeExistsError, NoNodeError
from kazoo.handlers.threading import KazooTimeoutError

from coordinator.cluster import ClusterView, Node
from coordinator.config import BrokerConfig
from coordinator.topics import Topic, TopicStore
from harness.kernel.errors import Unreachable
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
    ) -> None:
        assert config.zookeeper
        self.config = config
        self.store = store
        self.cluster = cluster
        self.port = port
        self.loop = loop
        self.host = config.advertised_host or config.host
        self.path = broker_path(config.broker_id)
        self.client = KazooClient(hosts=config.zookeeper, timeout=SESSION_TIMEOUT_S)
        self._writer = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="zk-writer")
        self._stopping = False
        self._session_lost = False
        self._remote_topics: dict[str, dict[int, list[int]]] = {}
        self._topic_watches: set[str] = set()
        self._lock = threading.Lock()

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
            for topic in self.store:
                self._write_topic(topic.name, len(topic.partitions))
            self._register()
            self.store.listeners.append(self._on_topic_change)
            self.client.ChildrenWatch(BROKER_IDS, self._on_brokers)
            self.client.ChildrenWatch(BROKER_TOPICS, self._on_topics)
        except BaseException:
            self.stop()
            raise

    def stop(self) -> None:
        self._stopping = True
        if self._on_topic_change in self.store.listeners:
            self.store.listeners.remove(self._on_topic_change)
        self._writer.shutdown(wait=True)
        try:
            self.client.stop()
        finally:
            self.client.close()
        log.info("closed the ZooKeeper session of broker %d", self.config.broker_id)

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
        elif state == KazooState.CONNECTED and self._session_lost and not self._stopping:
            self._session_lost = False
            # Not on the event thread: registration may block.
            self._writer.submit(self._reregister)

    def _reregister(self) -> None:
        try:
            self._register()
            for topic in self.store:
                self._write_topic(topic.name, len(topic.partitions))
        except Exception:
            log.exception("re-registration of broker %d after session expiry failed", self.config.broker_id)

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
        adopted: its records went with that broker."""
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
