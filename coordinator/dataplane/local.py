"""The unreplicated partition backend: one replica of every partition, in this broker's topic store.

* Topics are created in the store; with ZooKeeper, only after :attr:`LocalBackend.claim_topic` registered the
  name (another broker may have registered it first: then TOPIC_ALREADY_EXISTS, or for an auto-created topic,
  the other broker's partitions).
* Metadata lists this broker as leader, sole replica and ISR of its own topics (leader epoch 0), and the
  topics other brokers registered in ZooKeeper (``ClusterView.remote_topic``) with their first replica as
  leader; such a partition whose leader is not live is LEADER_NOT_AVAILABLE, leader -1.
* CreateTopics: a replication factor other than -1 or 1 is INVALID_REPLICATION_FACTOR and manual assignments
  may name this broker only. CreatePartitions grows a topic of the store.
* A partition this broker does not have is NOT_LEADER_OR_FOLLOWER when another broker registered its topic,
  else UNKNOWN_TOPIC_OR_PARTITION.
"""

from __future__ import annotations

import concurrent.futures
import logging
from collections.abc import Callable, Sequence
from typing import Any

from kio.schema.errors import ErrorCode

from coordinator.cluster import ClusterView
from coordinator.config import BrokerConfig
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
from coordinator.partition_log import OffsetOutOfRange, PartitionLog
from coordinator.topics import (
    InvalidPartitions,
    InvalidTopic,
    Topic,
    TopicExists,
    TopicStore,
    validate_topic_name,
)

__all__ = ["LocalBackend"]

log = logging.getLogger("coordinator")


