"""The replicated partition backend (``replication.enabled``): partitions through the replica manager, topics
through the ZooKeeper shell.

* Produce goes through the :class:`~coordinator.replicas.manager.ReplicaManager` per partition (leader check,
  ``min.insync.replicas``, acks=-1 waiting for the ISR up to the request's timeout); the manager emits
  ``produce_ack`` per acknowledged partition and ``fenced`` (what=``produce``) per refused one. An acknowledged
  partition reports log start 0.
* Fetch: consumers (replica id -1) read below the high watermark, followers (replica id >= 0) up to the log end
  and their fetch offset is recorded; a broker that does not lead the partition answers NOT_LEADER_OR_FOLLOWER
  (UNKNOWN_TOPIC_OR_PARTITION when no broker knows the topic). ListOffsets is answered by the leader only.
  A consumer's ``current_leader_epoch`` (Fetch v9+, ListOffsets v4+) is not checked, a follower's is: Metadata
  gives clients no leader epoch (-1, below), so an epoch a client sends is none this cluster gave it.
  librdkafka sends 0 in place of an unknown epoch to a broker that serves Metadata v9+
  (``rd_kafka_has_reliable_leader_epochs``); checked, it would be FENCED_LEADER_EPOCH at every leader from
  the first re-election on (epoch >= 1), and its Metadata refresh would give it -1 again: it would never
  fetch again.
* Metadata lists the partitions, leaders, replicas and ISRs of ``cluster.topic_partitions`` (what the ZooKeeper
  shell read from the state znodes); a partition without a live leader is LEADER_NOT_AVAILABLE with leader -1.
  Topics are asked for by name or (v10+) by id; an unknown id is UNKNOWN_TOPIC_ID with a zero id (Kafka echoes
  the id asked for).
* Topics are created through the ZooKeeper shell's ``create_topic(name, partitions, replication_factor | None)``
  (blocking; run in :attr:`ReplicatedBackend.zookeeper_executor`): auto-creation from Metadata answers
  LEADER_NOT_AVAILABLE until the controller elected leaders (Kafka's ``KafkaApis.getTopicMetadata`` after
  ``createTopic``); CreateTopics with replication factor -1 uses the default rule (None), manual assignments are
  refused. Until the shell is attached (:meth:`ReplicatedBackend.attach`), Metadata creates nothing and
  CreateTopics creates unreplicated topics in the store as :class:`~coordinator.dataplane.local.LocalBackend`
  does. CreatePartitions is refused (INVALID_REQUEST): the controller does not reassign replicas.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import uuid
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from kio.schema.errors import ErrorCode

from coordinator.cluster import ClusterView
from coordinator.config import BrokerConfig
from coordinator.core.replication.errors import InvalidReplicationFactor
from coordinator.dataplane.backend import (
    ZERO_UUID,
    CreatedTopic,
    PartitionMeta,
    Produced,
    Read,
    TopicMeta,
    TopicRef,
    TopicRegistry,
    validated_batches,
)
from coordinator.dataplane.local import LocalBackend
from coordinator.partition_log import PartitionLog
from coordinator.ports import OFFSETS_TOPIC
from coordinator.replicas.manager import ProduceResult, ReplicaManager
from coordinator.topics import (
    InvalidPartitions,
    InvalidTopic,
    TopicExists,
    TopicStore,
    replicated_topic_id,
    validate_topic_name,
)

__all__ = ["ReplicatedBackend"]

log = logging.getLogger("coordinator")


class ReplicatedBackend:
    """See the module docstring; a :class:`~coordinator.dataplane.backend.PartitionBackend`."""

    def __init__(
        self, config: BrokerConfig, store: TopicStore, cluster: ClusterView, replicas: ReplicaManager
    ) -> None:
        self.config = config
        self.store = store
        self.cluster = cluster
        self.replicas = replicas
        #: The ZooKeeper shell's blocking ``create_topic(name, partitions, replication_factor)``; None until
        #: :meth:`attach`.
        self.create_topic: Callable[[str, int, int | None], Any] | None = None
        #: The executor ``create_topic`` runs in (the broker's ZooKeeper executor; None: the loop's default), so
        #: ZooKeeper calls waiting on an unreachable ZooKeeper never occupy the default executor.
        self.zookeeper_executor: concurrent.futures.Executor | None = None
        self._unattached = LocalBackend(config, store, cluster)

    def attach(self, registry: TopicRegistry, executor: concurrent.futures.Executor) -> None:
        """Create topics through the started ZooKeeper shell from now on, its calls in ``executor``."""
        self.create_topic = registry.create_topic
        self.zookeeper_executor = executor

    # ------------------------------------------------------------------ topics

    def describe_topics(
        self, wanted: Sequence[TopicRef] | None, allow_auto: bool
    ) -> list[TopicMeta] | Awaitable[list[TopicMeta]]:
        if wanted is None:
            return self._metas([(n, ErrorCode.none) for n in self.cluster.topic_names()])
        entries: list[tuple[str | None, ErrorCode]] = []
        missing: list[str] = []
        for ref in wanted:
            name = ref.name
            if name is None and ref.topic_id is not None and ref.topic_id.int != 0:
                # by id (v10+: a consumer-protocol member resolves its assignment's topic ids so)
                known = next(
                    (n for n in self.cluster.topic_names() if self._topic_id(n) == ref.topic_id), None
                )
                entries.append((known, ErrorCode.none) if known else (None, ErrorCode.unknown_topic_id))
            elif name is None:
                entries.append((None, ErrorCode.invalid_request))
            elif self.cluster.topic_partitions(name):
                entries.append((name, ErrorCode.none))
            elif not allow_auto or self.create_topic is None:
                entries.append((name, ErrorCode.unknown_topic_or_partition))
            else:
                try:
                    validate_topic_name(name)
                except InvalidTopic:
                    entries.append((name, ErrorCode.invalid_topic_exception))
                    continue
                entries.append((name, ErrorCode.leader_not_available))
                missing.append(name)
        if not missing:
            return self._metas(entries)
        return self._auto_create_then(entries, missing)

    async def _auto_create_then(
        self, entries: list[tuple[str | None, ErrorCode]], missing: list[str]
    ) -> list[TopicMeta]:
        loop = asyncio.get_running_loop()
        for name in missing:
            try:
                await loop.run_in_executor(
                    self.zookeeper_executor,
                    self.create_topic,  # type: ignore[arg-type]
                    name,
                    self.config.num_partitions,
                    None,
                )
                log.info("auto-created topic %s with %d partitions", name, self.config.num_partitions)
            except TopicExists:
                pass  # another broker was first: fine
            except Exception as e:  # noqa: BLE001 - Metadata answers LEADER_NOT_AVAILABLE; the client retries
                log.warning("auto-creating topic %s failed: %s", name, e)
        return self._metas(entries)

    def _topic_id(self, name: str) -> uuid.UUID:
        """The id Metadata gives topic ``name``: the local topic's, else the one every broker derives."""
        local = self.store.get(name)
        return local.topic_id if local is not None else replicated_topic_id(name)

    def _metas(self, entries: list[tuple[str | None, ErrorCode]]) -> list[TopicMeta]:
        """The topics of ``entries`` from the partition states recorded now."""
        live = set(self.cluster.node_ids())
        topics: list[TopicMeta] = []
        for name, error in entries:
            parts = (
                self.cluster.topic_partitions(name) if name is not None and error is ErrorCode.none else None
            )
            partitions: list[PartitionMeta] = []
            for index, info in sorted((parts or {}).items()):
                has_leader = info.leader >= 0 and info.leader in live
                partitions.append(
                    PartitionMeta(
                        ErrorCode.none if has_leader else ErrorCode.leader_not_available,
                        index,
                        info.leader if has_leader else -1,
                        # -1: 0.9's Metadata had no leader epoch. With a real epoch, clients since KIP-320
                        # (kafka-python 3) validate their position with OffsetForLeaderEpoch after every
                        # leader change, which this broker does not serve: they would stop fetching.
                        -1,
                        tuple(info.replicas),
                        tuple(info.isr),
                        tuple(b for b in info.replicas if b not in live),
                    )
                )
            topic_id = self._topic_id(name) if name is not None else ZERO_UUID
            topics.append(TopicMeta(name, topic_id, error, name == OFFSETS_TOPIC, tuple(partitions)))
        return topics

    def create_topics(
        self, topics: Sequence[Any], validate_only: bool
    ) -> list[CreatedTopic] | Awaitable[list[CreatedTopic]]:
        if self.create_topic is None:
            return self._unattached.create_topics(topics, validate_only)
        return self._create_topics(self.create_topic, topics, validate_only)

    async def _create_topics(
        self, create_topic: Callable[[str, int, int | None], Any], topics: Sequence[Any], validate_only: bool
    ) -> list[CreatedTopic]:
        names = [t.name for t in topics]
        loop = asyncio.get_running_loop()
        results: list[CreatedTopic] = []
        for t in topics:
            error, message = ErrorCode.none, None
            count = self.config.num_partitions if t.num_partitions == -1 else t.num_partitions
            factor = None if t.replication_factor == -1 else t.replication_factor
            try:
                validate_topic_name(t.name)
                self.store.check_count(count)
                if names.count(t.name) > 1:
                    error, message = ErrorCode.invalid_request, f"topic {t.name!r} named twice"
                elif t.assignments:
                    error = ErrorCode.invalid_replica_assignment
                    message = "manual replica assignments are not supported with replication"
                elif not validate_only:
                    await loop.run_in_executor(self.zookeeper_executor, create_topic, t.name, count, factor)
            except InvalidTopic as e:
                error, message = ErrorCode.invalid_topic_exception, str(e)
            except InvalidPartitions as e:
                error, message = ErrorCode.invalid_partitions, str(e)
            except TopicExists as e:
                error, message = ErrorCode.topic_already_exists, str(e)
            except InvalidReplicationFactor as e:
                error, message = ErrorCode.invalid_replication_factor, str(e)
            except Exception as e:  # noqa: BLE001 - answered, not a crash of the broker
                error, message = ErrorCode.unknown_server_error, str(e)
                log.exception("creating topic %s failed", t.name)
            ok = error is ErrorCode.none
            if ok:
                log.info("created topic %s with %d partitions (replication factor %s)", t.name, count, factor)
            results.append(
                CreatedTopic(
                    t.name, error, message, ZERO_UUID, count if ok else -1, (factor or -1) if ok else -1
                )
            )
        return results

    def create_partitions(
        self, topics: Sequence[Any], validate_only: bool
    ) -> list[tuple[str, ErrorCode, str | None]]:
        refused = "adding partitions is not supported with replication"
        return [(t.name, ErrorCode.invalid_request, refused) for t in topics]

    # ------------------------------------------------------------------ records

    def _missing(self, topic: str) -> ErrorCode:
        """The error for a partition this broker does not lead."""
        if self.cluster.topic_partitions(topic) or self.replicas.knows(topic):
            return ErrorCode.not_leader_or_follower
        return ErrorCode.unknown_topic_or_partition

    def produce(
        self, topic: str, partition: int, records: bytes | None, acks: int, timeout_ms: int
    ) -> Produced | Awaitable[Produced]:
        batches = validated_batches(topic, partition, records)
        if isinstance(batches, ErrorCode):
            return Produced(batches, -1, -1)
        outcome = self.replicas.produce(topic, partition, batches, acks, timeout_ms)
        if isinstance(outcome, ProduceResult):
            if outcome.error == ErrorCode.not_leader_or_follower:
                return Produced(self._missing(topic), -1, -1)
            return _produced(outcome)
        return _mapped(outcome)

    def read(
        self,
        topic: str,
        partition: int,
        offset: int,
        max_bytes: int | None,
        replica_id: int,
        leader_epoch: int,
    ) -> Read:
        checked_epoch = leader_epoch if replica_id >= 0 else -1  # a consumer's: see the module docstring
        fr = self.replicas.read(topic, partition, offset, max_bytes or 0, replica_id, checked_epoch)
        error = ErrorCode(fr.error)
        if error is ErrorCode.not_leader_or_follower:
            error = self._missing(topic)
        return Read(error, fr.high_watermark, fr.log_start_offset, fr.records, fr.log)

    def offsets_log(
        self, topic: str, partition: int, leader_epoch: int
    ) -> tuple[ErrorCode, PartitionLog | None]:
        code, plog = self.replicas.list_offset(topic, partition)  # leader_epoch unchecked: module docstring
        if code == ErrorCode.not_leader_or_follower:
            return self._missing(topic), None
        return ErrorCode(code), plog


def _produced(result: ProduceResult) -> Produced:
    error = ErrorCode(result.error)
    return Produced(error, result.base_offset, 0 if error is ErrorCode.none else -1)


def _mapped(parked: asyncio.Future[ProduceResult]) -> asyncio.Future[Produced]:
    """A future of the answer to a produce the replica manager parked (acks=-1 waiting for the ISR)."""
    answer: asyncio.Future[Produced] = asyncio.get_running_loop().create_future()

    def done(f: asyncio.Future[ProduceResult]) -> None:
        if answer.done():
            return
        if f.cancelled():
            answer.cancel()
        elif (e := f.exception()) is not None:
            answer.set_exception(e)
        else:
            answer.set_result(_produced(f.result()))

    parked.add_done_callback(done)
    return answer
