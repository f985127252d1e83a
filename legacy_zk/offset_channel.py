"""The offsets channel of a member with ``offsets.storage=kafka``: OffsetCommit / OffsetFetch to the
group's offset manager, through kafka-python's own protocol classes and network client.

Contract
--------
:class:`KafkaOffsetChannel` implements :class:`legacy_zk.offsets.OffsetManagerPort`:

* before each request it makes sure a channel to the offset manager exists (0.8.2.2's
  ``ensureOffsetManagerConnected`` / ``ClientUtils.channelToOffsetManager``): a kafka-python
  ``KafkaNetClient`` bootstrapped from ``bootstrap.servers`` or, when none is given, the brokers
  registered under ``/brokers/ids`` (as ``channelToAnyBroker``), then FindCoordinator for the group
  against a broker, retried every ``offsets.channel.backoff.ms`` until found. Each failure is logged
  as one line naming the member, the group and the brokers. :meth:`KafkaOffsetChannel.connect` is
  that lookup on its own (the member calls it before registering, as 0.8.2.2's constructor did);
* shutdown: a lookup (or a fetch) that is running when the member starts shutting down ends with
  :class:`legacy_zk.offsets.OffsetChannelClosed`; a *commit* made while shutting down (the shutdown
  commit, which 0.8.2.2 retries) still locates the manager, for at most
  ``offsets.channel.socket.timeout.ms`` per commit attempt, then raises ``OffsetChannelClosed``;
* wire versions: the lowest that both the broker (its ApiVersions) and Kafka 4 accept: OffsetCommit
  >= 2, OffsetFetch >= 1, FindCoordinator >= 0; commits are "simple" commits (generation -1, empty
  member id, retention -1, metadata "" as 0.8.2's ``NoMetadata``);
* :meth:`KafkaOffsetChannel.commit` returns the error name of each partition the response names
  (a partition the broker left out is left out, as 0.8.2.2's fold skips it), :meth:`fetch` the offset
  and error name of each partition the response names (a top-level error of OffsetFetch v2+ applies
  to every partition asked); an error code kafka-python does not know is named ``UNKNOWN(<code>)``;
  a transport failure raises (the caller disconnects and treats it as 0.8.2 treated an exception);
  :meth:`disconnect` closes the client (the next request locates the manager anew).

Requests are serialised by a lock (0.8.2's ``offsetsChannelLock``); each waits at most
``offsets.channel.socket.timeout.ms``.

Deviations from 0.8.2.2 and why
-------------------------------
* ``bootstrap.servers``, when given, is asked before ``/brokers/ids`` (the harness's brokers are not
  all registered in ZooKeeper; 0.8.2.2 had only ZooKeeper's list);
* a lookup waits ``offsets.channel.backoff.ms`` after every failure; 0.8.2.2 slept only after an
  error code and retried at once after an ``IOException`` (a busy loop against a dead broker), and
  one failure is one log line either way;
* one lookup try (connect, ApiVersions, FindCoordinator) waits at most
  ``offsets.channel.socket.timeout.ms`` (0.8.2.2's connect had no timeout of its own);
* a member shutting down ends a lookup at once, and a shutdown commit's lookup after
  ``offsets.channel.socket.timeout.ms``: 0.8.2.2's ``channelToAnyBroker`` looped for ever with the
  brokers down, so its shutdown could hang;
* the wire versions above (0.8.2's OffsetCommit v1 / OffsetFetch v1 / ConsumerMetadata v0 are gone
  from Kafka 4 and from our broker).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from legacy_zk.ids import TopicPartition
from legacy_zk.offsets import OffsetChannelClosed

log = logging.getLogger("legacy_zk")

#: the lowest versions Kafka 4 still accepts (KIP-896); the broker's own minimum may be higher
MIN_OFFSET_COMMIT = 2
MIN_OFFSET_FETCH = 1
MIN_FIND_COORDINATOR = 0


def error_name(code: int) -> str:
    """Kafka's name of an error code (``NONE`` for 0)."""
    import kafka.errors as errors

    if code == 0:
        return "NONE"
    if code == -1:
        return "UNKNOWN_SERVER_ERROR"  # Kafka's name (kafka-python's is UNKNOWN)
    known: Mapping[int, Any] = errors.kafka_errors
    if code not in known:
        return f"UNKNOWN({code})"  # keep the number: kafka-python would call it UNKNOWN_SERVER_ERROR
    return str(getattr(known[code], "message", f"UNKNOWN({code})"))


