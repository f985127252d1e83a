"""Handlers of the data-plane APIs: topics, records, offsets of partitions, producer ids.

Each handler takes the :class:`~coordinator.context.RequestContext` and the kio request body and
returns a kio response of the same version, an awaitable of one (Fetch long-polls), or None
(Produce with acks=0 has no response). Handlers validate everything before they change anything,
so a bad request never leaves a half-applied change.

Served versions (also what ApiVersions advertises, see :data:`DATA_VERSIONS`) and their limits:

* Metadata v0-12: topics are looked up by name (v10+ also by topic id); unknown topics are
  auto-created when the broker allows it and the request does (v4+ ``allow_auto_topic_creation``).
* CreateTopics v2-7, CreatePartitions v0-3: there is no replication, so a replication factor other
  than -1 or 1 is INVALID_REPLICATION_FACTOR and manual assignments may name this broker only.
* Produce v3-9: one magic-2 batch per partition, validated as Kafka's ``LogValidator`` does (see
  :func:`coordinator.records.validate_produce`): an inconsistent or empty offset range, a control batch,
  several batches, a base offset other than 0 are INVALID_RECORD, framing or CRC damage CORRUPT_MESSAGE,
  and nothing of that partition is appended; acks 0, 1, -1 (all the same here: one replica). A produce
  with acks=0 that fails for any partition closes the connection (Kafka's ``KafkaApis.handleProduceRequest``:
  the producer has no response to learn from, so it sees the close and refreshes its metadata).
  Transactional producers are not supported (their batches are stored like any other).
* Fetch v4-12: no incremental fetch sessions (always session id 0, which clients treat as
  "sessionless"); long-polls up to ``max_wait`` until ``min_bytes`` are available.
* ListOffsets v1-7: -1 latest, -2 earliest, -3 max timestamp, else the first batch whose max
  timestamp is >= the asked one (batch granularity).
* InitProducerId v0-4: idempotent producers only; transactional ids get
  TRANSACTIONAL_ID_AUTHORIZATION_FAILED. Producer ids are unique across restarts and brokers.
* DescribeCluster v1-2 (v0 trips a kafka-python bug, so it is not advertised).

Replicated mode (:attr:`DataPlane.replicas` set, ``replication.enabled``), everything else unchanged:

* Produce goes through the :class:`~coordinator.replica_manager.ReplicaManager` per partition (leader check,
  ``min.insync.replicas``, acks=-1 waiting for the ISR up to the request's timeout); the manager emits
  ``produce_ack`` per acknowledged partition and ``fenced`` (what=``produce``) per refused one.
* Fetch: consumers (replica id -1) read below the high watermark, followers (replica id >= 0) up to the log end
  and their fetch offset is recorded; a broker that does not lead the partition answers NOT_LEADER_OR_FOLLOWER.
* Metadata lists the partitions, leaders, replicas and ISRs of ``cluster.partition_info`` (what the
  ZooKeeper shell read from the state znodes); a partition without a live leader is LEADER_NOT_AVAILABLE with
  leader -1. ListOffsets is answered by the leader only (latest = the high watermark, as Kafka answers a
  read_uncommitted consumer).
* Topics are created through the ZooKeeper shell's ``create_topic(name, partitions, replication_factor |
  None)`` (blocking; run in an executor): auto-creation from Metadata answers LEADER_NOT_AVAILABLE until the
  controller elected leaders (Kafka's ``KafkaApis.getTopicMetadata`` after ``createTopic``); CreateTopics with
  replication factor -1 uses the default rule (None), manual assignments are refused. CreatePartitions is
  refused (INVALID_REQUEST): the controller does not reassign replicas.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import datetime
import logging
import time
import uuid
from collections.abc import Callable
from typing import Any, Protocol, cast

from kio.schema.errors import ErrorCode

from coordinator.api_keys import ApiKey
from coordinator.cluster import ClusterView
from coordinator.config import BrokerConfig
from coordinator.context import RequestContext
from coordinator.partition_log import OffsetOutOfRange, PartitionLog
from coordinator.records import BatchInfo, InvalidRecords, validate_produce
from coordinator.replica_manager import ProduceResult, ReplicaManager
from coordinator.replication.errors import InvalidReplicationFactor
from coordinator.topics import (
    InvalidPartitions,
    InvalidTopic,
    Topic,
    TopicExists,
    TopicStore,
    replicated_topic_id,
    validate_topic_name,
)
from coordinator.wire import ZERO_TD, CloseConnection, make, nested, response_class

__all__ = ["DATA_VERSIONS", "DataPlane"]

log = logging.getLogger("coordinator")

#: API key -> (min, max) served by :class:`DataPlane`.
DATA_VERSIONS: dict[int, tuple[int, int]] = {
    ApiKey.PRODUCE: (3, 9),
    ApiKey.FETCH: (4, 12),
    ApiKey.LIST_OFFSETS: (1, 7),
    ApiKey.METADATA: (0, 12),
    ApiKey.CREATE_TOPICS: (2, 7),
    ApiKey.INIT_PRODUCER_ID: (0, 4),
    ApiKey.CREATE_PARTITIONS: (0, 3),
    ApiKey.DESCRIBE_CLUSTER: (1, 2),
}

#: Longest Fetch long-poll honoured (a bad max_wait must not park a request for days).
MAX_FETCH_WAIT_MS = 30_000
_NO_AUTH_OPS = -(2**31)
_ZERO_UUID = uuid.UUID(int=0)


class _PartitionInfo(Protocol):
    leader: int
    leader_epoch: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]


class _PartitionStates(Protocol):
    """What replicated mode reads from :class:`ClusterView` (the ZooKeeper shell records the state znodes there)."""

    def topic_partitions(self, topic: str) -> dict[int, _PartitionInfo] | None: ...

    def topic_names(self) -> list[str]: ...


def _ms(td: datetime.timedelta) -> int:
    return round(td.total_seconds() * 1000)


class FetchWaiters:
    """Futures of long-polling fetches, keyed by the partition log they wait on."""

    def __init__(self) -> None:
        self._waiting: dict[int, tuple[PartitionLog, set[asyncio.Future[None]]]] = {}

    def listener_for(self, plog: PartitionLog) -> Callable[[], None]:
        """The callback to install as ``plog.listener``: wakes every fetch waiting on ``plog``."""
        key = id(plog)

        def wake() -> None:
            entry = self._waiting.pop(key, None)
            if entry is None:
                return
            for fut in entry[1]:
                if not fut.done():
                    fut.set_result(None)

        return wake

    def add(self, plog: PartitionLog, fut: asyncio.Future[None]) -> None:
        entry = self._waiting.setdefault(id(plog), (plog, set()))
        entry[1].add(fut)

    def discard(self, plog: PartitionLog, fut: asyncio.Future[None]) -> None:
        entry = self._waiting.get(id(plog))
        if entry is not None:
            entry[1].discard(fut)
            if not entry[1]:
                del self._waiting[id(plog)]


class DataPlane:
    """The data-plane handlers over one :class:`TopicStore`."""

    def __init__(self, config: BrokerConfig, store: TopicStore, cluster: ClusterView) -> None:
        self.config = config
        self.store = store
        self.cluster = cluster
        #: Replicated mode: the partition states the ZooKeeper shell keeps in the cluster view.
        self._partitions = cast(_PartitionStates, cluster)
        self.waiters = FetchWaiters()
        self._pid_time = 0
        #: With ZooKeeper: ``claim_topic(name, partitions) -> bool`` registers a new topic's znode
        #: first and says False if another broker registered it (see :mod:`coordinator.zk`).
        self.claim_topic: Callable[[str, int], bool] | None = None
        #: Replicated mode: the replica manager every produce and fetch goes through (see the module docstring).
        self.replicas: ReplicaManager | None = None
        #: Replicated mode: the ZooKeeper shell's blocking ``create_topic(name, partitions, replication_factor)``.
        self.create_topic: Callable[[str, int, int | None], Any] | None = None
        #: The executor ``create_topic`` runs in (the broker's ZooKeeper executor; None: the loop's default), so
        #: ZooKeeper calls waiting on an unreachable ZooKeeper never occupy the default executor.
        self.zookeeper_executor: concurrent.futures.Executor | None = None
        store.on_new_log = lambda _t, _i, plog: setattr(plog, "listener", self.waiters.listener_for(plog))
        for topic in store:
            for plog in topic.partitions:
                plog.listener = self.waiters.listener_for(plog)

    def handlers(self) -> dict[int, Callable[[RequestContext, Any], Any]]:
        return {
            ApiKey.PRODUCE: self.produce,
            ApiKey.FETCH: self.fetch,
            ApiKey.LIST_OFFSETS: self.list_offsets,
            ApiKey.METADATA: self.metadata,
            ApiKey.CREATE_TOPICS: self.create_topics,
            ApiKey.INIT_PRODUCER_ID: self.init_producer_id,
            ApiKey.CREATE_PARTITIONS: self.create_partitions,
            ApiKey.DESCRIBE_CLUSTER: self.describe_cluster,
        }

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

    def metadata(self, ctx: RequestContext, req: Any) -> Any:
        if self.replicas is not None:
            return self._replicated_metadata(ctx, req)
        cls = response_class(ApiKey.METADATA, ctx.api_version)
        broker_cls = nested(cls, "brokers")
        topic_cls = nested(cls, "topics")
        part_cls = nested(topic_cls, "partitions")
        me = self.config.broker_id
        brokers = tuple(
            make(broker_cls, node_id=n.node_id, host=n.host, port=n.port, rack=None)
            for n in self.cluster.nodes(ctx.advertised_host, ctx.advertised_port)
        )
        wanted = req.topics
        if ctx.api_version == 0 and not wanted:
            wanted = None  # v0: an empty list means every topic
        allow_auto = self.config.auto_create_topics and getattr(req, "allow_auto_topic_creation", True)
        entries: list[tuple[str | None, Any, Topic | None, ErrorCode]] = []
        if wanted is None:
            entries = [(t.name, t.topic_id, t, ErrorCode.none) for t in self.store]
            entries += [
                (name, None, None, ErrorCode.none)
                for name in self.cluster.remote_topic_names()
                if self.store.get(name) is None
            ]
        else:
            for rt in wanted:
                name = getattr(rt, "name", None)
                topic_id = getattr(rt, "topic_id", None)
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
        topics = []
        for name, topic_id, topic, error in entries:
            partitions: tuple[Any, ...] = ()
            remote = self.cluster.remote_topic(name) if topic is None and name is not None else None
            if remote is not None:
                partitions = tuple(
                    self._remote_partition(part_cls, ctx, index, replicas)
                    for index, replicas in sorted(remote.items())
                )
            elif topic is not None:
                partitions = tuple(
                    make(
                        part_cls,
                        error_code=ErrorCode.none,
                        partition_index=i,
                        leader_id=me,
                        leader_epoch=0,
                        replica_nodes=(me,),
                        isr_nodes=(me,),
                        offline_replicas=(),
                    )
                    for i in range(len(topic.partitions))
                )
            topics.append(
                make(
                    topic_cls,
                    error_code=error,
                    name=name if name is not None else ("" if ctx.api_version < 12 else None),
                    topic_id=topic_id if topic_id is not None else _ZERO_UUID,
                    is_internal=False,
                    partitions=partitions,
                    topic_authorized_operations=_NO_AUTH_OPS,
                )
            )
        return make(
            cls,
            throttle_time=ZERO_TD,
            brokers=brokers,
            cluster_id=self.config.cluster_id,
            controller_id=me,
            topics=tuple(topics),
            cluster_authorized_operations=_NO_AUTH_OPS,
            error_code=ErrorCode.none,
        )

    def _led_elsewhere(self, name: str) -> bool:
        """True if ZooKeeper names another *live* broker as leader of a partition of ``name``."""
        remote = self.cluster.remote_topic(name)
        if remote is None:
            return False
        live = set(self.cluster.node_ids())
        return any(replicas[:1] and replicas[0] in live for replicas in remote.values())

    def _remote_partition(self, part_cls: type, ctx: RequestContext, index: int, replicas: list[int]) -> Any:
        leader = replicas[0] if replicas else -1
        live = self.cluster.node(leader, ctx.advertised_host, ctx.advertised_port) is not None
        return make(
            part_cls,
            error_code=ErrorCode.none if live else ErrorCode.leader_not_available,
            partition_index=index,
            leader_id=leader if live else -1,
            leader_epoch=0,
            replica_nodes=tuple(replicas),
            isr_nodes=tuple(replicas) if live else (),
            offline_replicas=() if live else tuple(replicas),
        )

    # ------------------------------------------------------------------ replicated topics

    def _replicated_metadata(self, ctx: RequestContext, req: Any) -> Any:
        wanted = req.topics
        if ctx.api_version == 0 and not wanted:
            wanted = None
        if wanted is None:
            return self._replicated_metadata_answer(
                ctx, [(n, ErrorCode.none) for n in self._partitions.topic_names()]
            )
        allow_auto = self.config.auto_create_topics and getattr(req, "allow_auto_topic_creation", True)
        entries: list[tuple[str | None, ErrorCode]] = []
        missing: list[str] = []
        for rt in wanted:
            name = getattr(rt, "name", None)
            if name is None:
                entries.append((None, ErrorCode.invalid_request))  # topic ids: not in replicated mode
            elif self._partitions.topic_partitions(name):
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
            return self._replicated_metadata_answer(ctx, entries)
        return self._auto_create_then(ctx, entries, missing)

    async def _auto_create_then(
        self, ctx: RequestContext, entries: list[tuple[str | None, ErrorCode]], missing: list[str]
    ) -> Any:
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
        return self._replicated_metadata_answer(ctx, entries)

    def _replicated_metadata_answer(
        self, ctx: RequestContext, entries: list[tuple[str | None, ErrorCode]]
    ) -> Any:
        cls = response_class(ApiKey.METADATA, ctx.api_version)
        broker_cls = nested(cls, "brokers")
        topic_cls = nested(cls, "topics")
        part_cls = nested(topic_cls, "partitions")
        nodes = self.cluster.nodes(ctx.advertised_host, ctx.advertised_port)
        live = {n.node_id for n in nodes}
        brokers = tuple(
            make(broker_cls, node_id=n.node_id, host=n.host, port=n.port, rack=None) for n in nodes
        )
        topics = []
        for name, error in entries:
            parts = (
                self._partitions.topic_partitions(name)
                if name is not None and error is ErrorCode.none
                else None
            )
            partitions = []
            for index, info in sorted((parts or {}).items()):
                has_leader = info.leader >= 0 and info.leader in live
                partitions.append(
                    make(
                        part_cls,
                        error_code=ErrorCode.none if has_leader else ErrorCode.leader_not_available,
                        partition_index=index,
                        leader_id=info.leader if has_leader else -1,
                        # -1: 0.9's Metadata had no leader epoch. With a real epoch, clients since KIP-320
                        # (kafka-python 3) validate their position with OffsetForLeaderEpoch after every
                        # leader change, which this broker does not serve: they would stop fetching.
                        leader_epoch=-1,
                        replica_nodes=tuple(info.replicas),
                        isr_nodes=tuple(info.isr),
                        offline_replicas=tuple(b for b in info.replicas if b not in live),
                    )
                )
            local = self.store.get(name) if name is not None else None
            topics.append(
                make(
                    topic_cls,
                    error_code=error,
                    name=name if name is not None else ("" if ctx.api_version < 12 else None),
                    topic_id=local.topic_id if local is not None else replicated_topic_id(name or ""),
                    is_internal=name == "__consumer_offsets",
                    partitions=tuple(partitions),
                    topic_authorized_operations=_NO_AUTH_OPS,
                )
            )
        return make(
            cls,
            throttle_time=ZERO_TD,
            brokers=brokers,
            cluster_id=self.config.cluster_id,
            # every broker creates topics through the ZooKeeper shell, so clients' admin requests may come here
            controller_id=self.config.broker_id,
            topics=tuple(topics),
            cluster_authorized_operations=_NO_AUTH_OPS,
            error_code=ErrorCode.none,
        )

    async def _replicated_create_topics(self, ctx: RequestContext, req: Any) -> Any:
        cls = response_class(ApiKey.CREATE_TOPICS, ctx.api_version)
        topic_cls = nested(cls, "topics")
        names = [t.name for t in req.topics]
        loop = asyncio.get_running_loop()
        results = []
        for t in req.topics:
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
                elif not req.validate_only:
                    assert self.create_topic is not None
                    await loop.run_in_executor(
                        self.zookeeper_executor, self.create_topic, t.name, count, factor
                    )
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
            if error is ErrorCode.none:
                log.info("created topic %s with %d partitions (replication factor %s)", t.name, count, factor)
            results.append(
                make(
                    topic_cls,
                    name=t.name,
                    error_code=error,
                    error_message=message,
                    topic_id=_ZERO_UUID,
                    num_partitions=count if error is ErrorCode.none else -1,
                    replication_factor=(factor or -1) if error is ErrorCode.none else -1,
                    configs=() if error is ErrorCode.none else None,
                )
            )
        return make(cls, throttle_time=ZERO_TD, topics=tuple(results))

    def create_topics(self, ctx: RequestContext, req: Any) -> Any:
        if self.replicas is not None and self.create_topic is not None:
            return self._replicated_create_topics(ctx, req)
        cls = response_class(ApiKey.CREATE_TOPICS, ctx.api_version)
        topic_cls = nested(cls, "topics")
        names = [t.name for t in req.topics]
        results = []
        for t in req.topics:
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
                    topic = self._create(t.name, count, validate_only=req.validate_only)
            except InvalidTopic as e:
                error, message = ErrorCode.invalid_topic_exception, str(e)
            except TopicExists as e:
                error, message = ErrorCode.topic_already_exists, str(e)
            except InvalidPartitions as e:
                error, message = ErrorCode.invalid_partitions, str(e)
            if error is ErrorCode.none:
                log.info("created topic %s with %d partitions", t.name, count)
            results.append(
                make(
                    topic_cls,
                    name=t.name,
                    error_code=error,
                    error_message=message,
                    topic_id=topic.topic_id if topic else _ZERO_UUID,
                    num_partitions=count if error is ErrorCode.none else -1,
                    replication_factor=1 if error is ErrorCode.none else -1,
                    configs=() if error is ErrorCode.none else None,
                )
            )
        return make(cls, throttle_time=ZERO_TD, topics=tuple(results))

    def create_partitions(self, ctx: RequestContext, req: Any) -> Any:
        cls = response_class(ApiKey.CREATE_PARTITIONS, ctx.api_version)
        result_cls = nested(cls, "results")
        if self.replicas is not None:
            refused = "adding partitions is not supported with replication"
            return make(
                cls,
                throttle_time=ZERO_TD,
                results=tuple(
                    make(result_cls, name=t.name, error_code=ErrorCode.invalid_request, error_message=refused)
                    for t in req.topics
                ),
            )
        names = [t.name for t in req.topics]
        results = []
        for t in req.topics:
            error, message = ErrorCode.none, None
            try:
                if names.count(t.name) > 1:
                    error, message = ErrorCode.invalid_request, f"topic {t.name!r} named twice"
                elif self.store.get(t.name) is None:
                    error, message = ErrorCode.unknown_topic_or_partition, f"no topic {t.name!r}"
                else:
                    self.store.add_partitions(t.name, t.count, validate_only=req.validate_only)
                    log.info("topic %s now has %d partitions", t.name, t.count)
            except InvalidPartitions as e:
                error, message = ErrorCode.invalid_partitions, str(e)
            results.append(make(result_cls, name=t.name, error_code=error, error_message=message))
        return make(cls, throttle_time=ZERO_TD, results=tuple(results))

    def describe_cluster(self, ctx: RequestContext, req: Any) -> Any:
        cls = response_class(ApiKey.DESCRIBE_CLUSTER, ctx.api_version)
        broker_cls = nested(cls, "brokers")
        brokers = tuple(
            make(broker_cls, broker_id=n.node_id, host=n.host, port=n.port, rack=None, is_fenced=False)
            for n in self.cluster.nodes(ctx.advertised_host, ctx.advertised_port)
        )
        if getattr(req, "endpoint_type", 1) != 1:
            return make(
                cls,
                throttle_time=ZERO_TD,
                error_code=ErrorCode.unsupported_endpoint_type,
                error_message="only broker endpoints",
                cluster_id=self.config.cluster_id,
                brokers=(),
                endpoint_type=req.endpoint_type,
            )
        return make(
            cls,
            throttle_time=ZERO_TD,
            error_code=ErrorCode.none,
            error_message=None,
            cluster_id=self.config.cluster_id,
            controller_id=self.config.broker_id,
            brokers=brokers,
            endpoint_type=1,
        )

    # ------------------------------------------------------------------ records

    def _log(self, name: str, partition: int) -> PartitionLog | None:
        topic = self.store.get(name)
        return topic.partition(partition) if topic is not None else None

    def _missing(self, topic: str) -> ErrorCode:
        """The error for a partition this broker does not have: another broker leads it, or none."""
        if self.store.get(topic) is None and self.cluster.remote_topic(topic) is not None:
            return ErrorCode.not_leader_or_follower
        return ErrorCode.unknown_topic_or_partition

    def _replicated_missing(self, topic: str) -> ErrorCode:
        """Replicated: the error for a partition this broker does not lead."""
        if self._partitions.topic_partitions(topic) or (
            self.replicas is not None and self.replicas.knows(topic)
        ):
            return ErrorCode.not_leader_or_follower
        return ErrorCode.unknown_topic_or_partition

    @staticmethod
    def _produce_batches(topic: str, pd: Any) -> list[tuple[BatchInfo, bytes]] | ErrorCode:
        """A Produce partition's batches validated as Kafka's ``LogValidator`` does, or the error that refuses
        them: INVALID_RECORD (no records, or invalid ones), CORRUPT_MESSAGE (framing or CRC damage)."""
        if pd.records is None:
            return ErrorCode.invalid_record
        try:
            return validate_produce(pd.records)
        except InvalidRecords as e:
            log.warning("produce to %s-%d rejected: %s", topic, pd.index, e)
            return ErrorCode.corrupt_message if e.corrupt else ErrorCode.invalid_record

    def _replicated_produce(self, ctx: RequestContext, req: Any) -> Any:
        assert self.replicas is not None
        cls = response_class(ApiKey.PRODUCE, ctx.api_version)
        topic_cls = nested(cls, "responses")
        part_cls = nested(topic_cls, "partition_responses")
        acks = req.acks
        timeout_ms = _ms(req.timeout)
        outcomes: list[
            tuple[str, list[tuple[int, ProduceResult | ErrorCode | asyncio.Future[ProduceResult]]]]
        ] = []
        for td in req.topic_data:
            parts: list[tuple[int, ProduceResult | ErrorCode | asyncio.Future[ProduceResult]]] = []
            for pd in td.partition_data:
                outcome: ProduceResult | ErrorCode | asyncio.Future[ProduceResult]
                batches = (
                    ErrorCode.invalid_required_acks
                    if acks not in (0, 1, -1)
                    else self._produce_batches(td.name, pd)
                )
                if isinstance(batches, ErrorCode):
                    outcome = batches
                else:
                    outcome = self.replicas.produce(td.name, pd.index, batches, acks, timeout_ms)
                    if isinstance(outcome, ProduceResult) and outcome.error == 6:
                        outcome = self._replicated_missing(td.name)
                parts.append((pd.index, outcome))
            outcomes.append((td.name, parts))

        def answer() -> Any:
            responses = []
            for name, parts in outcomes:
                out = []
                for index, outcome in parts:
                    if isinstance(outcome, asyncio.Future):
                        outcome = outcome.result()
                    if isinstance(outcome, ProduceResult):
                        error, base = ErrorCode(outcome.error), outcome.base_offset
                    else:
                        error, base = outcome, -1
                    out.append(
                        make(
                            part_cls,
                            index=index,
                            error_code=error,
                            base_offset=base,
                            log_append_time=None,
                            log_start_offset=0 if error is ErrorCode.none else -1,
                            record_errors=(),
                            error_message=None,
                        )
                    )
                responses.append(make(topic_cls, name=name, partition_responses=tuple(out)))
            return make(cls, responses=tuple(responses), throttle_time=ZERO_TD)

        waiting = [o for _n, parts in outcomes for _i, o in parts if isinstance(o, asyncio.Future)]
        if acks == 0:
            failed = [
                f"{name}-{index}: {o}"
                for name, parts in outcomes
                for index, o in parts
                if not isinstance(o, (ProduceResult, asyncio.Future))
                or (isinstance(o, ProduceResult) and o.error)
            ]
            if failed:
                raise CloseConnection(f"produce_error: acks=0 produce failed ({', '.join(failed)})")
            return None
        if not waiting:
            return answer()

        async def later() -> Any:
            await asyncio.gather(*waiting)
            return answer()

        return later()

    def produce(self, ctx: RequestContext, req: Any) -> Any:
        if self.replicas is not None:
            return self._replicated_produce(ctx, req)
        cls = response_class(ApiKey.PRODUCE, ctx.api_version)
        topic_cls = nested(cls, "responses")
        part_cls = nested(topic_cls, "partition_responses")
        acks = req.acks
        responses = []
        for td in req.topic_data:
            parts = []
            for pd in td.partition_data:
                error, base, start = ErrorCode.none, -1, -1
                plog = self._log(td.name, pd.index)
                if acks not in (0, 1, -1):
                    error = ErrorCode.invalid_required_acks
                elif plog is None:
                    error = self._missing(td.name)
                elif isinstance(batches := self._produce_batches(td.name, pd), ErrorCode):
                    error = batches
                else:
                    base = plog.append(batches)
                    start = plog.log_start_offset
                parts.append(
                    make(
                        part_cls,
                        index=pd.index,
                        error_code=error,
                        base_offset=base,
                        log_append_time=None,
                        log_start_offset=start,
                        record_errors=(),
                        error_message=None,
                    )
                )
            responses.append(make(topic_cls, name=td.name, partition_responses=tuple(parts)))
        if acks == 0:
            failed = [
                f"{td.name}-{p.index}: {p.error_code.name}"
                for td in responses
                for p in td.partition_responses
                if p.error_code is not ErrorCode.none
            ]
            if failed:
                # KafkaApis.handleProduceRequest: no response to carry the error, so close the connection.
                raise CloseConnection(f"produce_error: acks=0 produce failed ({', '.join(failed)})")
            return None
        return make(cls, responses=tuple(responses), throttle_time=ZERO_TD)

    def fetch(self, ctx: RequestContext, req: Any) -> Any:
        cls = response_class(ApiKey.FETCH, ctx.api_version)
        if ctx.api_version >= 7 and (req.session_id != 0 or req.session_epoch not in (0, -1)):
            error = (
                ErrorCode.fetch_session_id_not_found
                if req.session_id != 0
                else ErrorCode.invalid_fetch_session_epoch
            )
            return make(cls, throttle_time=ZERO_TD, error_code=error, session_id=0, responses=())
        wait_ms = min(max(_ms(req.max_wait), 0), MAX_FETCH_WAIT_MS)
        response, nbytes, any_error, logs = self._fetch_once(ctx, req, cls)
        if nbytes >= req.min_bytes or wait_ms == 0 or any_error or not logs:
            return response
        return self._fetch_later(ctx, req, cls, wait_ms, logs)

    async def _fetch_later(
        self, ctx: RequestContext, req: Any, cls: type, wait_ms: int, logs: list[PartitionLog]
    ) -> Any:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + wait_ms / 1000.0
        while True:
            fut: asyncio.Future[None] = loop.create_future()
            for plog in logs:
                self.waiters.add(plog, fut)
            try:
                await asyncio.wait((fut,), timeout=max(0.0, deadline - loop.time()))
            finally:
                for plog in logs:
                    self.waiters.discard(plog, fut)
            response, nbytes, any_error, logs = self._fetch_once(ctx, req, cls)
            if nbytes >= req.min_bytes or any_error or not logs or loop.time() >= deadline:
                return response

    def _fetch_once(
        self, ctx: RequestContext, req: Any, cls: type
    ) -> tuple[Any, int, bool, list[PartitionLog]]:
        """One pass over the requested partitions: (response, bytes, any error, logs read)."""
        topic_cls = nested(cls, "responses")
        part_cls = nested(topic_cls, "partitions")
        budget = req.max_bytes if req.max_bytes > 0 else 0
        total = 0
        any_error = False
        logs: list[PartitionLog] = []
        read_committed = req.isolation_level == 1
        responses = []
        replica_id = getattr(req, "replica_id", -1)
        for rt in req.topics:
            topic = self.store.get(rt.topic)
            parts = []
            for rp in rt.partitions:
                plog = topic.partition(rp.partition) if topic is not None else None
                records = b""
                if self.replicas is not None:
                    fr = self.replicas.read(
                        rt.topic,
                        rp.partition,
                        rp.fetch_offset,
                        min(rp.partition_max_bytes, budget),
                        replica_id,
                        getattr(rp, "current_leader_epoch", -1),
                    )
                    error = ErrorCode(fr.error)
                    if error is ErrorCode.not_leader_or_follower:
                        error = self._replicated_missing(rt.topic)
                    hw, start, records = fr.high_watermark, fr.log_start_offset, fr.records
                    if fr.log is not None:
                        logs.append(fr.log)
                    budget -= len(records)
                    total += len(records)
                elif plog is None:
                    error, hw, start = self._missing(rt.topic), -1, -1
                else:
                    error, hw, start = ErrorCode.none, plog.end_offset, plog.log_start_offset
                    try:
                        if budget > 0:
                            records = plog.read(rp.fetch_offset, min(rp.partition_max_bytes, budget))
                        elif not plog.log_start_offset <= rp.fetch_offset <= plog.end_offset:
                            raise OffsetOutOfRange(rp.fetch_offset)
                    except OffsetOutOfRange:
                        error = ErrorCode.offset_out_of_range
                    logs.append(plog)
                    budget -= len(records)
                    total += len(records)
                any_error = any_error or error is not ErrorCode.none
                parts.append(
                    make(
                        part_cls,
                        partition_index=rp.partition,
                        error_code=error,
                        high_watermark=hw,
                        last_stable_offset=hw,
                        log_start_offset=start,
                        aborted_transactions=() if read_committed else None,
                        preferred_read_replica=-1,
                        records=records,
                    )
                )
            responses.append(make(topic_cls, topic=rt.topic, partitions=tuple(parts)))
        response = make(
            cls, throttle_time=ZERO_TD, error_code=ErrorCode.none, session_id=0, responses=tuple(responses)
        )
        return response, total, any_error, logs

    def list_offsets(self, ctx: RequestContext, req: Any) -> Any:
        cls = response_class(ApiKey.LIST_OFFSETS, ctx.api_version)
        topic_cls = nested(cls, "topics")
        part_cls = nested(topic_cls, "partitions")
        topics = []
        for rt in req.topics:
            topic = self.store.get(rt.name)
            parts = []
            for rp in rt.partitions:
                plog = topic.partition(rp.partition_index) if topic is not None else None
                error, ts, offset = ErrorCode.none, -1, -1
                if self.replicas is not None:
                    code, plog = self.replicas.list_offset(
                        rt.name, rp.partition_index, getattr(rp, "current_leader_epoch", -1)
                    )
                    if code == 6:
                        error = self._replicated_missing(rt.name)
                    elif code != 0:
                        error = ErrorCode(code)
                if error is not ErrorCode.none:
                    pass
                elif plog is None:
                    error = self._missing(rt.name)
                elif rp.timestamp == -1:
                    offset = plog.hw
                elif rp.timestamp == -2:
                    offset = plog.log_start_offset
                elif rp.timestamp == -3:
                    found = plog.max_timestamp()
                    if found is not None:
                        ts, offset = found
                elif rp.timestamp < 0:
                    error = ErrorCode.invalid_request
                else:
                    found = plog.offset_for_timestamp(rp.timestamp)
                    if found is not None:
                        ts, offset = found
                replicated = self.replicas is not None and plog is not None
                if replicated and rp.timestamp not in (-1, -2) and plog is not None and offset >= plog.hw:
                    ts, offset = -1, -1  # replicated: only committed records are found (below the HW)
                parts.append(
                    make(
                        part_cls,
                        partition_index=rp.partition_index,
                        error_code=error,
                        timestamp=ts,
                        offset=offset,
                        leader_epoch=0 if plog is not None else -1,
                    )
                )
            topics.append(make(topic_cls, name=rt.name, partitions=tuple(parts)))
        return make(cls, throttle_time=ZERO_TD, topics=tuple(topics))

    def init_producer_id(self, ctx: RequestContext, req: Any) -> Any:
        cls = response_class(ApiKey.INIT_PRODUCER_ID, ctx.api_version)
        if req.transactional_id is not None:
            return make(
                cls,
                throttle_time=ZERO_TD,
                error_code=ErrorCode.transactional_id_authorization_failed,
                producer_id=-1,
                producer_epoch=-1,
            )
        pid = getattr(req, "producer_id", -1)
        epoch = getattr(req, "producer_epoch", -1)
        if pid >= 0 and 0 <= epoch < 32766:
            return make(
                cls,
                throttle_time=ZERO_TD,
                error_code=ErrorCode.none,
                producer_id=pid,
                producer_epoch=epoch + 1,
            )
        return make(
            cls,
            throttle_time=ZERO_TD,
            error_code=ErrorCode.none,
            producer_id=self.next_producer_id(),
            producer_epoch=0,
        )

    def next_producer_id(self) -> int:
        """A producer id no earlier run and no other broker handed out.

        ``(microseconds since the epoch, strictly increasing) << 8 | broker_id & 0xff``: a
        restarted broker cannot reissue an id whose sequence numbers its logs remember (which
        would make a new producer's first batches look like duplicates and drop them).
        """
        self._pid_time = max(self._pid_time + 1, time.time_ns() // 1000)
        return (self._pid_time << 8) | (self.config.broker_id & 0xFF)