class LocalBackend:
    """See the module docstring; a :class:`~coordinator.dataplane.backend.PartitionBackend`."""

    def __init__(self, config: BrokerConfig, store: TopicStore, cluster: ClusterView) -> None:
        self.config = config
        self.store = store
        self.cluster = cluster
        #: With ZooKeeper: ``claim_topic(name, partitions) -> bool`` registers a new topic's znode first and
        #: says False if another broker registered it (see :meth:`attach`).
        self.claim_topic: Callable[[str, int], bool] | None = None

    def attach(self, registry: TopicRegistry, executor: concurrent.futures.Executor) -> None:
        """Claim new topics' names in the started ZooKeeper shell from now on. The claim runs on the loop (a
        topic is created in the request that asks for it); ``executor`` is not used."""
        self.claim_topic = registry.claim_topic

    # ------------------------------------------------------------------ topics

    def _create(self, name: str, count: int, *, validate_only: bool = False) -> Topic:
        """Create a local topic; with ZooKeeper, only after claiming its name there (another broker
        may have created it meanwhile: then :class:`TopicExists`)."""
        if self.claim_topic is not None and not validate_only:
            validate_topic_name(name)
            self.store.check_count(count)
            if self.store.get(name) is None and not self.claim_topic(name, count):
                raise TopicExists(f"topic {name!r} is led by another broker")
        return self.store.create(name, count, validate_only=validate_only)

    def _auto_create(self, name: str) -> tuple[Topic | None, ErrorCode]:
        try:
            return self._create(name, self.config.num_partitions), ErrorCode.none
        except InvalidTopic:
            return None, ErrorCode.invalid_topic_exception
        except TopicExists:
            return self.store.get(name), ErrorCode.none

    def describe_topics(self, wanted: Sequence[TopicRef] | None, allow_auto: bool) -> list[TopicMeta]:
        entries: list[tuple[str | None, Any, Topic | None, ErrorCode]] = []
        if wanted is None:
            entries = [(t.name, t.topic_id, t, ErrorCode.none) for t in self.store]
            entries += [
                (name, None, None, ErrorCode.none)
                for name in self.cluster.remote_topic_names()
                if self.store.get(name) is None
            ]
        else:
            for ref in wanted:
                name, topic_id = ref.name, ref.topic_id
                if name is None and topic_id is not None and topic_id.int != 0:
                    topic = self.store.by_id(topic_id)
                    entries.append(
                        (
                            topic.name if topic else None,
                            topic_id,
                            topic,
                            ErrorCode.none if topic else ErrorCode.unknown_topic_id,
                        )
                    )
                    continue
                if name is None:
                    entries.append((None, topic_id, None, ErrorCode.invalid_request))
                    continue
                topic = self.store.get(name)
                error = ErrorCode.none
                if topic is None and self._led_elsewhere(name):
                    pass  # led by another live broker: listed from ZooKeeper below
                elif topic is None:
                    if allow_auto:
                        topic, error = self._auto_create(name)
                    else:
                        error = ErrorCode.unknown_topic_or_partition
                entries.append((name, topic.topic_id if topic else None, topic, error))
        me = self.config.broker_id
        live = set(self.cluster.node_ids())
        topics: list[TopicMeta] = []
        for name, topic_id, topic, error in entries:
            partitions: tuple[PartitionMeta, ...] = ()
            remote = self.cluster.remote_topic(name) if topic is None and name is not None else None
            if remote is not None:
                partitions = tuple(
                    self._remote_partition(index, replicas, live)
                    for index, replicas in sorted(remote.items())
                )
            elif topic is not None:
                partitions = tuple(
                    PartitionMeta(ErrorCode.none, i, me, 0, (me,), (me,), ())
                    for i in range(len(topic.partitions))
                )
            topics.append(TopicMeta(name, topic_id, error, False, partitions))
        return topics

    def _led_elsewhere(self, name: str) -> bool:
        """True if ZooKeeper names another *live* broker as leader of a partition of ``name``."""
        remote = self.cluster.remote_topic(name)
        if remote is None:
            return False
        live = set(self.cluster.node_ids())
        return any(replicas[:1] and replicas[0] in live for replicas in remote.values())

    @staticmethod
    def _remote_partition(index: int, replicas: list[int], live: set[int]) -> PartitionMeta:
        leader = replicas[0] if replicas else -1
        up = leader in live
        return PartitionMeta(
            ErrorCode.none if up else ErrorCode.leader_not_available,
            index,
            leader if up else -1,
            0,
            tuple(replicas),
            tuple(replicas) if up else (),
            () if up else tuple(replicas),
        )

    def create_topics(self, topics: Sequence[Any], validate_only: bool) -> list[CreatedTopic]:
        names = [t.name for t in topics]
        results: list[CreatedTopic] = []
        for t in topics:
            error, message, topic = ErrorCode.none, None, None
            count = t.num_partitions
            if t.assignments:
                count = len(t.assignments) if t.num_partitions == -1 else -2
            elif count == -1:
                count = self.config.num_partitions
            try:
                if names.count(t.name) > 1:
                    error, message = ErrorCode.invalid_request, f"topic {t.name!r} named twice"
                elif count == -2:
                    error, message = ErrorCode.invalid_request, "both partition count and assignments given"
                elif t.replication_factor not in (-1, 1) and not t.assignments:
                    error = ErrorCode.invalid_replication_factor
                    message = f"replication factor {t.replication_factor}: this broker keeps one replica"
                elif any(tuple(a.broker_ids) not in ((), (self.config.broker_id,)) for a in t.assignments):
                    error, message = ErrorCode.invalid_replica_assignment, "replicas must be this broker only"
                else:
                    topic = self._create(t.name, count, validate_only=validate_only)
            except InvalidTopic as e:
                error, message = ErrorCode.invalid_topic_exception, str(e)
            except TopicExists as e:
                error, message = ErrorCode.topic_already_exists, str(e)
            except InvalidPartitions as e:
                error, message = ErrorCode.invalid_partitions, str(e)
            ok = error is ErrorCode.none
            if ok:
                log.info("created topic %s with %d partitions", t.name, count)
            results.append(
                CreatedTopic(
                    t.name,
                    error,
                    message,
                    topic.topic_id if topic else ZERO_UUID,
                    count if ok else -1,
                    1 if ok else -1,
                )
            )
        return results

    def create_partitions(
        self, topics: Sequence[Any], validate_only: bool
    ) -> list[tuple[str, ErrorCode, str | None]]:
        names = [t.name for t in topics]
        results: list[tuple[str, ErrorCode, str | None]] = []
        for t in topics:
            error, message = ErrorCode.none, None
            try:
                if names.count(t.name) > 1:
                    error, message = ErrorCode.invalid_request, f"topic {t.name!r} named twice"
                elif self.store.get(t.name) is None:
                    error, message = ErrorCode.unknown_topic_or_partition, f"no topic {t.name!r}"
                else:
                    self.store.add_partitions(t.name, t.count, validate_only=validate_only)
                    log.info("topic %s now has %d partitions", t.name, t.count)
            except InvalidPartitions as e:
                error, message = ErrorCode.invalid_partitions, str(e)
            results.append((t.name, error, message))
        return results

    # ------------------------------------------------------------------ records

    def _log(self, name: str, partition: int) -> PartitionLog | None:
        topic = self.store.get(name)
        return topic.partition(partition) if topic is not None else None

    def _missing(self, topic: str) -> ErrorCode:
        """The error for a partition this broker does not have: another broker leads it, or none."""
        if self.store.get(topic) is None and self.cluster.remote_topic(topic) is not None:
            return ErrorCode.not_leader_or_follower
        return ErrorCode.unknown_topic_or_partition

    def produce(
        self, topic: str, partition: int, records: bytes | None, acks: int, timeout_ms: int
    ) -> Produced:
        plog = self._log(topic, partition)
        if plog is None:
            return Produced(self._missing(topic), -1, -1)
        batches = validated_batches(topic, partition, records)
        if isinstance(batches, ErrorCode):
            return Produced(batches, -1, -1)
        base = plog.append(batches)
        return Produced(ErrorCode.none, base, plog.log_start_offset)

    def read(
        self,
        topic: str,
        partition: int,
        offset: int,
        max_bytes: int | None,
        replica_id: int,
        leader_epoch: int,
    ) -> Read:
        """Reads at least one batch when ``max_bytes`` is an int (even <= 0), as :meth:`PartitionLog.read`."""
        plog = self._log(topic, partition)
        if plog is None:
            return Read(self._missing(topic), -1, -1, b"", None)
        error, records = ErrorCode.none, b""
        try:
            if max_bytes is not None:
                records = plog.read(offset, max_bytes)
            elif not plog.log_start_offset <= offset <= plog.end_offset:
                raise OffsetOutOfRange(offset)
        except OffsetOutOfRange:
            error = ErrorCode.offset_out_of_range
        return Read(error, plog.end_offset, plog.log_start_offset, records, plog)

    def offsets_log(
        self, topic: str, partition: int, leader_epoch: int
    ) -> tuple[ErrorCode, PartitionLog | None]:
        plog = self._log(topic, partition)
        if plog is None:
            return self._missing(topic), None
        return ErrorCode.none, plog