class KafkaOffsetChannel:
    """OffsetCommit / OffsetFetch of one member to its group's offset manager (module contract)."""

    def __init__(
        self,
        *,
        group: str,
        bootstrap: Callable[[], str | None],
        client_id: str,
        socket_timeout_ms: int,
        backoff_ms: int,
        stopping: Callable[[], bool],
        wait: Callable[[float], bool],
        tag: Callable[[], str],
        sleep: Callable[[float], Any] = time.sleep,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        """``stopping``: True once the member shuts down; ``wait(s)``: sleep, True when shutdown ended it;
        ``sleep``: a plain sleep (the shutdown commit's lookup backs off with it); ``clock``: seconds."""
        self.group = group
        self._bootstrap = bootstrap
        self._client_id = client_id
        self._timeout_ms = socket_timeout_ms
        self._backoff_s = backoff_ms / 1000.0
        self._stopping = stopping
        self._wait = wait
        self._tag = tag
        self._sleep = sleep
        self._clock = clock
        self._lock = threading.RLock()
        self._client: Any = None
        self._coordinator: Any = None
        #: offset-manager lookups that failed (tests and logs)
        self.failures = 0

    # -- OffsetManagerPort ----------------------------------------------------------------------
    def commit(self, offsets: Mapping[TopicPartition, int]) -> dict[TopicPartition, str]:
        """One OffsetCommit of ``offsets`` (next offsets to read): error name per partition."""
        from kafka.protocol.consumer import OffsetCommitRequest

        topic_cls = OffsetCommitRequest.OffsetCommitRequestTopic
        part_cls = topic_cls.OffsetCommitRequestPartition
        by_topic: dict[str, list[Any]] = {}
        for tp, off in sorted(offsets.items()):
            by_topic.setdefault(tp.topic, []).append(
                part_cls(partition_index=tp.partition, committed_offset=off, committed_metadata="")
            )
        with self._lock:
            client, node = self._ensure_connected(at_shutdown=True)
            version = self._version(client, OffsetCommitRequest, MIN_OFFSET_COMMIT)
            request = OffsetCommitRequest[version](
                group_id=self.group,
                generation_id_or_member_epoch=-1,
                member_id="",
                retention_time_ms=-1,
                topics=[topic_cls(name=t, partitions=ps) for t, ps in by_topic.items()],
            )
            response = client.send_and_receive(node, request, timeout_ms=self._timeout_ms)
        out: dict[TopicPartition, str] = {}
        for t in response.topics:
            for p in t.partitions:
                out[TopicPartition(t.name, p.partition_index)] = error_name(p.error_code)
        return out  # a partition not answered is not in it (0.8.2.2 folds only the ones answered)

    def fetch(self, partitions: Sequence[TopicPartition]) -> dict[TopicPartition, tuple[int, str]]:
        """One OffsetFetch: (committed offset or -1, error name) per partition."""
        from kafka.protocol.consumer import OffsetFetchRequest

        topic_cls = OffsetFetchRequest.OffsetFetchRequestTopic
        by_topic: dict[str, list[int]] = {}
        for tp in sorted(partitions):
            by_topic.setdefault(tp.topic, []).append(tp.partition)
        with self._lock:
            client, node = self._ensure_connected(at_shutdown=False)
            version = self._version(client, OffsetFetchRequest, MIN_OFFSET_FETCH)
            if version >= 8:  # a broker without v1-7 (none known): the groups form
                group_cls = OffsetFetchRequest.OffsetFetchRequestGroup
                gt_cls = group_cls.OffsetFetchRequestTopics
                request = OffsetFetchRequest[version](
                    groups=[
                        group_cls(
                            group_id=self.group,
                            topics=[gt_cls(name=t, partition_indexes=ps) for t, ps in by_topic.items()],
                        )
                    ],
                    require_stable=False,
                )
            else:
                request = OffsetFetchRequest[version](
                    group_id=self.group,
                    topics=[topic_cls(name=t, partition_indexes=ps) for t, ps in by_topic.items()],
                )
            response = client.send_and_receive(node, request, timeout_ms=self._timeout_ms)
        if version >= 8:
            group = response.groups[0]
            top, topics = group.error_code, group.topics
        else:
            top = response.error_code if version >= 2 else 0
            topics = response.topics
        out: dict[TopicPartition, tuple[int, str]] = {}
        for t in topics:
            for p in t.partitions:
                out[TopicPartition(t.name, p.partition_index)] = (
                    int(p.committed_offset),
                    error_name(p.error_code or top),
                )
        if top:  # a group-level error (v2+): it is every partition's answer
            for tp in partitions:
                out.setdefault(tp, (-1, error_name(top)))
        return out  # otherwise a partition not answered is not in it (the caller fails, as 0.8.2.2)

    def disconnect(self) -> None:
        """Close the channel; the next request locates the offset manager again."""
        with self._lock:
            client, self._client, self._coordinator = self._client, None, None
        if client is not None:
            try:
                client.close()
            except Exception:  # noqa: BLE001 - closing a broken client must not fail the caller
                log.debug("%s: closing the offsets channel failed", self._tag(), exc_info=True)

    def connect(self) -> None:
        """``ensureOffsetManagerConnected``: locate the offset manager now, retrying until found.

        Raises :class:`OffsetChannelClosed` when the member shuts down first."""
        with self._lock:
            self._ensure_connected(at_shutdown=False)

    # -- locating the offset manager ------------------------------------------------------------
    def _ensure_connected(self, *, at_shutdown: bool) -> tuple[Any, Any]:
        """(client, coordinator node id), locating the manager if needed (module contract).

        ``at_shutdown``: while the member shuts down, keep looking for at most
        ``offsets.channel.socket.timeout.ms`` (the shutdown commit) instead of giving up at once."""
        deadline: float | None = None
        while True:
            if self._client is not None and self._coordinator is not None:
                return self._client, self._coordinator
            if self._stopping():
                if not at_shutdown:
                    raise OffsetChannelClosed(
                        f"shutting down: no channel to the offset manager of {self.group}"
                    )
                if deadline is None:
                    deadline = self._clock() + self._timeout_ms / 1000.0
                elif self._clock() >= deadline:
                    raise OffsetChannelClosed(
                        f"offset manager of group {self.group} not found within {self._timeout_ms} ms "
                        "(offsets.channel.socket.timeout.ms) at shutdown"
                    )
            servers: str | None = None
            try:
                servers = self._bootstrap()
                if not servers:
                    raise RuntimeError("no broker known (no bootstrap.servers, none under /brokers/ids)")
                self._locate(servers)
                return self._client, self._coordinator
            except Exception as e:  # noqa: BLE001 - 0.8.2 retried every failure here
                self.failures += 1
                log.warning(
                    "%s: offset manager of group %s not found via %s: %s; retrying in %d ms",
                    self._tag(),
                    self.group,
                    servers or "(no broker)",
                    f"{e.__class__.__name__}: {e}",
                    int(self._backoff_s * 1000),
                )
                self.disconnect()
            if deadline is not None:
                self._sleep(max(0.0, min(self._backoff_s, deadline - self._clock())))
            elif self._wait(self._backoff_s) and not at_shutdown:
                raise OffsetChannelClosed(f"shut down while locating the offset manager of {self.group}")

    def _locate(self, servers: str) -> None:
        import kafka.errors as errors
        from kafka.net.compat import KafkaNetClient
        from kafka.protocol.metadata.find_coordinator import FindCoordinatorRequest

        if self._client is None:
            self._client = KafkaNetClient(
                bootstrap_servers=servers.split(","),
                client_id=self._client_id,
                request_timeout_ms=self._timeout_ms,
                socket_connection_setup_timeout_ms=self._timeout_ms,
                socket_connection_setup_timeout_max_ms=self._timeout_ms,
            )
            self._client.check_version(timeout_ms=self._timeout_ms)
        client = self._client
        node = client.least_loaded_node(bootstrap_fallback=True)
        if node is None:
            raise RuntimeError("no broker to ask for the offset manager")
        version = self._version(client, FindCoordinatorRequest, MIN_FIND_COORDINATOR)
        request = FindCoordinatorRequest[version](key=self.group, key_type=0, coordinator_keys=[self.group])
        response = client.send_and_receive(node, request, timeout_ms=self._timeout_ms)
        result = response.coordinators[0] if getattr(response, "coordinators", None) else response
        if result.error_code != 0:
            raise errors.for_code(result.error_code)(f"FindCoordinator({self.group})")
        self._coordinator = client.cluster.add_coordinator(result, 0, self.group)
        log.info(
            "%s: offset manager of group %s is broker %s at %s:%s",
            self._tag(),
            self.group,
            result.node_id,
            result.host,
            result.port,
        )

    @staticmethod
    def _version(client: Any, request_class: Any, lowest: int) -> int:
        """The lowest version of ``request_class`` >= ``lowest`` that the broker accepts."""
        import kafka.errors as errors

        versions = client._manager.broker_version_data.api_versions  # noqa: SLF001 - ApiVersions answer
        broker_min, broker_max = versions.get(request_class.API_KEY, (None, None))
        if broker_min is None or broker_max is None:
            raise errors.IncompatibleBrokerVersion(f"the broker does not serve {request_class.name}")
        version = max(lowest, broker_min)
        if version > min(broker_max, request_class.max_version):
            raise errors.IncompatibleBrokerVersion(
                f"{request_class.name}: the broker serves v{broker_min}-{broker_max}, we need v{lowest}+"
            )
        return version
